"""Hand-built Recorder 2.5 traces, written with the format's own encoding (docs/ingest.md), for
the call families the shared traces do not hold. The function table is Recorder 2.5's own
(tests/data/recorder25_functions.txt, from include/recorder-logger.h at uiuc-hpc/Recorder
c1c3dcbf, PMPI_ written MPI_ as in a trace's recorder.mt), so function ids and layers are those
a real trace has."""

from __future__ import annotations

import struct
from pathlib import Path

FUNCTIONS = tuple((Path(__file__).parent / "data" / "recorder25_functions.txt").read_text().split())
TICK = 1e-7  # Recorder's default time resolution


def write_trace(folder: Path, ranks: list[list[tuple]], functions: tuple[str, ...] = FUNCTIONS) -> Path:
    """A trace folder of `ranks`, each a list of calls (function, depth, args, start s, end s);
    a function given as an int is that raw function id."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "VERSION").write_text("2.5.0\n")
    head = struct.pack("<i4xddiii4x", len(ranks), 1.7e9, TICK, 1 << 20, 0, 0)
    (folder / "recorder.mt").write_bytes(head + "".join(f"{name}\n" for name in functions).encode())
    for rank, calls in enumerate(ranks):
        signatures: dict[bytes, int] = {}
        terminals, deltas, previous = [], [], 0
        for func, depth, args, start, end in calls:
            fid = func if isinstance(func, int) else functions.index(func)
            text = "".join(f"{a} " for a in args).encode()
            key = struct.pack("<QBBBi", 0, fid, depth, len(args), len(text)) + text
            terminals.append(signatures.setdefault(key, len(signatures)))
            s, e = round(start / TICK), round(end / TICK)
            deltas += [s - previous, e - previous]
            previous = s
        cfg = [1, -1, len(terminals)] + [x for t in terminals for x in (t, 1)]
        (folder / f"{rank}.cfg").write_bytes(struct.pack(f"<{len(cfg)}i", *cfg))
        cst = struct.pack("<i", len(signatures)) + b"".join(
            struct.pack("<iiii", t, rank, len(key), 1) + key for key, t in signatures.items())
        (folder / f"{rank}.cst").write_bytes(cst)
        (folder / f"{rank}.ts").write_bytes(struct.pack(f"<{len(deltas)}I", *deltas))
    return folder
