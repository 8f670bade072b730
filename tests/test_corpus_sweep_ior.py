"""Every IOR file of the shared corpus is parsed with its own printed numbers, or refused in one line.

The printed numbers are read back here with a few independent regular
expressions (not the parser's code): the "Summary of all tests" rows, the
"Max Write/Read" lines, the result rows, the JSON ``bwMaxMIB``/``bwMiB`` values
and the CSV rows. A parsed file must reproduce each of them exactly.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from advisor.errors import InputError
from advisor.ingest import load_profile

_PREFIX = re.compile(r"^(?:stdout\[\d+\] ?|\[\d+,\d+\]<std(?:out|err)>: ?)")
_NUM = r"([\d.]+)"


def _ior_files(corpus: Path) -> list[Path]:
    files = [p for p in (corpus / "ior-logs").rglob("*") if p.is_file()]
    files += [p for p in (corpus / "ior-versions").iterdir() if p.is_file()]
    files += sorted((corpus / "generated").glob("*/ior*.txt"))
    files += sorted((corpus / "generated").glob("*/ior.json"))
    files += sorted((corpus / "generated").glob("*/*.csv"))
    perf = corpus / "darshan-repo-logs" / "darshan-test" / "2.x" / "perf"
    files += [p for p in perf.iterdir() if p.is_file() and not p.name.endswith(".gz")]
    return sorted(files)


def _printed_text(text: str) -> dict[str, Counter]:
    """What a text log prints: summary rows, Max lines and result rows."""
    summary, maxes, rows = Counter(), Counter(), Counter()
    in_summary = False
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw).strip()
        if line.startswith("Operation") and "Max(MiB)" in line:
            in_summary = True
            continue
        if re.match(r"IOR-\S+: MPI Coordinated", line) or line.startswith("Finished"):
            in_summary = False
        if m := re.match(rf"Max (Write|Read):\s+{_NUM} MiB/sec", line):
            maxes[(m.group(1).lower(), float(m.group(2)))] += 1
        m = re.match(rf"(write|read)\s+{_NUM}\s+{_NUM}\s+{_NUM}", line)
        if m and in_summary:
            summary[(m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4)))] += 1
        elif m and len(line.split()) >= 8:
            rows[(m.group(1), float(m.group(2)))] += 1
    return {"summary": summary, "max": maxes, "rows": rows}


def _printed_json(text: str) -> dict[str, Counter]:
    summary = Counter(
        (op, float(mx), float(mn), float(mean)) for op, mx, mn, mean in re.findall(
            rf'"operation": "(\w+)",(?:[^{{}}]*?)"bwMaxMIB": {_NUM},\s*"bwMinMIB": {_NUM},'
            rf'\s*"bwMeanMIB": {_NUM}', text, re.S))
    rows = Counter((op, float(bw)) for op, bw in re.findall(
        rf'"access": "(write|read)",\s*"bwMiB": {_NUM}', text))
    return {"summary": summary, "max": Counter(), "rows": rows}


def _printed_csv(text: str) -> dict[str, Counter]:
    rows = Counter((m.group(1), float(m.group(2)))
                   for m in re.finditer(rf"^(write|read),{_NUM},", text, re.M))
    return {"summary": Counter(), "max": Counter(), "rows": rows}


def _parsed(run) -> dict[str, Counter]:
    summary = Counter((s.operation, s.max_mib, s.min_mib, s.mean_mib)
                      for t in run.tests for s in t.summaries.values() if s.source == "summary")
    maxes = Counter((op, bw) for t in run.tests for op, bw in t.max_lines.items())
    rows = Counter((it.operation, it.bw_mib) for t in run.tests for it in t.iterations)
    return {"summary": summary, "max": maxes, "rows": rows}


def _round(counter: Counter) -> Counter:
    return Counter({tuple(round(v, 4) if isinstance(v, float) else v for v in k): n
                    for k, n in counter.items()})


def test_every_ior_file_parsed_or_refused(corpus: Path):
    files = _ior_files(corpus)
    assert len(files) > 600
    parsed, refused = [], []
    for path in files:
        try:
            profile = load_profile(path)
        except InputError as exc:
            assert exc.reason and "\n" not in str(exc), path
            refused.append((path, exc.reason))
            continue
        run = profile.run
        text = path.read_text(errors="replace")
        printed = {"ior-json": _printed_json, "ior-csv": _printed_csv}.get(
            run.format, _printed_text)(text)
        got = _parsed(run)
        for key in ("summary", "max", "rows"):
            if key == "max" and run.format == "ior-json":
                continue  # the -v JSON "max" block repeats the row maxima
            assert _round(got[key]) == _round(printed[key]), (path, key)
        for test in run.tests:
            assert test.summaries, path
            for s in test.summaries.values():
                assert s.min_mib <= s.mean_mib + 1e-6 and s.mean_mib <= s.max_mib + 1e-6, path
        assert profile.job.nprocs == run.tasks
        parsed.append(path)
    assert len(parsed) >= 420, len(parsed)
    _check_manifest(corpus, parsed)


def _check_manifest(corpus: Path, parsed: list[Path]) -> None:
    """Every IO500 IOR output the corpus manifest names with a version is parsed."""
    root = corpus / "ior-logs" / "public" / "IO500__submission-data"
    rows = (root / "MANIFEST.tsv").read_text().splitlines()[1:]
    listed = {root / r.split("\t")[0] for r in rows if r.split("\t")[1]}
    missing = listed - set(parsed)
    assert not missing, sorted(missing)[:5]


@pytest.mark.parametrize("name, reason", [
    ("generated/m_error_nonexistent_path/ior.txt", "aborted before any result: ERROR: open64"),
    ("generated/m2_error_block_not_multiple_of_xfer/ior.txt", "block size must be a multiple"),
    ("generated/m_error_nonexistent_path/ior.json", "cut short"),
    ("generated/p_csv_summary_and_rank_details/rank_perf.csv", "per-rank"),
    ("generated/a_good_fpp_posix_1m/ior-json-run.stdout.txt", "report went to /scratch/a_good_fpp_posix_1m/ior.json"),
    ("ior-logs/public/darshan-hpc__darshan/darshan-test/2.x/perf/354969.output", "not a recognised"),
])
def test_refusals_name_the_reason(corpus: Path, name: str, reason: str):
    with pytest.raises(InputError) as err:
        load_profile(corpus / name)
    assert reason in err.value.reason
