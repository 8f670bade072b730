"""How right is the diagnosis? Labelled cases scored for ioadvisor and Drishti 0.8, and the corpus alarm rate.

    python bench/accuracy.py [--corpus DIR] [--drishti PATH | --no-drishti] [--no-alarm] [--timeout S]

Labelled cases: every LABELS.tsv under the corpus (the traps) and bench/labels/*.tsv (the generated
cases), read by bench/labels.py. For each case both tools diagnose the same log; a `must_flag`
category counts as found when a finding of that category is warn or high, a `must_not_flag_high`
category at high is a false alarm. Drishti's insight codes are mapped to our categories by
labels.DRISHTI_CATEGORIES (its level HIGH is high, WARN is warn); the map is printed.

Repeat runs: the generated IOR cases were run twice (the second run wrote IOR's JSON summary,
`json-run.darshan`); the first run's labels are scored on the second run's log, which no threshold
was set on, and each tool's categories are compared between the two runs: a high (or a warn-or-high)
category present in one run and not the other is a verdict the next run reverses.

Corpus alarm rate: `diagnose --json` over every Darshan log of the corpus, counting logs with at least
one high finding and the high findings that cost under 1 s or under 5 % of the run (each listed with
the reason the finding gives for its confidence, when it gives one).

Drishti lives in its own venv (never the project's): `--drishti`, `$DRISHTI`, or /tmp/drishti-venv;
create one with `python3 -m venv /tmp/drishti-venv && /tmp/drishti-venv/bin/pip install drishti-io`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import labels  # noqa: E402  (bench/ is not a package: its sibling module, found through sys.path)

DRISHTI_PATHS = ("/tmp/eng/drishti-venv/bin/drishti", "/tmp/drishti-venv/bin/drishti")
BATCH = 12  # logs per `diagnose` process for the alarm rate: amortises start-up, bounds a bad log's reach

# Runs inside Drishti's own interpreter: every insight Drishti reports goes to stderr as
# "@@ CODE LEVEL" (Drishti prints levels as colours only). Patched before Drishti's modules
# star-import `message` from its config.
DRISHTI_DRIVER = """
import sys
import drishti.includes.config as config
shown = config.message
def message(code, target, level, issue, recommendations=None, details=None):
    sys.stderr.write(f"@@ {code} {level}\\n")
    return shown(code, target, level, issue, recommendations, details)
config.message = message
from drishti.reporter import main
main()
"""
DRISHTI_LEVELS = {1: "high", 2: "warn", 3: "info", 4: "ok"}


def ours(paths: list[Path], timeout: float) -> dict[str, dict]:
    """`diagnose --json -` documents by path (one process for all `paths`)."""
    cmd = [sys.executable, "-m", "advisor", "diagnose", "--json", "-", *map(str, paths)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "NO_COLOR": "1"}).stdout
        docs = json.loads(out)
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        return {str(p): {"error": f"{type(exc).__name__}"} for p in paths}
    docs = docs if isinstance(docs, list) else [docs]
    return {d["source"]["path"]: d for d in docs}


def drishti(exe: str, log: Path, timeout: float) -> tuple[list[tuple[str, str]], str]:
    """Drishti's findings on `log` as (category, severity), and an error line when it failed."""
    python = str(Path(exe).with_name("python"))
    try:
        run = subprocess.run([python, "-c", DRISHTI_DRIVER, "--code", str(log)], capture_output=True,
                             text=True, timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return [], f"timeout after {timeout:g} s"
    found = []
    for line in run.stderr.splitlines():
        if line.startswith("@@ "):
            _, code, level = line.split()
            category = labels.DRISHTI_CATEGORIES.get(code)
            if category:
                found.append((category, DRISHTI_LEVELS.get(int(level), "info")))
    tail = run.stderr.strip().splitlines()[-1:] or [""]
    return found, "" if run.returncode == 0 else f"exit {run.returncode}: {tail[0][:80]}"


def drishti_exe(arg: str | None) -> str | None:
    for candidate in (arg, os.environ.get("DRISHTI"), *DRISHTI_PATHS):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def score_cases(cases: list[labels.Case], exe: str | None, timeout: float) -> dict[str, list[labels.Score]]:
    docs = ours([c.log for c in cases], timeout * len(cases))
    scores: dict[str, list[labels.Score]] = {"ioadvisor": [], "drishti": []}
    for case in cases:
        doc = docs.get(str(case.log), {"error": "no result"})
        scores["ioadvisor"].append(labels.score(case, labels.our_findings(doc), doc.get("error") or "",
                                                labels.our_proposed_fixes(doc)))
        if exe:
            found, error = drishti(exe, case.log, timeout)
            scores["drishti"].append(labels.score(case, found, error))
    return {k: v for k, v in scores.items() if v}


def print_scores(scores: dict[str, list[labels.Score]]) -> None:
    tools = list(scores)
    print(f"{'case':<42} {'must flag':<24} " + " ".join(f"{t + ': missed / false high / wrong fix':<52}"
                                                     for t in tools))
    for row in zip(*scores.values()):
        case = row[0].case
        cells = [_cell(s) for s in row]
        print(f"{_short(case.name):<42} {','.join(sorted(case.must_flag)) or '-':<24} "
              + " ".join(f"{c:<52}" for c in cells))
    print()
    for tool, rows in scores.items():
        groups = sorted({s.case.group for s in rows})
        for group in ([None] if len(groups) < 2 else [None, *groups]):
            _print_total(tool, [s for s in rows if group in (None, s.case.group)], group)


def _print_total(tool: str, rows: list[labels.Score], group: str | None) -> None:
    must = sum(len(s.case.must_flag) for s in rows)
    found = sum(len(s.case.must_flag) - len(s.missed) for s in rows)
    false_high = sum(len(s.false_high) for s in rows)
    right = sum(s.right for s in rows)
    recall = 100.0 * found / must if must else 100.0
    # Drishti proposes no replayable fix, so "wrong fixes" is ours alone
    wrong = f", fixes the job already applies {sum(len(s.wrong_fixes) for s in rows)}" if tool == "ioadvisor" else ""
    print(f"{tool:<10} {'  ' + group if group else 'all':<14} recall {found}/{must} ({recall:.0f} %), "
          f"false highs {false_high}{wrong}, cases right {right}/{len(rows)}, "
          f"failed {sum(bool(s.error) for s in rows)}")


def _short(name: str) -> str:
    """A case's name fit for a column: a log's file name (cut), a folder as it is."""
    return name if not name.endswith(".darshan") else Path(name).name[:40]


def repeat_runs(cases: list[labels.Case]) -> list[labels.Case]:
    """The same labelled workloads' second runs (the IOR JSON run), where the corpus has one."""
    second = [(c, c.log.with_name("json-run.darshan")) for c in cases]
    return [replace(c, name=f"{c.name} (run 2)", log=log) for c, log in second if log.is_file()]


def print_stability(first: dict[str, list[labels.Score]], second: dict[str, list[labels.Score]]) -> None:
    """Categories each tool calls high (or warn-or-high) in one run of a workload and not the other."""
    for tool in second:
        by_name = {s.case.name: s for s in first[tool]}
        pairs = [(by_name[s.case.name.removesuffix(" (run 2)")], s) for s in second[tool]]
        high = [(a.case.name, a.high ^ b.high) for a, b in pairs if a.high != b.high]
        flagged = [(a.case.name, a.flagged ^ b.flagged) for a, b in pairs if a.flagged != b.flagged]
        print(f"{tool:<10} repeat runs: high categories the same in {len(pairs) - len(high)}/{len(pairs)}, "
              f"warn-or-high the same in {len(pairs) - len(flagged)}/{len(pairs)}"
              + "".join(f"; {name}: {','.join(sorted(d))} {kind}" for kind, rows in (("high", high),
                                                                                     ("flagged", flagged))
                        for name, d in rows))


def _cell(s: labels.Score) -> str:
    if s.error:
        return f"FAILED ({s.error[:30]})"
    missed = ",".join(sorted(s.missed)) or "-"
    false_high = ",".join(sorted(s.false_high)) or "-"
    wrong = ",".join(sorted(s.wrong_fixes)) or "-"
    return f"{'ok ' if s.right else 'BAD'} {missed} / {false_high} / {wrong}"


def alarm_rate(corpus: Path, timeout: float) -> None:
    logs = sorted(p for p in corpus.rglob("*.darshan") if p.is_file())
    docs: dict[str, dict] = {}
    for i in range(0, len(logs), BATCH):
        docs.update(ours(logs[i:i + BATCH], timeout * BATCH))
    read = [d for d in docs.values() if not d.get("error")]
    with_high = [d for d in read if any(f["severity"] == "high" for f in d["findings"])]
    highs = [(d, f) for d in read for f in d["findings"] if f["severity"] == "high"]
    cheap = [(d, f) for d, f in highs if f["cost_s"] < 1.0 or _share(d, f) < 0.05]
    said = [(d, f) for d, f in cheap if _why(f)]
    real = [(d, f) for d, f in cheap if _origin(d, corpus) == "real"]
    print(f"\ncorpus alarm rate: {len(with_high)} of {len(read)} diagnosed logs have a high finding "
          f"({len(logs) - len(read)} not diagnosable); {len(highs)} high findings, {len(cheap)} of them "
          f"cost under 1 s or under 5 % of the run ({len(real)} on real logs, the others on generated runs "
          f"and traps made to show a problem); {len(said)} of those {len(cheap)} say why they are still high "
          f"(counted evidence, or an effect above the timing noise), {len(cheap) - len(said)} do not")
    for origin in ("real", "generated", "traps"):
        logs_of = [d for d in read if _origin(d, corpus) == origin]
        print(f"  {origin:<9} {sum(1 for d in logs_of if d in with_high):>3} of {len(logs_of):>3} logs with a high "
              f"finding")
    for d in with_high:  # the real jobs flagged high, to be read one by one: no label says they should be
        if _origin(d, corpus) == "real":
            codes = ", ".join(f"{f['code']} {f['cost_s']:.2f} s" for f in d["findings"] if f["severity"] == "high")
            print(f"    real, high: {Path(d['source']['path']).relative_to(corpus)}: {codes}")
    by_code: dict[str, int] = {}
    for _, f in highs:
        by_code[f["code"]] = by_code.get(f["code"], 0) + 1
    print("high findings by rule: " + ", ".join(f"{c} {n}" for c, n in sorted(by_code.items(), key=lambda kv: -kv[1])))
    for d, f in cheap:
        why = _why(f)
        print(f"  {f['code']} {f['cost_s']:.3f} s ({100 * _share(d, f):.1f} % of the run) "
              f"{Path(d['source']['path']).relative_to(corpus)}" + (f": {why}" if why else ": NO REASON GIVEN"))


def _why(finding: dict) -> str:
    """The reason a high finding gives for its confidence, when that confidence is high."""
    confidence = finding.get("confidence") if isinstance(finding.get("confidence"), dict) else {}
    return confidence.get("reason", "") if confidence.get("level") == "high" else ""


def _origin(doc: dict, corpus: Path) -> str:
    """real (logs of real jobs), generated (runs made to show one pattern) or traps (labelled runs)."""
    top = Path(doc["source"]["path"]).relative_to(corpus).parts[0]
    return top if top in ("generated", "traps") else "real"


def _share(doc: dict, finding: dict) -> float:
    runtime = doc["job"].get("runtime_s") or 0.0
    return finding["cost_s"] / runtime if runtime > 0 else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=labels.CORPUS)
    ap.add_argument("--drishti", default=None, help="Drishti's command (default: $DRISHTI or a known venv)")
    ap.add_argument("--no-drishti", action="store_true")
    ap.add_argument("--no-alarm", action="store_true", help="skip the corpus alarm rate")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per log")
    args = ap.parse_args()
    cases = labels.all_cases(args.corpus)
    if not cases:
        print(f"no labelled cases found under {args.corpus} or {labels.OUR_LABELS}", file=sys.stderr)
        return 2
    exe = None if args.no_drishti else drishti_exe(args.drishti)
    if exe is None and not args.no_drishti:
        print("Drishti not found (--drishti, $DRISHTI, /tmp/drishti-venv): scoring ioadvisor alone")
    print(f"{len(cases)} labelled cases from " + ", ".join(str(p) for p in labels.label_files(args.corpus)))
    print("Drishti codes as categories: " + ", ".join(f"{k}={v}" for k, v in labels.DRISHTI_CATEGORIES.items()))
    first = score_cases(cases, exe, args.timeout)
    print_scores(first)
    if repeats := repeat_runs(cases):
        print(f"\n{len(repeats)} second runs of the same workloads, scored on the first runs' labels:")
        second = score_cases(repeats, exe, args.timeout)
        print_scores(second)
        print_stability(first, second)
    if not args.no_alarm:
        alarm_rate(args.corpus, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
