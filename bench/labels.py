"""Labelled cases and how a diagnosis is scored against them.

A label file is a TSV with the columns of ``../shared/corpus/traps/LABELS.tsv``: ``case``,
``must_flag`` (categories a correct diagnosis reports at warn or high), ``must_not_flag_high``
(categories that would be a false alarm at high) and ``note``; optionally ``must_not_propose``
(fix transforms that must not appear in "Fixes, best first": what the job already does). A case
names a folder holding ``case.darshan``, or a log itself, relative to the label file's folder or to
the corpus root. Used by
``bench/accuracy.py`` and ``tests/test_labelled_cases.py``, so the bench and the tests score alike.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
OUR_LABELS = REPO / "bench" / "labels"
FLAGGED = ("high", "warn")

# Drishti 0.8's insight codes (drishti/includes/config.py) as our categories. Codes that describe
# the job without judging it (P01-P04 read/write intensive, P12/P14 sequential, M04/M05 collective
# used, M06/M07 "could be non-blocking", M10 aggregators fine) map to nothing: they are no finding.
DRISHTI_CATEGORIES = {
    "S01": "stdio",
    "P05": "small-io", "P06": "small-io", "P15": "small-io", "P16": "small-io",
    "P07": "misaligned", "P08": "misaligned",
    "P09": "redundant-io", "P10": "redundant-io",
    "P11": "random-access", "P13": "random-access",
    "P17": "metadata",
    "P18": "imbalance", "P19": "imbalance", "P21": "imbalance", "P22": "imbalance",
    "M01": "no-mpiio",
    "M02": "no-collective", "M03": "no-collective",
    "M08": "subsetting", "M09": "subsetting",
}


@dataclass(frozen=True)
class Case:
    """One labelled run: where its log is and what a correct diagnosis contains."""

    name: str
    log: Path
    must_flag: frozenset[str]
    must_not_flag_high: frozenset[str]
    note: str = ""
    must_not_propose: frozenset[str] = frozenset()
    group: str = ""  # traps, generated, applications: the label file's name


@dataclass
class Score:
    """How one tool's findings on one case meet the labels."""

    case: Case
    flagged: set[str] = field(default_factory=set)  # categories at warn or high
    high: set[str] = field(default_factory=set)
    error: str = ""
    proposed: set[str] = field(default_factory=set)  # fix transforms in "Fixes, best first"

    @property
    def missed(self) -> set[str]:
        return set(self.case.must_flag) - self.flagged

    @property
    def false_high(self) -> set[str]:
        return set(self.case.must_not_flag_high) & self.high

    @property
    def wrong_fixes(self) -> set[str]:
        return set(self.case.must_not_propose) & self.proposed

    @property
    def right(self) -> bool:
        return not self.error and not self.missed and not self.false_high and not self.wrong_fixes


def label_files(corpus: Path = CORPUS) -> list[Path]:
    """Every label file: the corpus's own (any LABELS.tsv below it) and ours."""
    found = sorted(corpus.rglob("LABELS.tsv")) if corpus.is_dir() else []
    return found + sorted(OUR_LABELS.glob("*.tsv"))


def read_cases(path: Path, corpus: Path = CORPUS) -> list[Case]:
    """The cases of one label file; a case whose log is not found is left out."""
    cases = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            name = row["case"].strip()
            log = next((c for d in (path.parent, corpus) for c in (d / name / "case.darshan", d / name)
                        if c.is_file()), None)
            if log is not None:
                cases.append(Case(name, log, _categories(row.get("must_flag")),
                                  _categories(row.get("must_not_flag_high")), (row.get("note") or "").strip(),
                                  _categories(row.get("must_not_propose")), _group(path)))
    return cases


def all_cases(corpus: Path = CORPUS) -> list[Case]:
    return [c for path in label_files(corpus) for c in read_cases(path, corpus)]


def score(case: Case, findings: list[tuple[str, str]], error: str = "",
          proposed: set[str] | None = None) -> Score:
    """Score (category, severity) pairs, and the fix transforms proposed, against the case's labels."""
    return Score(case, flagged={c for c, s in findings if s in FLAGGED},
                 high={c for c, s in findings if s == "high"}, error=error, proposed=set(proposed or ()))


def our_findings(doc: dict) -> list[tuple[str, str]]:
    """(category, severity) of every finding in a `diagnose --json` document."""
    return [(f["category"], f["severity"]) for f in doc.get("findings", [])]


def our_proposed_fixes(doc: dict) -> set[str]:
    """The fix transforms of "Fixes, best first" in a `diagnose --json` document."""
    return {s["fix"]["transform"] for s in (doc.get("summary") or {}).get("fixes") or []}


def _group(path: Path) -> str:
    """The corpus's LABELS.tsv files by their folder (traps), ours by their name (generated, applications)."""
    return path.parent.name if path.name == "LABELS.tsv" else path.stem


def _categories(text: str | None) -> frozenset[str]:
    return frozenset(c.strip() for c in (text or "").split(",") if c.strip())
