"""`darshan-parser` and `darshan-dxt-parser` text dumps as a Darshan input.

Many sites archive these dumps instead of the binary logs, and they are the only
way to read logs that the installed pydarshan cannot (newer or development
module versions, logs it opens as empty). A dump becomes the same
:class:`~advisor.profile.JobProfile` the pydarshan path builds: same counter
names, same record ids, names, mounts, Lustre layouts and DXT arrays.

The reader streams: the file (plain or gzip) is read in blocks of whole lines,
comment lines drive a small state machine, and runs of data lines are handed
over in bulk (counter lines to :mod:`advisor.ingest.dump_counters`, DXT segment
lines to :mod:`advisor.ingest.dxt_dump`, which converts them with numpy).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from advisor.errors import InputError
from advisor.ingest import InputFormat, register
from advisor.ingest.darshan_log import not_read
from advisor.ingest.dump_counters import CounterTables, ParserSections, SectionReader
from advisor.ingest.dxt_dump import DumpFormatError, DxtAccumulator
from advisor.profile import DxtTrace, JobInfo, JobProfile, ModuleInfo, MountPoint, Provenance

READER = "ioadvisor darshan-parser dump reader 1"
BLOCK_BYTES = 4 << 20
MAX_LINE = 16 << 20
SNIFF_LIMIT = 1 << 20  # bytes of (decompressed) text the sniffer may look at
# darshan-parser text gzips about 10:1 (13:1 for a million DXT segments); a file that unpacks
# to 100 times its size past the first 64 MiB is a decompression bomb, not a dump.
MAX_EXPANSION = 100
EXPANSION_FREE = 64 << 20
VERSION_LINE = "# darshan log version: "

_GZIP_MAGIC = b"\x1f\x8b"
_BLANK_RUN = re.compile(rb"[\r\n]+")
_BANNER_RE = re.compile(r"^# (\S+) module data\s*$")
_REGION_RE = re.compile(r"^# (\S+) module: (\d+) bytes \(compressed\), ver=(-?\d+)")
_UNKNOWN_REGION_RE = re.compile(r"^# <UNKNOWN> module \(id (\d+)\): (\d+) bytes")
_PARTIAL_RE = re.compile(r"^# \*(WARNING|ERROR)\*: The (\S+) module contains incomplete data!")
_SKIPPED_RE = re.compile(r"^# Warning: no log utility handlers defined for module (\S+), SKIPPING")
_DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
# "# key: value" lines of the job header -> JobInfo attribute and type
_JOB_FIELDS = {"exe": ("exe", str), "uid": ("uid", int), "jobid": ("jobid", str),
               "start_time": ("start_time", float), "end_time": ("end_time", float),
               "nprocs": ("nprocs", int), "run time": ("runtime_s", float)}
# Modules whose records darshan-parser (3.x) always prints when the log has them:
# a listed one without its section means the dump was cut.
_PRINTED_MODULES = {"POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q",
                    "LUSTRE", "STDIO", "MDHIM", "HEATMAP", "DFS", "DAOS"}


DXT_PARTIAL_NOTE = "partial: Darshan's DXT buffer filled up, later operations were not traced"


# -- opening and sniffing ----------------------------------------------------------
def _open(path: Path) -> BinaryIO:
    fh = open(path, "rb")  # noqa: SIM115 -- returned open: the caller reads and closes it
    if fh.read(2) == _GZIP_MAGIC:
        fh.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    fh.seek(0)
    return fh


def _text_head(path: Path, head: bytes, limit: int) -> str:
    """Up to `limit` bytes of the dump text, decompressed when gzipped; '' if unreadable."""
    try:
        if head[:2] == _GZIP_MAGIC or len(head) < limit:
            with _open(path) as fh:
                head = fh.read(limit)
    except (OSError, EOFError, zlib.error):
        return ""
    return head.decode("utf-8", "backslashreplace")


def dump_kind(path: Path, head: bytes) -> str | None:
    """``"parser"``, ``"dxt"`` or None: what kind of dump `path` is.

    Both dumps open with the same job header; darshan-parser then prints its
    column description, darshan-dxt-parser its DXT blocks (or nothing at all).
    """
    text = _text_head(path, head, 64 << 10)
    at = text.find(VERSION_LINE)
    if at < 0 or (at > 0 and text[at - 1] != "\n") or at > 16 << 10:
        return None
    if "\n# description of columns:" in text or "\n#<module>\t" in text:
        return "parser"
    if "\n# DXT, file_id: " in text or "\n# DXT_POSIX module data" in text or "\n# DXT_MPIIO module data" in text:
        return "dxt"
    if "\n# mounted file systems" not in text or len(text) >= 64 << 10:
        text = _text_head(path, head, SNIFF_LIMIT)
        if "\n# description of columns:" in text or "\n#<module>\t" in text:
            return "parser"
    if "\n# mounted file systems" in text and "\n#<module>" not in text:
        return "dxt"  # a header alone: darshan-dxt-parser on a log without DXT data
    return "parser"


def _text_limit(size: int) -> int:
    """Bytes of text a dump of `size` bytes on disk may unpack to."""
    return max(EXPANSION_FREE, MAX_EXPANSION * size)


def _bomb(size: int, unpacked: str) -> DumpFormatError:
    return DumpFormatError(f"unpacks to {unpacked} from {size} bytes (more than {MAX_EXPANSION} times "
                           "its size): a decompression bomb, not a dump")


def _check_gzip_claim(path: Path, size: int) -> None:
    """Refuse a gzipped dump whose trailer claims more text than a dump of its size unpacks to,
    before a byte is decompressed. The claim (ISIZE, the size modulo 4 GiB of the last member)
    can understate, never overstate a real dump: `_lines` still counts what it reads."""
    with open(path, "rb") as fh:
        if fh.read(2) != _GZIP_MAGIC or size < 18:  # 10-byte header, 8-byte trailer
            return
        fh.seek(size - 4)
        claimed = int.from_bytes(fh.read(4), "little")
    if claimed > _text_limit(size):
        raise _bomb(size, f"{claimed >> 20:,} MiB by its gzip trailer")


def _lines(fh: BinaryIO, size: int) -> Iterator[bytes]:
    """Blocks of whole lines of a file of `size` bytes on disk; DumpFormatError when the file
    ends inside a line or unpacks to far more text than a dump compresses from."""
    rest, total = b"", 0
    limit = _text_limit(size)
    while data := fh.read(BLOCK_BYTES):
        total += len(data)
        if total > limit:
            raise _bomb(size, f"over {limit >> 20} MiB")
        data = rest + data
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        if len(rest) > MAX_LINE:
            raise DumpFormatError(f"a line longer than {MAX_LINE >> 20} MiB: not a darshan-parser dump")
        if cut:
            yield data[:cut]
    if rest.strip():
        raise DumpFormatError("the dump is truncated (its last line is cut off)")


# -- the dump reader ------------------------------------------------------------------
class DumpReader:
    """State machine over the comment lines of one dump (or of dumps concatenated)."""

    def __init__(self, path: Path):
        self.path = path
        self.job = JobInfo()
        self.log_version = ""
        self.headers = 0  # job headers seen (a parser and a DXT dump may be concatenated)
        self.regions: dict[str, tuple[int, int]] = {}  # module -> (compressed bytes, version)
        self.mounts: list[MountPoint] = []
        self.partial: set[str] = set()
        self.refused: set[str] = set()  # modules darshan-parser stopped at (partial, no --show-incomplete)
        self.banners: list[str] = []  # module sections in order
        self.notes: list[str] = []
        self.no_module_data = False
        self.saw_columns = False  # darshan-parser's "description of columns" (dxt-parser has none)
        self.tables = CounterTables()
        self.sections = SectionReader()
        self.dxt = DxtAccumulator()
        self.state = "start"
        self.module = ""
        self.jobs: list[dict[str, str]] = []  # the job fields of each header

    # .. driving ..
    def feed(self, block: bytes) -> None:
        pos, end = 0, len(block)
        while pos < end:
            c = block[pos]
            if c == 0x0A or c == 0x0D:
                pos = _BLANK_RUN.match(block, pos).end()  # blank lines at once: one by one took minutes
            elif c == 0x23:  # '#'
                eol = block.find(b"\n", pos)
                eol = end if eol < 0 else eol
                self.comment(block[pos:eol].decode("utf-8", "backslashreplace").rstrip("\r"))
                pos = eol + 1
            else:
                stop = block.find(b"\n#", pos)
                stop = end if stop < 0 else stop + 1
                self.data(block[pos:stop])
                pos = stop

    def comment(self, line: str) -> None:
        if not line:
            return
        if line.startswith(VERSION_LINE):
            self._new_header(line[len(VERSION_LINE):].strip())
        elif self.state == "dxt" and self.dxt.header_line(line):
            pass
        elif m := _BANNER_RE.match(line):
            self._banner(m[1])
        elif m := _PARTIAL_RE.match(line):
            self.partial.add(m[2])
            if m[1] == "ERROR":
                self.refused.add(m[2])
        elif self.state == "header":
            self._header_line(line)
        elif self.state == "regions":
            self._region_line(line)
        elif line.startswith("# mount entry:"):
            self._mount_line(line)
        elif line.startswith("# description of columns"):
            self.saw_columns = True
        elif line.startswith(("# no module data available", "# no DXT module data available")):
            self.no_module_data = True
        elif m := _SKIPPED_RE.match(line):
            self.notes.append(f"darshan-parser skipped module {m[1]} (no handler in its build)")
        elif self.state in ("counters", "section") and self.sections.comment(self.module, line):
            self.state = "section"

    def data(self, run: bytes) -> None:
        if self.state == "dxt":
            self.dxt.add_run(run)
        elif self.state == "counters" or self.state == "section":
            text = run.decode("utf-8", "backslashreplace")
            if self.state == "section" or text.startswith("total_"):
                rest = self.sections.data(self.module, text)
                if rest:
                    self.tables.add(rest)
            else:
                self.tables.add(text)
        elif self.headers == 0:
            pass  # stderr noise printed before the dump (e.g. version warnings)
        else:
            line = run.split(b"\n", 1)[0][:100].decode("utf-8", "backslashreplace").strip()
            if line.startswith(("Error:", "Warning:")):
                self.notes.append(f"darshan-parser said: {line}")
            elif line:
                raise DumpFormatError(f"unexpected line before any module section: {line!r}")

    # .. comment line kinds ..
    def _new_header(self, version: str) -> None:
        if not version.startswith("3."):
            raise DumpFormatError(
                f"darshan-parser output of a Darshan {version or '?'} log: ioadvisor reads the output "
                f"of Darshan 3.x logs only (pre-3.0 dumps have CP_* counters with other meanings)")
        if self.headers:
            self.dxt.end_block()
        self.headers += 1
        self.log_version = self.log_version or version
        self.state = "header"
        self.jobs.append({})

    def _header_line(self, line: str) -> None:
        key, _, value = line[2:].partition(": ")  # values kept verbatim (exe may end in a space)
        if key in _JOB_FIELDS:
            self.jobs[-1][key] = value
            if self.headers == 1:  # a concatenated second dump repeats the same job
                attr, convert = _JOB_FIELDS[key]
                try:
                    setattr(self.job, attr, convert(value))
                except ValueError:
                    raise DumpFormatError(f"malformed header line {line[:100]!r}") from None
        elif key == "metadata" and self.headers == 1:
            k, _, v = value.partition(" = ")
            self.job.metadata[k] = v
        elif line.startswith("# log file regions"):
            self.state = "regions"
        elif line.startswith("# mounted file systems"):
            self.state = "mounts"

    def _region_line(self, line: str) -> None:
        if m := _REGION_RE.match(line):
            self.regions[m[1]] = (int(m[2]), int(m[3]))
        elif m := _UNKNOWN_REGION_RE.match(line):
            self.notes.append(f"log has module id {m[1]} ({m[2]} bytes) that darshan-parser does not know")
        elif line.startswith("# mounted file systems"):
            self.state = "mounts"

    def _mount_line(self, line: str) -> None:
        if self.headers > 1:
            return
        fields = line[len("# mount entry:"):].strip("\t ").split("\t")
        if len(fields) >= 2:
            self.mounts.append(MountPoint(path=fields[-2], fstype=fields[-1]))

    def _banner(self, module: str) -> None:
        self.dxt.end_block()
        self.module = module
        if self.headers == 1 or module not in self.banners:
            self.banners.append(module)
        self.sections.reset()
        if module in _DXT_MODULES:
            self.state = "dxt"
            self.dxt.begin_module(module)
        else:
            self.state = "counters"

    # .. result ..
    def finish(self) -> JobProfile:
        """The profile; InputError-worthy problems raise DumpFormatError with the reason."""
        self.dxt.end_block(at_eof=True)
        if self.headers == 0:
            raise DumpFormatError("no darshan-parser job header ('# darshan log version: ...')")
        self._check_same_job()
        self.tables.check_complete()
        self._check_sections()
        skipped = {m: self.tables.drop(m) for m in list(self.tables.tables) if not_read(m)}
        records = self.tables.records()
        profile = JobProfile(
            source=Provenance(path=str(self.path), format=self._format_name(), parser=READER,
                              log_version=self.log_version, notes=self.notes),
            job=self.job, mounts=self.mounts, names={**self.dxt.names, **self.tables.names},
            records=records, lustre=self.tables.lustre_layouts())
        self.job.library_version = self.job.metadata.get("lib_ver", "")
        self._fill_modules(profile, skipped)
        profile.dxt = self._dxt_traces()
        if self.sections.by_module:
            profile.extras["parser_sections"] = self.sections.by_module
        if self.dxt.lustre:
            profile.extras["dxt_lustre"] = self.dxt.lustre
        self._check_not_empty(profile)
        return profile

    def _format_name(self) -> str:
        has_dxt = any(b in _DXT_MODULES for b in self.banners)
        if self.saw_columns or any(b not in _DXT_MODULES for b in self.banners):
            return "darshan-parser+dxt" if has_dxt else "darshan-parser"
        return "darshan-dxt-parser"

    def _check_same_job(self) -> None:
        first = {k: self.jobs[0].get(k) for k in ("jobid", "exe", "start_time")}
        for other in self.jobs[1:]:
            if {k: other.get(k) for k in first} != first:
                raise DumpFormatError(f"concatenated dumps of different jobs "
                                      f"(jobid {first['jobid']} and {other.get('jobid')})")

    def _check_sections(self) -> None:
        """Refused partial modules, and listed modules without their section (a cut dump)."""
        for module in sorted(self.refused):
            tool, what = ("darshan-dxt-parser", "segments") if module in _DXT_MODULES else ("darshan-parser", "records")
            raise DumpFormatError(
                f"{tool} stopped at the {module} module, whose data is incomplete (partial log): "
                f"the dump has no {what}; re-run {tool} with --show-incomplete")
        if self.banners and self.banners[-1] in _DXT_MODULES:
            last = self.banners[-1]
            if self.regions.get(last, (0, 0))[0] > 0 and not self.dxt.blocks(last):
                raise DumpFormatError(self._ends_after(last, "darshan-dxt-parser"))
        if self._format_name() == "darshan-dxt-parser":
            return
        missing = [m for m, (size, _) in self.regions.items()
                   if m in _PRINTED_MODULES and (size > 0 or m in self.partial) and m not in self.banners]
        counter_banners = [b for b in self.banners if b not in _DXT_MODULES]
        if counter_banners and not self.tables.has_module(counter_banners[-1]) \
                and self.regions.get(counter_banners[-1], (0, 0))[0] > 0 and missing:
            raise DumpFormatError(self._ends_after(counter_banners[-1], "darshan-parser"))
        if missing:
            raise DumpFormatError(f"the dump is truncated: no data section for module(s) {', '.join(missing)}")

    @staticmethod
    def _ends_after(module: str, tool: str) -> str:
        return (f"the dump ends right after the {module} module banner: {tool} stops there when the "
                f"module's data is incomplete (re-run it with --show-incomplete), or the dump was truncated")

    def _fill_modules(self, profile: JobProfile, skipped: dict[str, int]) -> None:
        kind = self._format_name()
        for module, (size, version) in self.regions.items():
            if kind == "darshan-dxt-parser" and module not in _DXT_MODULES:
                continue  # counters are in the darshan-parser dump, not this one
            info = ModuleInfo(name=module, version=version, partial=module in self.partial)
            recs = profile.records.get(module)
            info.records = len(recs) if recs is not None else self.dxt.blocks(module)
            if module in _DXT_MODULES and module not in self.dxt.modules:
                info.note = "DXT segments are not in darshan-parser output; load the darshan-dxt-parser dump"
            elif (why := not_read(module)) is not None:
                info.supported, info.note, info.records = False, why, skipped.get(module, 0)
            elif module not in self.banners and size > 0:
                info.supported = False
                info.note = "darshan-parser printed no records for this module"
            profile.modules[module] = info
        for module, recs in profile.records.items():
            profile.modules.setdefault(module, ModuleInfo(name=module, records=len(recs),
                                                          partial=module in self.partial))

    def _dxt_traces(self) -> dict[str, DxtTrace]:
        traces = self.dxt.traces()
        for module, trace in traces.items():
            if module in self.partial:
                trace.note = DXT_PARTIAL_NOTE
        for module in _DXT_MODULES:
            if module in self.regions and module not in traces:
                traces[module] = DxtTrace.empty(module, readable=False, note=(
                    "DXT segments are not in darshan-parser output; load the darshan-dxt-parser dump"))
        return traces

    def _check_not_empty(self, profile: JobProfile) -> None:
        if profile.records or any(len(t) for t in profile.dxt.values()) or any(
                not m.supported for m in profile.modules.values()):
            return
        if self._format_name() == "darshan-dxt-parser" and self.regions:
            self.notes.append("the log has no DXT trace data (darshan-dxt-parser printed no segments)")
            return  # legitimately empty of segments: the counters are in the darshan-parser dump
        if self.job.nprocs <= 0:
            raise DumpFormatError("the log behind this dump is silently empty (0 processes, no records): "
                                  "Darshan recorded nothing usable for this job")
        raise DumpFormatError(f"empty log: job metadata only ({self.job.nprocs} processes, exe "
                              f"{self.job.exe or 'unknown'!r}), no Darshan module recorded any I/O")


def load_dump(path: Path) -> JobProfile:
    """Read a darshan-parser or darshan-dxt-parser dump (plain or gzipped) into a JobProfile."""
    reader = DumpReader(path)
    try:
        size = path.stat().st_size
        _check_gzip_claim(path, size)
        with _open(path) as fh:
            for block in _lines(fh, size):
                reader.feed(block)
        return reader.finish()
    except DumpFormatError as exc:
        raise InputError(str(path), str(exc)) from None
    except EOFError:
        raise InputError(str(path), "truncated gzip file (the compressed stream ends early)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(str(path), f"corrupt gzip file ({exc})") from None
    except MemoryError:
        raise InputError(str(path), "dump too large for the available memory") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from None


def _sniff_parser(path: Path, head: bytes) -> bool:
    return dump_kind(path, head) == "parser"


def _sniff_dxt(path: Path, head: bytes) -> bool:
    return dump_kind(path, head) == "dxt"


register(InputFormat("darshan-parser", _sniff_parser, load_dump))
register(InputFormat("darshan-dxt-parser", _sniff_dxt, load_dump))

__all__ = ["load_dump", "dump_kind", "ParserSections", "DumpReader"]
