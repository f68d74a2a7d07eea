"""Host stacks from the native collector, resolved offline: each frame is [module, offset, symbol]
as `dladdr` saw it; DWARF line tables (pyelftools) turn it into [file, line, function] for
modules built with `-g` or `-lineinfo`.  Frames without debug info keep the module and symbol
and line 0, so findings can still name the binary and the call."""
from __future__ import annotations

import bisect
from functools import lru_cache
from pathlib import Path


class LineTable:
    """Address -> (file, line) for one ELF file."""

    def __init__(self, path: str) -> None:
        self.addresses: list[int] = []
        self.rows: list[tuple[str, int]] = []
        self.load_base = 0
        self.exec_type = False
        try:
            from elftools.elf.elffile import ELFFile
        except ImportError:
            return
        try:
            with open(path, "rb") as handle:
                elf = ELFFile(handle)
                self.exec_type = elf.header["e_type"] == "ET_EXEC"
                loads = [seg["p_vaddr"] for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
                self.load_base = (min(loads) & ~0xFFF) if loads else 0
                if not elf.has_dwarf_info():
                    return
                self._read(elf.get_dwarf_info())
        except (OSError, ValueError, KeyError, Exception):  # a module we cannot parse: no lines
            self.addresses, self.rows = [], []

    def _read(self, dwarf) -> None:
        entries: list[tuple[int, str, int]] = []
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                continue
            header = program.header
            files = header["file_entry"]
            dirs = header["include_directory"]
            version = header["version"]
            for entry in program.get_entries():
                state = entry.state
                if state is None or state.end_sequence:
                    continue
                index = state.file if version >= 5 else state.file - 1
                if not 0 <= index < len(files):
                    continue
                item = files[index]
                name = item.name.decode(errors="replace") if isinstance(item.name, bytes) else str(item.name)
                dir_index = item.dir_index if version >= 5 else item.dir_index - 1
                if not Path(name).is_absolute() and 0 <= dir_index < len(dirs):
                    folder = dirs[dir_index]
                    folder = folder.decode(errors="replace") if isinstance(folder, bytes) else str(folder)
                    name = str(Path(folder) / name)
                entries.append((state.address, name, state.line))
        entries.sort()
        self.addresses = [a for a, _, _ in entries]
        self.rows = [(f, line) for _, f, line in entries]

    def lookup(self, offset: int) -> tuple[str, int] | None:
        """The source line of a return address `offset` bytes into the module."""
        if not self.addresses:
            return None
        address = (self.load_base + offset if self.exec_type else offset) - 1  # inside the call
        i = bisect.bisect_right(self.addresses, address) - 1
        return self.rows[i] if i >= 0 else None


@lru_cache(maxsize=256)
def table(path: str) -> LineTable:
    return LineTable(path)


def resolve_frame(frame: list) -> list:
    """[module, "0x..", symbol] -> [file, line, symbol] when the module has line info."""
    if not isinstance(frame, list) or len(frame) < 2 or not isinstance(frame[1], str) or not frame[1].startswith("0x"):
        return frame
    module, offset, symbol = frame[0], int(frame[1], 16), frame[2] if len(frame) > 2 else ""
    found = table(module).lookup(offset)
    if found is None:
        return [module, 0, symbol]
    return [found[0], found[1], symbol]
