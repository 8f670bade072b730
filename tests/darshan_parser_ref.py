"""Reference `darshan-parser` / `darshan-dxt-parser` output for any Darshan 3.x log.

No darshan-util programs can be installed here (Debian does not package Darshan;
PyPI's `darshan` wheel ships only libdarshan-util). But darshan-parser is a thin
``main`` around that library: every record line comes from the module's
``mod_logutils[i]->log_print_record`` (DXT blocks from ``dxt_log_print_*_file``),
and ``--total/--file/--perf`` from the library's accumulator. This script calls
those same functions of the library pydarshan loads, and prints the job header,
region list and mount table with the format strings of darshan-parser.c (3.5.0),
so the dump reader can be checked against every log of the corpus, including
LUSTRE records and log versions that the corpus has no real dumps of.

    python tests/darshan_parser_ref.py LOG [--dxt] [--all] [--show-incomplete] > DUMP
    python tests/darshan_parser_ref.py --batch OUT_DIR LOG...   # OUT_DIR/<i>.{parser,dxt}.txt

Writes to file descriptor 1 through C stdio only, so library and header output
stay in order.
"""

from __future__ import annotations

import ctypes
import sys
import time

from advisor.ingest.darshan_lib import open_log

DXT = ("DXT_POSIX", "DXT_MPIIO")
# darshan_mod_logutil_funcs: get_record, put_record, print_record, print_description, ...
_PRINT_RECORD, _PRINT_DESCRIPTION = 2, 3
_TOTALS = {"POSIX": "posix", "MPI-IO": "mpiio", "STDIO": "stdio", "DFS": "dfs", "DAOS": "daos"}
_CATEGORIES = ("total", "read_only", "write_only", "read_write", "unique", "shared")
# darshan_file_category: ALL, RO, WO, RW, UNIQ, SHARED, PART_SHARED
_CATEGORY_INDEX = {"total": 0, "read_only": 1, "write_only": 2, "read_write": 3, "unique": 4}


_COLUMNS = """
# description of columns:
#   <module>: module responsible for this I/O record.
#   <rank>: MPI rank.  -1 indicates that the file is shared
#      across all processes and statistics are aggregated.
#   <record id>: hash of the record's file path
#   <counter name> and <counter value>: statistical counters.
#      A value of -1 indicates that Darshan could not monitor
#      that counter, and its value should be ignored.
#   <file name>: full file path for the record.
#   <mount pt>: mount point that the file resides on.
#   <fs type>: type of file system that the file resides on.
"""


class Printer:
    """C-level access to libdarshan-util's print functions and stdout."""

    def __init__(self, log) -> None:
        self.log, self.ffi, self.lib = log, log.ffi, log.lib
        self.libc = ctypes.CDLL(None)
        self.util = ctypes.CDLL(self._library_path())
        self.table = (ctypes.c_void_p * 64).in_dll(self.util, "mod_logutils")

    def _library_path(self) -> str:
        import glob
        import os

        import darshan

        libs = os.path.join(os.path.dirname(os.path.dirname(darshan.__file__)), "darshan.libs")
        return sorted(glob.glob(os.path.join(libs, "libdarshan-util*")))[0]

    def out(self, text: str) -> None:
        self.libc.printf(b"%s", text.encode("utf-8", "surrogateescape"))

    def flush(self) -> None:
        self.libc.fflush(None)

    def _func(self, idx: int, slot: int, proto):
        funcs = self.table[idx]
        if not funcs:
            return None
        ptr = ctypes.c_void_p.from_address(funcs + slot * ctypes.sizeof(ctypes.c_void_p)).value
        return proto(ptr) if ptr else None

    def description(self, idx: int, ver: int) -> None:
        fn = self._func(idx, _PRINT_DESCRIPTION, ctypes.CFUNCTYPE(None, ctypes.c_int))
        if fn:
            fn(ver)
            self.out("\n#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>\n")

    def record(self, idx: int, buf, name: bytes | None, mnt: bytes, fs: bytes) -> None:
        fn = self._func(idx, _PRINT_RECORD, ctypes.CFUNCTYPE(
            None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p))
        fn(int(self.ffi.cast("uintptr_t", buf)), name, mnt, fs)

    def dxt(self, module: str, buf, name: bytes | None, mnt: bytes, fs: bytes, lustre_ref) -> None:
        if module == "DXT_POSIX":
            fn = self.util.dxt_log_print_posix_file
            fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
            fn(int(self.ffi.cast("uintptr_t", buf)), name, mnt, fs, lustre_ref)
        else:
            fn = self.util.dxt_log_print_mpiio_file
            fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
            fn(int(self.ffi.cast("uintptr_t", buf)), name, mnt, fs)


def header(p: Printer, modules: dict, dxt: bool) -> list[tuple[bytes, bytes]]:
    """The job header, log regions and mount table; returns the mounts (path, type)."""
    log = p.log
    job, runtime = log.job()
    j = job[0]
    out = [f"# darshan log version: {log.format_version}\n", "# compression method: ZLIB\n",
           f"# exe: {log.exe()}\n", f"# uid: {j.uid}\n", f"# jobid: {j.jobid}\n",
           f"# start_time: {j.start_time_sec}\n", f"# start_time_asci: {time.ctime(j.start_time_sec)}\n",
           f"# end_time: {j.end_time_sec}\n", f"# end_time_asci: {time.ctime(j.end_time_sec)}\n",
           f"# nprocs: {j.nprocs}\n", f"# run time: {runtime:.4f}\n"]
    for line in p.ffi.string(j.metadata).decode("utf-8", "surrogateescape").split("\n"):
        key, sep, value = line.partition("=")
        if sep:
            out.append(f"# metadata: {key} = {value}\n")
    out += ["\n# log file regions\n", "# -------------------------------------------------------\n",
            "# header: 1328 bytes (uncompressed)\n"]
    for name, m in sorted(modules.items(), key=lambda kv: kv[1]["idx"]):
        if m["len"] or (m["partial"] and not dxt):
            out.append(f"# {name} module: {m['len']} bytes (compressed), ver={m['ver']}\n")
    out += ["\n# mounted file systems (mount point and fs type)\n",
            "# -------------------------------------------------------\n"]
    mounts = [(path.encode(), fstype.encode()) for path, fstype in log.mounts()]
    out += [f"# mount entry:\t{a.decode()}\t{b.decode()}\n" for a, b in mounts]
    p.out("".join(out))
    return mounts


def banner(p: Printer, name: str, m: dict, stars: int, show_incomplete: bool) -> bool:
    """The module banner and partial-data warning; False where the real tool stops."""
    p.out(f"\n# {'*' * stars}\n# {name} module data\n# {'*' * stars}\n")
    if not m["partial"]:
        return True
    if not show_incomplete:
        p.flush()
        sys.stderr.write(f"\n# *ERROR*: The {name} module contains incomplete data!\n")
        return False
    p.out(f"\n# *WARNING*: The {name} module contains incomplete data!\n"
          "#            This happens when a module runs out of\n"
          "#            memory to store new record data.\n")
    return True


def _where(name: bytes | None, mounts) -> tuple[bytes, bytes]:
    for path, fstype in mounts:  # first prefix match, as darshan-parser does
        if name is not None and name.startswith(path):
            return path, fstype
    return b"UNKNOWN", b"UNKNOWN"


def _records(log, idx: int):
    buf = log.ffi.new("void **")
    while True:
        buf[0] = log.ffi.NULL
        if log.lib.darshan_log_get_record(log.handle, idx, buf) < 1:
            return
        yield buf[0]


def _names(log) -> dict[int, bytes]:
    nrecs, cnt = log.ffi.new("struct darshan_name_record **"), log.ffi.new("int *")
    log.lib.darshan_log_get_name_records(log.handle, nrecs, cnt)
    return {int(nrecs[0][i].id): log.ffi.string(nrecs[0][i].name) for i in range(cnt[0])}


def parser(p: Printer, all_sections: bool, show_incomplete: bool) -> int:
    log = p.log
    modules = log.modules()
    mounts = header(p, modules, dxt=False)
    names = _names(log)
    p.out(_COLUMNS)
    nprocs = int(log.job()[0][0].nprocs)
    for name, m in sorted(modules.items(), key=lambda kv: kv[1]["idx"]):
        if (m["len"] == 0 and not m["partial"]) or name in DXT:
            continue
        if not banner(p, name, m, 55, show_incomplete):
            return 255
        if m["len"] == 0:
            continue
        p.description(m["idx"], m["ver"])
        acc = _accumulator(p, m["idx"], nprocs) if all_sections else None
        for buf in _records(log, m["idx"]):
            rid = int(log.ffi.cast("struct darshan_base_record *", buf).id)
            rname = names.get(rid)
            p.record(m["idx"], buf, rname, *_where(rname, mounts))
            if acc is not None:
                log.lib.darshan_accumulator_inject(acc, buf, 1)
            log.lib.darshan_free(buf)
        if acc is not None and name in _TOTALS:
            _sections(p, name, m, acc)
        if acc is not None:
            log.lib.darshan_accumulator_destroy(acc)
    return 0


def _accumulator(p: Printer, idx: int, nprocs: int):
    acc = p.ffi.new("darshan_accumulator *")
    return acc[0] if p.lib.darshan_accumulator_create(idx, nprocs, acc) == 0 else None


def _sections(p: Printer, module: str, m: dict, acc) -> None:
    """--total, --file and --perf output, from the library's accumulator."""
    ffi, lib = p.ffi, p.lib
    metrics = ffi.new("struct darshan_derived_metrics *")
    agg = ffi.new("char[]", 1 << 16)
    lib.darshan_accumulator_emit(acc, metrics, agg)
    p.description(m["idx"], m["ver"])  # darshan-parser prints the description again
    prefix = _TOTALS[module]
    out = ["\n"]
    for kind, fmt in (("counter", "{}"), ("f_counter", "{:f}")):
        names = _cnames(ffi, lib, f"{prefix}_{'f_' if kind == 'f_counter' else ''}counter_names")
        struct = ffi.cast(backend_struct(module), agg)
        values = struct.fcounters if kind == "f_counter" else struct.counters
        out += [f"total_{n}: {fmt.format(values[i])}\n" for i, n in enumerate(names)]
    cc = metrics.category_counters
    out.append("\n# Total file counts\n# -----\n\n# <file_type> <file_count> <total_bytes> <max_byte_offset>\n")
    for cat in _CATEGORIES:
        if cat == "shared":
            files = cc[5].count + cc[6].count
            moved = sum(cc[k].total_read_volume_bytes + cc[k].total_write_volume_bytes for k in (5, 6))
            top = cc[5].max_offset_bytes + cc[6].max_offset_bytes
        else:
            c = cc[_CATEGORY_INDEX[cat]]
            files, moved, top = c.count, c.total_read_volume_bytes + c.total_write_volume_bytes, c.max_offset_bytes
        out.append(f"# {cat}: {files} {moved} {top}\n")
    out += ["\n# performance\n# -----------\n", f"# total_bytes: {metrics.total_bytes}\n", "#\n",
            f"# unique files: slowest_rank_io_time: {metrics.unique_io_total_time_by_slowest:f}\n",
            f"# unique files: slowest_rank_meta_only_time: {metrics.unique_md_only_time_by_slowest:f}\n",
            f"# unique files: slowest_rank_rw_only_time: {metrics.unique_rw_only_time_by_slowest:f}\n",
            f"# unique files: slowest_rank: {metrics.unique_io_slowest_rank}\n", "#\n",
            f"# shared files: time_by_slowest: {metrics.shared_io_total_time_by_slowest:f}\n", "#\n",
            f"# agg_time_by_slowest: {metrics.agg_time_by_slowest:f} # seconds\n",
            f"# agg_perf_by_slowest: {metrics.agg_perf_by_slowest:f} # MiB/s\n"]
    p.out("".join(out))


def backend_struct(module: str) -> str:
    from darshan.backend.cffi_backend import _structdefs

    return _structdefs[module].replace("**", "*")


def _cnames(ffi, lib, symbol: str) -> list[str]:
    arr = getattr(lib, symbol)
    out = []
    for i in range(1024):
        name = ffi.string(arr[i]).decode()
        if name.endswith("_NUM_INDICES"):
            return out
        out.append(name)
    return out


def dxt_parser(p: Printer, show_incomplete: bool) -> int:
    log = p.log
    modules = log.modules()
    mounts = header(p, modules, dxt=True)
    if not any(modules.get(m, {}).get("len") for m in DXT):
        p.out("\n# no DXT module data available for this Darshan log.\n")
        return 0
    names = _names(log)
    lustre = _lustre_refs(log, modules)
    for name in DXT:
        m = modules.get(name)
        if not m or not m["len"]:
            continue
        if not banner(p, name, m, 51, show_incomplete):
            return 255
        for buf in _records(log, m["idx"]):
            rid = int(log.ffi.cast("struct darshan_base_record *", buf).id)
            rname = names.get(rid)
            ref = lustre.get(rid)
            p.dxt(name, buf, rname, *_where(rname, mounts), ctypes.addressof(ref) if ref else None)
            log.lib.darshan_free(buf)
    return 0


def _lustre_refs(log, modules: dict) -> dict:
    """Record id -> a lustre_record_ref {rec, hlink} whose first field points at the record."""
    m = modules.get("LUSTRE")
    refs: dict[int, ctypes.Array] = {}
    if not m or not m["len"]:
        return refs
    for buf in _records(log, m["idx"]):  # kept alive (not freed) for the DXT printer
        rid = int(log.ffi.cast("struct darshan_base_record *", buf).id)
        ref = (ctypes.c_void_p * 16)()
        ref[0] = int(log.ffi.cast("uintptr_t", buf))
        refs.setdefault(rid, ref)
    return refs


def dump(path: str, dxt: bool, all_sections: bool = False, show_incomplete: bool = False) -> int:
    """Print the dump of the log at `path` on file descriptor 1; the exit status darshan-parser gives."""
    with open_log(path) as log:
        p = Printer(log)
        try:
            return dxt_parser(p, show_incomplete) if dxt else parser(p, all_sections, show_incomplete)
        finally:
            p.flush()


def batch(out_dir: str, logs: list[str]) -> None:
    """For log number i: out_dir/i.parser.txt (--all --show-incomplete) and out_dir/i.dxt.txt."""
    import os

    saved = os.dup(1)
    for i, log in enumerate(logs):
        for kind in ("parser", "dxt"):
            fd = os.open(os.path.join(out_dir, f"{i}.{kind}.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.close(fd)
            try:
                dump(log, kind == "dxt", all_sections=True, show_incomplete=True)
            except Exception as exc:  # the test sees the missing/short dump and the reason here
                sys.stderr.write(f"{log}: {kind}: {exc}\n")
            finally:
                ctypes.CDLL(None).fflush(None)
                os.dup2(saved, 1)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--batch"]:
        batch(argv[1], argv[2:])
        return 0
    return dump(argv[0], "--dxt" in argv, "--all" in argv, "--show-incomplete" in argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
