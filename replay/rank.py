"""One rank's execution of its slice of a plan: POSIX, STDIO and MPI-IO, as recorded.

The hot loops are tight on purpose: data ops come in runs (same file, op and
interface), each run is one Python loop over plain lists calling ``os.pwrite`` /
``os.preadv`` on views of one reused, page-aligned buffer, so the replay's own
overhead stays small next to the system call it measures.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import time
from pathlib import Path

import numpy as np

from replay.plan import (CLOSE, CREATE, FLAG_PAD, FSYNC, LINK, MKDIR, MPIIO, MPIIO_COLL, OPEN, POSIX, READ,
                         RECV, RENAME, RMDIR, SEND, STAT, STDIO, TRUNCATE, UNLINK, WRITE)
from replay.record import Record

BUFFER_CAP = 64 << 20  # larger POSIX/STDIO requests are issued as several calls of this size
DIRECT_ALIGN = 4096
FILE_MODE = 0o600


def cpu_wait_s() -> float | None:
    """The seconds this thread has spent runnable but waiting for a CPU (the kernel's
    ``run_delay`` in /proc/thread-self/schedstat), or None where the kernel keeps no schedstat."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def file_path(rundir: Path, dirs: np.ndarray, fid: int) -> str:
    """The scratch path of file `fid`: only ids, never a name from the trace."""
    return f"{rundir}/d{int(dirs[fid]):05d}/f{fid:07d}"


class Buffer:
    """A page-aligned buffer with cached views per request length."""

    def __init__(self, size: int, mpi_size: int = 0):
        # an MPI-IO call (a collective batch) needs its whole buffer in one piece
        self.size = max(DIRECT_ALIGN, min(size, BUFFER_CAP), mpi_size)
        self.mem = mmap.mmap(-1, self.size)
        self.mem.write(bytes(range(256)) * (self.size // 256))  # not zeros: some file systems compress
        self.mv = memoryview(self.mem)
        self.views: dict[int, memoryview] = {}

    def view(self, length: int) -> memoryview:
        v = self.views.get(length)
        if v is None:
            v = self.views[length] = self.mv[:min(length, self.size)]
        return v


_KIND = {POSIX: "posix", STDIO: "stdio", MPIIO: "mpi", MPIIO_COLL: "mpi"}


def _applied(fh, hints: dict[str, str]) -> dict[str, str]:
    """The values the MPI-IO library reports for the hints asked for (MPI_File_get_info): a hint it
    ignored is missing or has its own value."""
    info = fh.Get_info()
    try:
        return {k: info.Get(k) for k in hints if info.Get(k) is not None}
    finally:
        info.Free()


class RankRunner:
    """Executes one rank's ops of one plan in one run directory."""

    def __init__(self, comm, plan, rundir: Path, *, odirect: bool, think_time: bool,
                 buffer: Buffer, hints: dict[str, str]):
        self.comm, self.plan, self.rundir = comm, plan, rundir
        self.odirect, self.think_time, self.buf = odirect, think_time, buffer
        self.dirs = np.asarray(plan.files["dir"])
        self.hints = hints
        self.applied_hints: dict[str, str] | None = None  # what the first MPI-IO open got of `hints`
        self.handles: dict[int, list] = {}
        self.implicit: dict[tuple[int, str], tuple] = {}
        self.direct_fds: dict[int, int] = {}
        self.record = Record(plan.nfiles)
        self.cpu_wait: float | None = None  # seconds runnable but without a CPU in the last run

    # -- the run ------------------------------------------------------------------------
    def run(self, nphases: int) -> tuple[float, np.ndarray]:
        """Execute all phases (barrier between phases); returns (elapsed, seconds per phase)."""
        ops = {k: np.asarray(v) for k, v in self.plan.rank_ops(self.comm.rank).items()}
        starts, ends = self._runs(ops)
        self.record.add_sizes(ops)
        cols = {k: ops[k].tolist() for k in ("op", "file", "offset", "length", "api", "phase",
                                             "batch", "peer", "flags")}
        gaps = ops["gap"].tolist()
        phase_times = np.zeros(max(nphases, 1))
        self.comm.Barrier()
        wait0, t0 = cpu_wait_s(), time.perf_counter()
        r = 0
        for p in range(nphases):
            if p:
                self.comm.Barrier()
            tp = time.perf_counter()
            while r < len(starts) and cols["phase"][starts[r]] == p:
                s, e = starts[r], ends[r]
                if self.think_time and gaps[s] > 0:
                    time.sleep(gaps[s])
                self._run(cols, s, e)
                r += 1
            phase_times[p] = time.perf_counter() - tp
        self.close_all()
        self.comm.Barrier()
        took, wait1 = time.perf_counter() - t0, cpu_wait_s()
        # the time this rank could have run but other work held its CPU: a busy node's share
        self.cpu_wait = wait1 - wait0 if wait0 is not None and wait1 is not None else None
        return took, phase_times

    def _runs(self, ops: dict[str, np.ndarray]) -> tuple[list[int], list[int]]:
        """Split the op stream into runs executed by one loop each."""
        op, n = ops["op"], len(ops["op"])
        if n == 0:
            return [], []
        simple = np.isin(op, (READ, WRITE)) & (ops["batch"] < 0)
        same = np.ones(n - 1, bool)
        for k in ("op", "file", "api", "phase"):
            same &= ops[k][1:] == ops[k][:-1]
        cont = simple[1:] & simple[:-1] & same
        if self.odirect:
            aligned = (ops["offset"] % DIRECT_ALIGN == 0) & (ops["length"] % DIRECT_ALIGN == 0)
            cont &= aligned[1:] == aligned[:-1]
        b = ops["batch"]
        cont |= (b[1:] >= 0) & (b[1:] == b[:-1])
        if self.think_time:
            cont &= ops["gap"][1:] <= 0
        starts = np.flatnonzero(np.concatenate([[True], ~cont]))
        ends = np.append(starts[1:], n)
        return starts.tolist(), ends.tolist()

    def _run(self, c: dict[str, list], s: int, e: int) -> None:
        code, fid, api = c["op"][s], c["file"][s], c["api"][s]
        if code in (READ, WRITE):
            if c["batch"][s] >= 0:
                self._mpi_batch(code, fid, c["offset"][s:e], c["length"][s:e], c["flags"][s:e])
            elif api == POSIX:
                self._posix(code, fid, c["offset"][s:e], c["length"][s:e])
            elif api == STDIO:
                self._stdio(code, fid, c["offset"][s:e], c["length"][s:e])
            else:
                self._mpi(code, fid, c["offset"][s:e], c["length"][s:e], api == MPIIO_COLL, c["flags"][s])
        elif code in (OPEN, CREATE):
            self._open(fid, api)
        elif code == CLOSE:
            self._close(fid)
        elif code == FSYNC:
            self._fsync(fid, api)
        elif code == STAT:
            self._stat(fid)
        elif code == UNLINK:
            self._unlink(fid)
        elif code in (MKDIR, RMDIR):
            self._directory(code, fid)
        elif code in (RENAME, LINK, TRUNCATE):
            self._name(code, fid, c["peer"][s], c["length"][s])
        elif code in (SEND, RECV):
            self._message(code, fid, c["peer"][s], c["length"][s])
        if code not in (READ, WRITE, SEND, RECV):
            self.record.add_meta(fid, code)

    # -- opening and closing ---------------------------------------------------------------
    def path(self, fid: int) -> str:
        return file_path(self.rundir, self.dirs, fid)

    def _open(self, fid: int, api: int) -> None:
        path = self.path(fid)
        if api == POSIX:
            handle = ("posix", os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE))
        elif api == STDIO:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            handle = ("stdio", os.fdopen(fd, "r+b"))
        else:
            from mpi4py import MPI

            comm = self.comm if api == MPIIO_COLL else MPI.COMM_SELF
            info = MPI.Info.Create()
            for k, v in self.hints.items():
                info.Set(k, str(v))
            fh = MPI.File.Open(comm, path, MPI.MODE_RDWR | MPI.MODE_CREATE, info)
            info.Free()
            if self.applied_hints is None:
                self.applied_hints = _applied(fh, self.hints)
            handle = ("mpi", fh)
        self.handles.setdefault(fid, []).append(handle)

    def _handle(self, fid: int, api: int = POSIX):
        """The innermost open handle of `fid` for this interface (a file may be open through
        POSIX and STDIO at once); ops outside any open (opened before tracing started) get an
        implicit handle that is not counted as an open."""
        want = _KIND[api]
        for handle in reversed(self.handles.get(fid, ())):
            if handle[0] == want or (want == "posix" and handle[0] == "stdio"):
                return handle if handle[0] == want else ("posix", handle[1].fileno())
        key = (fid, want)
        if key not in self.implicit:
            self._open(fid, MPIIO if api == MPIIO_COLL else api)
            self.implicit[key] = self.handles[fid].pop()
        return self.implicit[key]

    def _close(self, fid: int) -> None:
        stack = self.handles.get(fid)
        if not stack:
            return
        kind, h = stack.pop()
        if kind == "posix":
            os.close(h)
        else:
            h.close() if kind == "stdio" else h.Close()
        if not stack:
            fd = self.direct_fds.pop(fid, None)
            if fd is not None:
                os.close(fd)

    def close_all(self) -> None:
        """Close what the plan left open (in file order, so collective closes match)."""
        for fid in sorted(self.handles):
            while self.handles[fid]:
                self._close(fid)
        for (fid, _), handle in sorted(self.implicit.items()):
            self.handles[fid] = [handle]
            self._close(fid)
        self.handles.clear()
        self.implicit.clear()

    # -- metadata ---------------------------------------------------------------------------
    def _fsync(self, fid: int, api: int) -> None:
        kind, h = self._handle(fid, api)
        if kind == "posix":
            os.fsync(h)
        elif kind == "stdio":
            h.flush()  # STDIO's counted syncs are fflush calls: user buffer to the kernel only
        else:
            h.Sync()

    def _stat(self, fid: int) -> None:
        # a stat of a file the job had not created yet is still a metadata call
        with contextlib.suppress(FileNotFoundError):
            os.stat(self.path(fid))

    def _unlink(self, fid: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(fid))

    def _directory(self, code: int, fid: int) -> None:
        """mkdir or rmdir as the source called it; the replay's files are not placed inside
        (they live in their own neutral directories), so an rmdir finds its directory empty."""
        path = self.path(fid)
        if code == MKDIR:
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(path)

    def _name(self, code: int, fid: int, new: int, length: int) -> None:
        """rename, link or truncate as the source called it; what the source's file system
        refused (a missing file, an existing name) is refused here too, silently."""
        with contextlib.suppress(FileNotFoundError, FileExistsError):
            if code == RENAME:
                os.rename(self.path(fid), self.path(new))
            elif code == LINK:
                os.link(self.path(fid), self.path(new))
            else:
                os.truncate(self.path(fid), length)

    # -- data -------------------------------------------------------------------------------
    def _posix(self, code: int, fid: int, offs: list[int], lens: list[int]) -> None:
        fd = self._handle(fid, POSIX)[1]
        if self.odirect and offs[0] % DIRECT_ALIGN == 0 and lens[0] % DIRECT_ALIGN == 0:
            fd = self._direct_fd(fid)
            self.record.add(fid, "direct_ops", len(offs))
        view, cap, total = self.buf.view, self.buf.size, 0
        if code == WRITE:
            pwrite = os.pwrite
            for off, ln in zip(offs, lens):
                n = pwrite(fd, view(ln), off)
                if n != ln:
                    n = self._rest(fd, code, off, ln, n, cap)
                total += n
            self.record.add(fid, "writes", len(offs))
            self.record.add(fid, "bytes_written", total)
        else:
            preadv = os.preadv
            for off, ln in zip(offs, lens):
                n = preadv(fd, (view(ln),), off)
                if n != ln:
                    n = self._rest(fd, code, off, ln, n, cap)
                total += n
            self.record.add(fid, "reads", len(offs))
            self.record.add(fid, "bytes_read", total)

    def _rest(self, fd: int, code: int, off: int, ln: int, done: int, cap: int) -> int:
        """Finish a request that was larger than the buffer or came back short."""
        while done < ln:
            chunk = self.buf.view(min(cap, ln - done))
            n = os.pwrite(fd, chunk, off + done) if code == WRITE else os.preadv(fd, (chunk,), off + done)
            if n == 0:  # end of file on a read
                break
            done += n
        return done

    def _direct_fd(self, fid: int) -> int:
        fd = self.direct_fds.get(fid)
        if fd is None:
            fd = self.direct_fds[fid] = os.open(self.path(fid), os.O_RDWR | os.O_CREAT | os.O_DIRECT,
                                                FILE_MODE)
        return fd

    def _stdio(self, code: int, fid: int, offs: list[int], lens: list[int]) -> None:
        f = self._handle(fid, STDIO)[1]
        view, total = self.buf.view, 0
        pos = f.tell()
        for off, ln in zip(offs, lens):
            if pos != off:
                f.seek(off)
            n = (f.write(view(ln)) if code == WRITE else f.readinto(view(ln))) or 0
            pos = off + n
            total += n
        self.record.add(fid, "writes" if code == WRITE else "reads", len(offs))
        self.record.add(fid, "bytes_written" if code == WRITE else "bytes_read", total)

    def _mpi(self, code: int, fid: int, offs: list[int], lens: list[int], coll: bool, flags: int) -> None:
        from mpi4py import MPI

        fh = self._handle(fid, MPIIO)[1]
        call = (fh.Write_at_all if coll else fh.Write_at) if code == WRITE else fh.Read_at_all if coll else fh.Read_at
        status, view, total = MPI.Status(), self.buf.view, 0
        for off, ln in zip(offs, lens):
            call(off, [view(ln), ln, MPI.BYTE], status)
            total += status.Get_count(MPI.BYTE)
        self._count_mpi(fid, code, len(offs), total, coll, flags)

    def _mpi_batch(self, code: int, fid: int, offs: list[int], lens: list[int], flags: list[int]) -> None:
        """One collective call over several pieces, through a file view (what an app with a
        derived datatype does); padding pieces only keep the call count matched."""
        from mpi4py import MPI

        fh = self._handle(fid, MPIIO)[1]
        real = [i for i, f in enumerate(flags) if not f & FLAG_PAD]
        if len(real) != len(offs):
            offs, lens = [offs[i] for i in real], [lens[i] for i in real]
        total = sum(lens)
        ftype = MPI.BYTE.Create_hindexed(lens, offs).Commit() if total else MPI.BYTE
        fh.Set_view(0, MPI.BYTE, ftype)
        status = MPI.Status()
        buf = [self.buf.view(total), total, MPI.BYTE]
        (fh.Write_all if code == WRITE else fh.Read_all)(buf, status)
        fh.Set_view(0, MPI.BYTE, MPI.BYTE)
        if total:
            ftype.Free()
        self._count_mpi(fid, code, len(real), status.Get_count(MPI.BYTE), True,
                        0 if real else FLAG_PAD, calls=1)

    def _count_mpi(self, fid, code, nops, nbytes, coll, flags, calls=None) -> None:
        rec = self.record
        if flags & FLAG_PAD:
            rec.add(fid, "pad_calls", calls or 1)
            return
        rec.add(fid, "writes" if code == WRITE else "reads", nops)
        rec.add(fid, "bytes_written" if code == WRITE else "bytes_read", nbytes)
        if coll:
            rec.add(fid, "collective_calls", calls if calls is not None else nops)

    def _message(self, code: int, fid: int, peer: int, length: int) -> None:
        """Aggregation traffic: a non-aggregator ships its data to its aggregator."""
        from mpi4py import MPI

        buf = [self.buf.view(length), min(length, self.buf.size), MPI.BYTE]
        if code == SEND:
            self.comm.Send(buf, dest=peer, tag=fid % 32768)
            self.record.add(fid, "sends")
            self.record.add(fid, "bytes_sent", length)
        else:
            self.comm.Recv(buf, source=peer, tag=fid % 32768)
            self.record.add(fid, "recvs")
            self.record.add(fid, "bytes_received", length)
