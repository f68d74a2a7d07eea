"""Host stacks from the native collector, resolved offline: each frame is [module, offset, symbol]
as `dladdr` saw it; DWARF (pyelftools) turns it into one frame per source function — the line
tables give the innermost file and line, and `DW_TAG_inlined_subroutine` entries give the call
sites of the functions inlined there, outermost last.

Three things an optimised build gets wrong if ignored, each measured on nvcc 13.0 binaries:

* Line tables are sequences, each closed by an `end_sequence` row.  An address after the last
  sequence (the static cudart that nvcc links in, which has no line table, sits under every
  `cudaMalloc` frame) belongs to no row, never to the user's last one.
* At `-O2` and above the C++ `cudaMalloc<T>` template is inlined into the caller: its address
  lies in the caller, the line table says `cuda_runtime.h`, and only the inline entry says which
  user line made the call.
* Without `-g` (or with `-lineinfo` alone, which is device-side only) there is no host line
  table: frames keep their module and the function symbol (`dladdr`'s, else `.symtab`'s), and
  line 0, which callers show as "no line", never as a neighbour's line.
"""
from __future__ import annotations

import bisect
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# The tags that can hold a function body with inlined calls in it.
_SCOPES = frozenset({"DW_TAG_subprogram", "DW_TAG_inlined_subroutine", "DW_TAG_lexical_block", "DW_TAG_namespace",
                     "DW_TAG_compile_unit", "DW_TAG_partial_unit"})


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass
class _Scope:
    """A function body or an inlined call in one compile unit: its address ranges, nesting depth,
    name, and (for an inlined call) the file and line of the call."""

    ranges: list[tuple[int, int]]
    depth: int
    name: str
    call: tuple[str, int] | None = None


@dataclass
class _Unit:
    scopes: list[_Scope] = field(default_factory=list)


class Module:
    """What one ELF file tells about its addresses: line rows, inline call chains, symbols."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.addresses: list[int] = []
        self._ends: list[int] = []
        self.rows: list[tuple[str, int] | None] = []  # row i covers [addresses[i], _ends[i])
        self.load_base = 0
        self.exec_type = False
        self.symbols: list[tuple[int, int, str]] = []  # (start, end, name), sorted
        self._symbol_starts: list[int] = []
        self._handle = None
        self._dwarf = None
        self._aranges = None
        self._units: dict[int, _Unit] = {}
        try:
            from elftools.elf.elffile import ELFFile
        except ImportError:
            return
        try:
            handle = open(path, "rb")
        except OSError:
            return
        try:
            elf = ELFFile(handle)
            self.exec_type = elf.header["e_type"] == "ET_EXEC"
            loads = [seg["p_vaddr"] for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
            self.load_base = (min(loads) & ~0xFFF) if loads else 0
            self._read_symbols(elf)
            if elf.has_dwarf_info():
                self._dwarf = elf.get_dwarf_info()
                self._read_lines(self._dwarf)
                self._handle = handle  # inline information is read lazily, per compile unit
                return
        except Exception:  # noqa: BLE001 - a module we cannot parse gives no lines, never an error
            self.addresses, self._ends, self.rows, self._dwarf = [], [], [], None
        handle.close()

    @property
    def has_lines(self) -> bool:
        return bool(self.addresses)

    def address(self, offset: int) -> int:
        """The link-time address of a return address `offset` bytes into the loaded module,
        moved back into the call instruction."""
        return (self.load_base + offset if self.exec_type else offset) - 1

    # -- line tables -------------------------------------------------------------------------
    def _file_name(self, header, index: int) -> str | None:
        files, dirs, version = header["file_entry"], header["include_directory"], header["version"]
        index = index if version >= 5 else index - 1
        if not 0 <= index < len(files):
            return None
        item = files[index]
        name = _text(item.name)
        dir_index = item.dir_index if version >= 5 else item.dir_index - 1
        if not Path(name).is_absolute() and 0 <= dir_index < len(dirs):
            name = str(Path(_text(dirs[dir_index])) / name)
        return name

    def _read_lines(self, dwarf) -> None:
        # Each row covers [its address, the next row's address) within its sequence; the
        # sequence's end row closes the last one.  Rows of no width (several rows at one
        # address, a sequence of one row) cover nothing.
        spans: list[tuple[int, int, tuple[str, int] | None]] = []
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                continue
            names: dict[int, str | None] = {}
            sequence: list[tuple[int, tuple[str, int] | None]] = []
            for entry in program.get_entries():
                state = entry.state
                if state is None:
                    continue
                if state.end_sequence:
                    # A sequence at address 0 is a function the linker dropped (its COMDAT copy
                    # lost): keep none of it, it would shadow whatever really lives there.
                    if sequence and sequence[0][0] != 0:
                        ends = [a for a, _ in sequence[1:]] + [state.address]
                        spans.extend((a, b, row) for (a, row), b in zip(sequence, ends) if b > a)
                    sequence = []
                    continue
                if state.file not in names:
                    names[state.file] = self._file_name(program.header, state.file)
                name = names[state.file]
                sequence.append((state.address, (name, state.line) if name else None))
        spans.sort(key=lambda s: s[0])
        self.addresses = [s[0] for s in spans]
        self._ends = [s[1] for s in spans]
        self.rows = [s[2] for s in spans]

    def line(self, address: int) -> tuple[str, int] | None:
        """The row whose range holds `address`; None outside every sequence."""
        i = bisect.bisect_right(self.addresses, address) - 1
        return self.rows[i] if i >= 0 and address < self._ends[i] else None

    # -- inline chains -----------------------------------------------------------------------
    def _unit_at(self, address: int):
        if self._dwarf is None:
            return None
        if self._aranges is None:
            try:
                self._aranges = self._dwarf.get_aranges() or False
            except Exception:  # noqa: BLE001
                self._aranges = False
        if self._aranges:
            offset = self._aranges.cu_offset_at_addr(address)
            if offset is not None:
                return self._dwarf.get_CU_at(offset)
            return None
        for cu in self._dwarf.iter_CUs():
            if any(lo <= address < hi for lo, hi in self._ranges(cu.get_top_DIE(), cu)):
                return cu
        return None

    def _ranges(self, die, cu) -> list[tuple[int, int]]:
        attrs = die.attributes
        if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
            low = attrs["DW_AT_low_pc"].value
            high = attrs["DW_AT_high_pc"]
            end = high.value if high.form == "DW_FORM_addr" else low + high.value
            return [(low, end)] if end > low else []
        if "DW_AT_ranges" not in attrs:
            return []
        top = cu.get_top_DIE().attributes
        base = top["DW_AT_low_pc"].value if "DW_AT_low_pc" in top else 0
        out = []
        for entry in self._dwarf.range_lists().get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
            if hasattr(entry, "base_address"):
                base = entry.base_address
            elif hasattr(entry, "begin_offset"):
                absolute = getattr(entry, "is_absolute", False)
                lo = entry.begin_offset if absolute else base + entry.begin_offset
                hi = entry.end_offset if absolute else base + entry.end_offset
                if hi > lo:
                    out.append((lo, hi))
        return out

    def _name(self, die) -> str:
        seen = 0
        while die is not None and seen < 8:
            attrs = die.attributes
            if "DW_AT_name" in attrs:
                return _text(attrs["DW_AT_name"].value)
            ref = next((k for k in ("DW_AT_abstract_origin", "DW_AT_specification") if k in attrs), None)
            die = die.get_DIE_from_attribute(ref) if ref else None
            seen += 1
        return ""

    def _unit(self, cu) -> _Unit:
        found = self._units.get(cu.cu_offset)
        if found is not None:
            return found
        unit = self._units[cu.cu_offset] = _Unit()
        program = self._dwarf.line_program_for_CU(cu)
        header = program.header if program is not None else None
        stack = [(cu.get_top_DIE(), 0)]
        while stack:
            die, depth = stack.pop()
            for child in die.iter_children():
                if child.tag not in _SCOPES:
                    continue
                if child.tag in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine"):
                    ranges = self._ranges(child, cu)
                    if not ranges:
                        continue  # a declaration, or code the linker dropped
                    call = None
                    attrs = child.attributes
                    if child.tag == "DW_TAG_inlined_subroutine" and header is not None and "DW_AT_call_file" in attrs:
                        name = self._file_name(header, attrs["DW_AT_call_file"].value)
                        line = attrs["DW_AT_call_line"].value if "DW_AT_call_line" in attrs else 0
                        call = (name, line) if name else None
                    unit.scopes.append(_Scope(ranges, depth + 1, self._name(child), call))
                    stack.append((child, depth + 1))
                else:
                    stack.append((child, depth))
        return unit

    def chain(self, address: int) -> list[_Scope]:
        """The functions whose code holds `address`, outermost first."""
        try:
            cu = self._unit_at(address)
            if cu is None:
                return []
            scopes = [s for s in self._unit(cu).scopes if any(lo <= address < hi for lo, hi in s.ranges)]
        except Exception:  # noqa: BLE001 - broken inline information: the line row alone
            return []
        return sorted(scopes, key=lambda s: s.depth)

    # -- symbols -----------------------------------------------------------------------------
    def _read_symbols(self, elf) -> None:
        found = []
        for name in (".symtab", ".dynsym"):
            section = elf.get_section_by_name(name)
            if section is None:
                continue
            for sym in section.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"] and sym["st_size"] and sym.name:
                    found.append((sym["st_value"], sym["st_value"] + sym["st_size"], sym.name))
            if found:
                break
        found.sort()
        self.symbols = found
        self._symbol_starts = [s for s, _, _ in found]

    def symbol(self, address: int) -> str:
        i = bisect.bisect_right(self._symbol_starts, address) - 1
        if i >= 0 and self.symbols[i][0] <= address < self.symbols[i][1]:
            return demangle(self.symbols[i][2])
        return ""

    def frames(self, offset: int, symbol: str) -> list[list]:
        """One return address -> [file, line, function] frames, innermost first; [module, 0,
        symbol] when the module has no line for it."""
        address = self.address(offset)
        row = self.line(address) if self.addresses else None
        if row is None:
            return [[self.path, 0, symbol or self.symbol(address)]]
        scopes = self.chain(address)
        if not scopes:
            return [[row[0], row[1], symbol or self.symbol(address)]]
        out = [[row[0], row[1], scopes[-1].name]]
        for inner, outer in zip(reversed(scopes), reversed(scopes[:-1])):
            if inner.call is None:
                break
            out.append([inner.call[0], inner.call[1], outer.name])
        return out


@lru_cache(maxsize=4096)
def _demangled(name: str) -> str:
    tool = shutil.which("c++filt")
    if tool is None:
        return name
    try:
        done = subprocess.run([tool, name], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return name
    return done.stdout.strip() or name


def demangle(name: str) -> str:
    """A C++ symbol as people read it (binutils' c++filt where installed)."""
    return _demangled(name) if name.startswith("_Z") else name


@lru_cache(maxsize=64)
def module(path: str) -> Module:
    return Module(path)


def resolve_frames(frame: list) -> list[list]:
    """[module, "0x..", symbol] -> [file, line, function] frames (more than one where calls were
    inlined), or [module, 0, symbol] where the module has no line for it."""
    if not isinstance(frame, list) or len(frame) < 2 or not isinstance(frame[1], str) or not frame[1].startswith("0x"):
        return [frame]
    try:
        offset = int(frame[1], 16)
    except ValueError:
        return [frame]
    symbol = str(frame[2]) if len(frame) > 2 and frame[2] else ""
    return module(str(frame[0])).frames(offset, symbol)


def reader_missing() -> bool:
    """Whether pyelftools, which reads native programs' line tables, cannot be imported (an
    install that skipped gpulint's dependencies): every native finding then names no line."""
    try:
        import elftools.elf.elffile  # noqa: F401
    except ImportError:
        return True
    return False


def has_host_lines(path: str) -> bool | None:
    """Whether an ELF file has a host line table (None: not an ELF file we can read)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return None
    except OSError:
        return None
    return module(path).has_lines
