"""The section-table reader `gpulint run` asks before the exec (gpulint/dynamic/elf.py): ELF files
written here field by field (both classes, both byte orders, extended numbering, a NOBITS debug
section, truncation), and real binaries against the DWARF reader's answer."""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from gpulint.dynamic.elf import has_line_table, section_sizes
from gpulint.dynamic.symbols import has_host_lines

SHT_PROGBITS, SHT_STRTAB, SHT_NOBITS = 1, 3, 8


def elf_file(sections: list[tuple[str, int, int]], wide: bool = True, order: str = "<",
             extended: bool = False) -> bytes:
    """An ELF file with a null section, `sections` (name, type, size) and a name table last;
    `extended`: the count and the name table's index stored in section 0, as for > 65279 sections."""
    names = b"\0"
    offsets = []
    for name, _, _ in [*sections, (".shstrtab", 0, 0)]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    header_size = 64 if wide else 52
    entry = struct.Struct(order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII"))
    names_at = header_size
    table_at = names_at + len(names)
    count = len(sections) + 2
    names_index = count - 1
    first = (0, 0, 0, 0, 0, count if extended else 0, names_index if extended else 0, 0, 0, 0)
    rows = [first]
    for (_, kind, size), offset in zip(sections, offsets):
        rows.append((offset, kind, 0, 0, 0, size, 0, 0, 1, 0))
    rows.append((offsets[-1], SHT_STRTAB, 0, 0, names_at, len(names), 0, 0, 1, 0))
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if order == "<" else 2, 1]) + bytes(9)
    fields = (2, 62, 1, 0, 0, table_at, 0, header_size, 0, 0, entry.size,
              0 if extended else count, 0xFFFF if extended else names_index)
    header = ident + struct.pack(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"), *fields)
    assert len(header) == header_size
    return header + names + b"".join(entry.pack(*row) for row in rows)


@pytest.mark.parametrize("wide", [True, False], ids=["elf64", "elf32"])
@pytest.mark.parametrize("order", ["<", ">"], ids=["little", "big"])
@pytest.mark.parametrize("extended", [False, True], ids=["count", "extended"])
def test_sections_of_written_files(tmp_path: Path, wide: bool, order: str, extended: bool) -> None:
    path = tmp_path / "app"
    path.write_bytes(elf_file([(".text", SHT_PROGBITS, 100), (".debug_line", SHT_PROGBITS, 42)], wide, order,
                              extended))
    assert section_sizes(str(path)) == {".text": 100, ".debug_line": 42, ".shstrtab": 29}
    assert has_line_table(str(path)) is True


@pytest.mark.parametrize("sections, expected", [
    ([(".text", SHT_PROGBITS, 100)], False),  # built without -g
    ([(".debug_line", SHT_PROGBITS, 0)], False),  # an empty table has no rows
    ([(".debug_line", SHT_NOBITS, 4096)], False),  # the rows live in a separate debug file
    ([(".zdebug_line", SHT_PROGBITS, 300)], True),  # GNU's compressed form
])
def test_which_sections_count_as_a_line_table(tmp_path: Path, sections: list, expected: bool) -> None:
    path = tmp_path / "app"
    path.write_bytes(elf_file(sections))
    assert has_line_table(str(path)) is expected


def test_not_elf_truncated_or_missing_is_unknown(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexec ./app\n")
    cut = tmp_path / "cut"
    cut.write_bytes(elf_file([(".debug_line", SHT_PROGBITS, 42)])[:-20])  # the section table ends early
    for path in (script, cut, tmp_path / "missing", tmp_path):
        assert section_sizes(str(path)) is None and has_line_table(str(path)) is None


def test_real_binaries_agree_with_the_line_table_reader(tmp_path: Path) -> None:
    """Where there are rows, the section is there; where there is no section, there are no rows."""
    binaries = [sys.executable, shutil.which("true"), shutil.which("sh")]
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is not None:
        (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
        for flags in (["-O2"], ["-O0", "-g"]):
            out = tmp_path / f"m{''.join(flags)}"
            if subprocess.run([cc, *flags, "-o", str(out), str(tmp_path / "m.c")], capture_output=True).returncode == 0:
                binaries.append(str(out))
    for binary in filter(None, binaries):
        assert has_line_table(binary) == has_host_lines(binary), binary
