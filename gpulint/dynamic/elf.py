"""What an ELF file's section table says, read with `struct` alone: the question `gpulint run` asks
about a program before it starts it (has it a host line table?).

`symbols.has_host_lines` answers that exactly, from the line table's rows, through pyelftools; for a
small nvcc-built program that costs ~0.1 s (the static cudart's tables included), and at the object
level it would be paid before every traced program starts.  The section table answers the part that
matters there: no `.debug_line` section means no rows, for certain.  A section that is present is
taken as lines; the rare one whose every sequence the linker dropped is left to `gpulint analyze`,
which warns from the rows.  Imports nothing beyond the standard library's `struct`.
"""
from __future__ import annotations

import struct

# The host line table's sections: DWARF's, and the old GNU compressed form.
LINE_SECTIONS = (".debug_line", ".zdebug_line")
_SHT_NOBITS = 8  # a section that takes no room in the file (its bytes live in a separate debug file)
_SHN_XINDEX = 0xFFFF  # the string table's index is too large for the header: it is in section 0
_MAX_SECTIONS = 1 << 16  # more than any real file; a corrupt count must not make us read gigabytes
_MAX_NAMES = 1 << 24


def line_warning(binary: str) -> str:
    """What `gpulint run` and `gpulint analyze` say of a program with no host line table."""
    return f"{binary}: built without -g: findings show function names only; rebuild with -g"


def section_sizes(path: str) -> dict[str, int] | None:
    """Each section's name and size in the file (0 for one that holds no bytes there); None for a
    file that is not ELF or cannot be read whole enough to say."""
    try:
        with open(path, "rb") as handle:
            return _sections(handle)
    except (OSError, struct.error, ValueError):
        return None


def has_line_table(path: str) -> bool | None:
    """Whether an ELF file has a non-empty host line-table section (None: not an ELF file we can read)."""
    sizes = section_sizes(path)
    if sizes is None:
        return None
    return any(sizes.get(name, 0) > 0 for name in LINE_SECTIONS)


def _sections(handle) -> dict[str, int] | None:
    ident = handle.read(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    wide = ident[4] == 2  # ELFCLASS64
    order = "<" if ident[5] == 1 else ">"
    # After e_ident: e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize,
    # e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx.
    header = struct.Struct(order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"))
    fields = header.unpack(_exactly(handle, header.size))
    shoff, entsize, count, names_index = fields[5], fields[10], fields[11], fields[12]
    # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link (the rest is not needed).
    entry = struct.Struct(order + ("IIQQQQI" if wide else "IIIIIII"))
    if shoff == 0 or entsize < entry.size:
        return {} if shoff == 0 else None
    handle.seek(shoff)
    first = entry.unpack(_exactly(handle, entry.size))
    if count == 0:  # extended numbering: the real count is section 0's size
        count = first[5]
    if names_index == _SHN_XINDEX:
        names_index = first[6]
    if not 0 < count <= _MAX_SECTIONS or not 0 <= names_index < count:
        return None
    handle.seek(shoff)
    table = _exactly(handle, entsize * count)
    headers = [entry.unpack_from(table, i * entsize) for i in range(count)]
    _, names_type, _, _, names_offset, names_size, _ = headers[names_index]
    if names_type == _SHT_NOBITS or names_size > _MAX_NAMES:
        return None
    handle.seek(names_offset)
    names = _exactly(handle, names_size)
    sizes: dict[str, int] = {}
    for name_offset, kind, _, _, _, size, _ in headers[1:]:  # section 0 is the null one (or holds the count)
        end = names.find(b"\0", name_offset)
        name = names[name_offset:end if end >= 0 else len(names)].decode("latin-1")
        sizes[name] = 0 if kind == _SHT_NOBITS else size
    return sizes


def _exactly(handle, size: int) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise ValueError("truncated ELF file")
    return data
