"""Darshan logs whose regions are bzip2-compressed or uncompressed, read through a zlib copy.

The libdarshan-util in PyPI's `darshan` wheel is built without bzip2, and production
logs of some centres are bzip2 (`darshan-convert --bzip2`, or a runtime so built); its
reader of uncompressed regions (3.5.0) loses its place past the first 1 MiB buffer of a
region. Such a log is rewritten into an anonymous temporary file: every region
(darshan_header) decompressed (bzip2: one or more concatenated streams, as
libdarshan-util reads them) and compressed again as one zlib stream; the header keeps
everything but `comp_type` and the regions' offsets and lengths. No record is parsed
here: libdarshan-util then reads the copy as it reads any zlib log.
"""

from __future__ import annotations

import bz2
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from advisor.errors import InputError
from advisor.ingest.darshan_header import (BZIP2, COMP_TYPE_AT, MAX_HEADER, NO_COMPRESSION, ZLIB, Region,
                                           comp_type, regions)

CHUNK = 1 << 20  # bytes read from the log, and given out by the decompressor, per step
# The corpus' logs, their regions bzip2-compressed, unpack to at most 70 times their size
# (APMPI counters of 64 ranks; 30 for a million DXT segments); a log whose regions unpack
# to 200 times its size past the first 64 MiB is a decompression bomb, not a log.
MAX_EXPANSION = 200
EXPANSION_FREE = 64 << 20
ZLIB_LEVEL = 1  # the copy is read once: speed over size


@dataclass
class _Budget:
    """Bytes the regions may still unpack to."""

    limit: int
    left: int

    def spend(self, n: int, path: str) -> None:
        self.left -= n
        if self.left < 0:
            raise InputError(path, f"its regions unpack to more than {self.limit >> 20} MiB (over "
                             f"{MAX_EXPANSION} times the log's size): a decompression bomb, not a Darshan log")


def _stored_chunks(fh: BinaryIO, region: Region) -> Iterator[bytes]:
    """The bytes of a region, as they are in the file."""
    fh.seek(region.off)
    left = region.length
    while left:
        data = fh.read(min(CHUNK, left))
        if not data:
            raise EOFError("the file ends inside it")
        left -= len(data)
        yield data


def _bz2_chunks(fh: BinaryIO, region: Region) -> Iterator[bytes]:
    """The decompressed bytes of a region of one or more concatenated bzip2 streams."""
    dec, fed = bz2.BZ2Decompressor(), False
    for data in _stored_chunks(fh, region):
        while data or not (dec.eof or dec.needs_input):
            if dec.eof:  # a stream ended and more data follows: the next stream
                dec, fed = bz2.BZ2Decompressor(), False
            fed = fed or bool(data)
            out = dec.decompress(data, CHUNK)
            data = dec.unused_data if dec.eof else b""
            yield out
    if fed and not dec.eof:
        raise EOFError("its last bzip2 stream is cut short")


_UNPACK = {BZIP2: _bz2_chunks, NO_COMPRESSION: _stored_chunks}


def _copy_region(src: BinaryIO, dst: BinaryIO, region: Region,
                 unpack: Callable[[BinaryIO, Region], Iterator[bytes]], budget: _Budget, path: str) -> int:
    """Write `region` of `src`, unpacked by `unpack`, to `dst` as one zlib stream; its length in the copy."""
    if region.length == 0:
        return 0
    comp, start = zlib.compressobj(ZLIB_LEVEL), dst.tell()
    try:
        for out in unpack(src, region):
            budget.spend(len(out), path)
            dst.write(comp.compress(out))
    except (OSError, EOFError, ValueError) as exc:
        reason = str(exc) if isinstance(exc, EOFError) else f"bzip2: {exc}"
        raise InputError(path, f"the {region.name} region ({region.length} bytes at offset {region.off}) "
                         f"does not decompress ({reason}): the log is damaged") from None
    dst.write(comp.flush())
    return dst.tell() - start


def rewrite_as_zlib(path: Path, dst: BinaryIO) -> None:
    """Write into `dst` the bzip2 or uncompressed log `path` with every region compressed as zlib."""
    with open(path, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        head = src.read(MAX_HEADER)
        lay, parts = regions(head, size, str(path))
        header = bytearray(head[:lay.size])
        header[COMP_TYPE_AT] = ZLIB
        limit = max(EXPANSION_FREE, MAX_EXPANSION * size)
        budget, unpack = _Budget(limit, limit), _UNPACK[comp_type(head)]
        dst.write(header)
        for region in parts:
            off = dst.tell()
            length = _copy_region(src, dst, region, unpack, budget, str(path))
            if region.slot is not None:
                struct.pack_into(f"{lay.order}qq", header, lay.maps_at + 16 * region.slot, off, length)
    dst.seek(0)
    dst.write(header)
    dst.flush()


@contextmanager
def zlib_copy(path: Path) -> Iterator[str]:
    """A path libdarshan-util can open, holding the log `path` with its regions as zlib.

    The copy is an anonymous temporary file (in TMPDIR, never beside the log, unlinked
    from the start) opened through /proc/self/fd: nothing is left behind, not even when
    the parsing child is killed at its time limit. Without /proc, a private temporary
    directory holds a named copy and is removed on the way out.
    """
    with tempfile.TemporaryFile(prefix="ioadvisor-", suffix=".darshan") as fh:
        rewrite_as_zlib(path, fh)
        by_fd = f"/proc/self/fd/{fh.fileno()}"
        if os.path.exists(by_fd):
            yield by_fd
            return
        with tempfile.TemporaryDirectory(prefix="ioadvisor-") as tmp:
            named = Path(tmp) / "log.darshan"
            fh.seek(0)
            with open(named, "wb") as out:
                while block := fh.read(CHUNK):
                    out.write(block)
            yield str(named)
