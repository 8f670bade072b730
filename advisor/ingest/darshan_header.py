"""The uncompressed header of a Darshan 3.x log: its compression and where its regions are.

Darshan compresses each region of a log (the job data, the name map, every module's
records) on its own, with the method the header's `comp_type` names. Layout
(darshan-log-format.h, darshan-logutils.c 3.5.0), in the byte order of the magic
number: char version[8]; int64 magic; uchar comp_type at byte 16; a partial-module
flag (uint64 at 24 from format 3.41, uint32 at 20 before); struct {int64 off, len}
name_map, then mod_map[64] (16 before 3.41); uint32 mod_ver[]. The job region starts
right after the header and ends where the name map starts (where the first mapped
module starts when there is no name map, else at the end of the file). Nothing here
reads a region's contents.
"""

from __future__ import annotations

import struct

from advisor.errors import InputError
from advisor.records import Frozen

DARSHAN_MAGIC = 6567223  # DARSHAN_MAGIC_NR at byte 8 of every 3.x log header
COMP_TYPE_AT = 16
ZLIB, BZIP2, NO_COMPRESSION = 0, 1, 2  # enum darshan_comp_type
COMPRESSION = {ZLIB: "zlib", BZIP2: "bzip2", NO_COMPRESSION: "none"}
MAX_HEADER = 1328  # format 3.41 and later

# Module ids of the header slots (DARSHAN_MODULE_IDS, format 3.41).
_MODULES = ("NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
            "LUSTRE", "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP",
            "DFS", "DAOS")
_H5D, _PNETCDF_VAR = 4, 6  # slots inserted at formats 3.20 and 3.41


class Layout(Frozen):
    """Where a log's header keeps the regions' offsets and lengths."""

    version: tuple[int, int]
    order: str  # struct byte order of the file: "<" or ">"
    maps_at: int  # offset of name_map; mod_map[i] follows at 16-byte steps
    modules: int  # mod_map slots
    size: int  # header bytes; the job region starts here

    def module_name(self, slot: int) -> str:
        """The module whose region mod_map[`slot`] maps (older logs' slots shift as libdarshan-util shifts them)."""
        idx = slot
        if self.version < (3, 20) and idx >= _H5D:
            idx += 1
        if self.version < (3, 41) and idx >= _PNETCDF_VAR:
            idx += 1
        return _MODULES[idx] if idx < len(_MODULES) else f"#{slot}"


class Region(Frozen):
    """One compressed region; `slot` is its (offset, length) entry in the header's maps
    (0 the name map, 1 + i module i, None the job region, which has no entry)."""

    name: str
    slot: int | None
    off: int
    length: int


def layout(head: bytes) -> Layout:
    """The header layout of the Darshan 3.x log starting with `head`."""
    major, minor = (int(x) for x in head[:8].rstrip(b"\0").split(b"."))
    order = "<" if struct.unpack_from("<q", head, 8)[0] == DARSHAN_MAGIC else ">"
    if (major, minor) >= (3, 41):
        return Layout((major, minor), order, maps_at=32, modules=64, size=32 + 16 * 65 + 4 * 64)
    return Layout((major, minor), order, maps_at=24, modules=16, size=24 + 16 * 17 + 4 * 16)


def comp_type(head: bytes) -> int:
    return head[COMP_TYPE_AT] if len(head) > COMP_TYPE_AT else ZLIB


def regions(head: bytes, file_size: int, path: str) -> tuple[Layout, list[Region]]:
    """The log's regions in the order a copy writes them (job, name map, modules by slot),
    which keeps libdarshan-util's rule for the job region's end; InputError when the header
    is cut short or maps a region outside the file."""
    lay = layout(head)
    if len(head) < lay.size or file_size < lay.size:
        raise InputError(path, f"the Darshan {lay.version[0]}.{lay.version[1]:02d} header is cut short "
                         f"({min(len(head), file_size)} of {lay.size} bytes): the log is truncated")
    maps = [struct.unpack_from(f"{lay.order}qq", head, lay.maps_at + 16 * i) for i in range(1 + lay.modules)]
    mapped = [Region("name map", 0, *maps[0])]
    mapped += [Region(f"{lay.module_name(i)} module", 1 + i, off, length)
               for i, (off, length) in enumerate(maps[1:]) if off or length]
    for r in mapped:
        inside = lay.size <= r.off and 0 <= r.length <= file_size - r.off
        if (r.off or r.length) and not inside:
            raise InputError(path, f"the header maps the {r.name} region to {r.length} bytes at offset "
                             f"{r.off}, outside the log's {file_size} bytes: the log is truncated or corrupt")
    first_module = next((r.off for r in mapped[1:] if r.off), file_size)
    job = Region("job", None, lay.size, (maps[0][0] or first_module) - lay.size)
    if job.length <= 0:
        raise InputError(path, "the header leaves no room for the job region: the log is corrupt")
    return lay, [job, *(r for r in mapped if r.off or r.length)]
