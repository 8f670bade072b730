"""Units of the Recorder reader on their own: the grammar's expansion (a hand-built grammar and
R1's real one), a call signature's plan, and the per-record counters of a real trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.ingest.recorder import grammar, heap, plans, records
from advisor.ingest.recorder.format import RecorderTrace
from tests.recorder_traces import recorder_dir, reference_text


def _cfg(rules: list[tuple[int, list[tuple[int, int]]]]) -> bytes:
    words = [len(rules)]
    for rule_id, symbols in rules:
        words += [rule_id, len(symbols)] + [x for pair in symbols for x in pair]
    return np.asarray(words, dtype="<i4").tobytes()


def test_a_grammar_expands_rules_and_repetitions_in_call_order():
    """Start rule -1 = (7 x2) (rule -2) (9); rule -2 = (3) (4 x3): 7 7 3 4 4 4 9."""
    g = grammar.parse(_cfg([(-1, [(7, 2), (-2, 1), (9, 1)]), (-2, [(3, 1), (4, 3)])]), Path("x.cfg"))
    (calls,) = grammar.expand([g], [7])
    assert calls.tolist() == [7, 7, 3, 4, 4, 4, 9]


@pytest.mark.parametrize("raw, why", [(b"\x01\x00", "truncated"),
                                      (_cfg([(-2, [(1, 1)])]), "no start rule")])
def test_a_damaged_grammar_is_refused_with_its_reason(raw: bytes, why: str):
    with pytest.raises(grammar.GrammarError, match=why):
        grammar.parse(raw, Path("x.cfg"))


def test_r1s_grammar_expands_to_as_many_calls_as_recorder2text_prints(corpus: Path):
    trace_dir = recorder_dir(corpus) / "R1_posix_small_shared" / "trace"
    g = grammar.parse((trace_dir / "0.cfg").read_bytes(), trace_dir / "0.cfg")
    lines = reference_text(corpus, "R1_posix_small_shared", 0)  # one line per call
    (calls,) = grammar.expand([g], [len(lines)])
    assert calls.size == len(lines)


def test_a_signature_plan_reads_size_offset_and_path():
    p = plans.plan("pwrite", ("/scratch/f", "0x7f00", "4096", "8192"))
    assert (p.target, p.size, p.offset, p.spec.module) == ("/scratch/f", 4096, 8192, "POSIX")
    assert plans.plan("pwrite", ("/proc/self/status", "0x7f00", "4096", "0")) is None  # not a traced file
    assert plans.plan("gettimeofday", ()) is None  # not I/O


def test_r1_records_count_its_small_shared_writes(corpus: Path):
    """R1 is IOR -t 4k -b 4m on 4 ranks, one shared file: 1,024 writes of 4 KiB per rank."""
    from advisor.ingest import load_profile

    profile = load_profile(recorder_dir(corpus) / "R1_posix_small_shared" / "trace")
    assert RecorderTrace(recorder_dir(corpus) / "R1_posix_small_shared" / "trace").meta.ranks == 4
    posix = profile.records["POSIX"]
    assert posix.get("POSIX_WRITES").sum() == 4 * 1024
    assert posix.get("POSIX_SIZE_WRITE_1K_10K").sum() == 4 * 1024
    assert len(set(posix.ids.tolist())) == 1 and records.record_id("/x") == records.record_id("/x")


def test_chains_are_walked_together_entry_by_entry():
    """Three chains of length-prefixed entries (a head word giving the entry's length in words) in
    one buffer, of 2, 0 and 3 entries: every entry's position, chain after chain, and each end."""
    from advisor.ingest.recorder.chains import int32_at, walk

    words = np.array([3, 7, 7, 2, 9,  # chain 0 at 0: entries of 3 and 2 words
                      1, 2, 5, 2, 1], np.int32)  # chain 2 at 5: entries of 1, 2 and 2 words
    buf = np.frombuffer(words.astype("<i4").tobytes(), np.uint8)
    heads, ends = walk(np.array([0, 20, 20]), np.array([2, 0, 3]), lambda at: 4 * int32_at(buf, at))
    assert heads.tolist() == [0, 12, 20, 24, 32] and ends.tolist() == [20, 20, 40]
    assert int32_at(buf, np.array([-5, 4, 10_000])).tolist() == [3, 7, 1]  # positions clipped into the buffer


_HEAP_PROBE = """
import ctypes
import numpy as np
from MODULE import _glibc, kept_heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                      "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = _glibc()
libc.mallinfo2.restype = MallInfo2

def mmapped_by_an_array():
    before = libc.mallinfo2().hblkhd
    array = np.ones(8 << 20)  # 64 MiB
    grown = libc.mallinfo2().hblkhd - before
    del array
    return grown

outside = mmapped_by_an_array()
with kept_heap():
    inside = mmapped_by_an_array()
print(outside, inside, mmapped_by_an_array())
"""


def test_a_kept_heap_takes_large_arrays_from_the_heap_not_from_mmap():
    """glibc's mallinfo2: bytes in mmapped blocks grow by a 64 MiB array outside `kept_heap`, not
    inside it (the array comes from the heap, where a freed one is reused without new pages), and
    again once it is left. In a fresh interpreter: the allocator's state is the process's, and a test
    run before this one in the same worker can leave a free heap chunk large enough for the array."""
    import subprocess
    import sys

    probe = _HEAP_PROBE.replace("MODULE", heap.__name__)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    outside, inside, after = (int(v) for v in out.split())
    assert outside >= 64 << 20 and inside == 0
    assert after >= 64 << 20  # the defaults are back
