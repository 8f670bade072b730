"""The diagnosis data model that every reporter reads (terminal, JSON, HTML, hook, fleet).

Serialized as the versioned JSON document ``ioadvisor/diagnosis/v1``
(schema: ``advisor/schemas/diagnosis-v1.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from advisor.fixes import FixSummary, fix_summaries, fixes_not_to_apply
from advisor.verification import Verification

SCHEMA_ID = "ioadvisor/diagnosis/v1"

SEVERITIES = ("high", "warn", "info")
DERIVED_SUMMARY = ("fixes", "fixes_not_to_apply")  # recomputed from the findings, never read back
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}

CATEGORIES = (
    "small-io", "random-access", "misaligned", "metadata", "imbalance", "no-collective",
    "no-mpiio", "stdio", "fsync", "partial-log", "striping", "bad-ost", "redundant-io",
    "subsetting", "server-config", "client-config", "benchmark-validity", "scaling",
    "regression", "anomaly", "read-write-mix",
)


@dataclass
class Recommendation:
    """What to change: the advice and the commands that apply it."""
    text: str
    commands: list[str] = field(default_factory=list)


def _shown(label: str, kind: str, default: Any = None, scale: float = 0) -> Any:
    """A field the reports show under `label`, formatted by its unit kind (advisor.units.KINDS)."""
    return field(default=default, metadata={"label": label, "kind": kind, **({"scale": scale} if scale else {})})


@dataclass
class Prediction:
    """A learned model's prediction of a fix (:mod:`advisor.models.predict`): the speedup with an
    80 % interval (calibrated: advisor.models.conformal), or `reason` when the model could not
    predict this fix."""

    speedup: float | None = _shown("predicted speedup", "ratio")
    # (low, high) speedup: 80 % of the calibration's measured fell inside
    interval: list[float] | None = _shown("interval", "ratio")
    time_saved_s: float | None = _shown("time saved", "seconds")  # of the job's measured I/O time
    # predicted bandwidth of the replay plan, before and after the fix (MiB/s)
    baseline_mib_s: float | None = _shown("bandwidth before", "rate", scale=1 << 20)
    fixed_mib_s: float | None = _shown("bandwidth after", "rate", scale=1 << 20)
    np: int | None = _shown("processes", "count")  # ranks and scale of the plan predicted
    scale: float | None = _shown("scale", "count")
    extrapolated: bool = _shown("extrapolated", "flag", False)
    # features outside the training ranges
    extrapolation: list[str] = field(default_factory=list, metadata={"label": "outside the training data",
                                                                     "kind": "text"})
    warning: str = _shown("warning", "text", "")  # e.g. the model learned another file system than the job's
    # what the interval is calibrated on when not the model's own fixes on its own mount (a fix transform it
    # never measured, another file system): advisor.models.speedup.width_for
    interval_basis: str = _shown("interval calibrated for", "text", "")
    model: str = _shown("model", "text", "")  # which model
    reason: str = _shown("no prediction because", "text", "")  # why there is no speedup
    job_io_s: float | None = _shown("job's I/O time", "seconds")  # measured, slowest rank: what a fix can save
    saving: str = _shown("time saved from", "text", "")  # "measured" when a replay measured the fix, "predicted"
    # after a replay: 'measured 4.25x, outside the predicted 1.21x-3.43x: the model underestimates this workload'
    versus_measured: str = _shown("against the measurement", "text", "")

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Prediction:
        """From a saved diagnosis; keys this version does not know are left out."""
        return cls(**{k: v for k, v in doc.items() if k in _PREDICTION_FIELDS})

    def shown(self) -> list[tuple[str, str, Any]]:
        """(label, unit kind, value in the kind's base unit) of the fields that say something, in order
        (for the reports' detail lists)."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in (None, "", [], False):
                scale = f.metadata.get("scale")
                out.append((f.metadata["label"], f.metadata["kind"], value * scale if scale else value))
        return out


_PREDICTION_FIELDS = {f.name for f in fields(Prediction)}


@dataclass
class Finding:
    """One problem found in one job, with its evidence, its cost and its fix."""

    code: str
    category: str
    severity: str
    title: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)  # name -> value, in its kind's base unit
    # name -> {label, kind, unit[, fields]}: how to read and show each evidence value (advisor.units.KINDS)
    evidence_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # the first of them, most telling first
    ranks: list[int] = field(default_factory=list)
    # how many files (ranks) the finding concerns when `files` (`ranks`) lists only the first
    files_total: int | None = None
    ranks_total: int | None = None
    cost_s: float = 0.0
    # of cost_s, what the fix would win back (less what the fix itself costs: advisor.facts.fix_cost);
    # None: no fix or no cost (saved by an older version: cost_s stands for it)
    recovered_s: float | None = None
    recommendation: Recommendation = field(default_factory=lambda: Recommendation(""))
    fix: dict[str, Any] | None = None
    references: list[str] = field(default_factory=list)
    verification: Verification | None = None  # filled by the replayer (advisor.verify)
    prediction: Prediction | None = None  # filled by a learned model
    # how sure the finding is: {"level": high|medium|low, "reason": one line, "ratio": effect/noise}
    confidence: dict[str, Any] | None = None
    # values the finding rests on that neither the input nor the site config gave:
    # [{"value": what was assumed, "key": the site-config key that would make it exact, "how": else what would}]
    assumptions: list[dict[str, str]] = field(default_factory=list)
    # codes of the findings whose cost is drawn from the same seconds as this one's (a rule's
    # `time_pools`): alternatives for one loss, never to be added to it
    same_time_as: list[str] = field(default_factory=list)

    def same_time_note(self) -> str:
        """'the same seconds as IO003: another way to win them back, not more', or ''."""
        if not self.same_time_as:
            return ""
        return f"the same seconds as {', '.join(self.same_time_as)}: another way to win them back, not more"

    def held_note(self) -> str:
        """Why the severity is below what the cost's share gives, when the rule's ceiling holds it
        there: 'MPI002 stays warn, the most its rule reports: its cost alone would make it high'."""
        by_cost = (self.confidence or {}).get("by_cost")
        if not by_cost:
            return ""
        return f"{self.code} stays {self.severity}, the most its rule reports: its cost alone would make it {by_cost}"

    @property
    def file_count(self) -> int:
        """How many files the finding concerns (more than `files` lists when files_total is set)."""
        return self.files_total or len(self.files)

    @property
    def rank_count(self) -> int:
        return self.ranks_total or len(self.ranks)


@dataclass
class NotChecked:
    """A check that could not run, and why (e.g. no LUSTRE module, no DXT)."""

    check: str
    reason: str


@dataclass
class Diagnosis:
    """Everything found about one input: its source, job, findings and summary."""
    source: dict[str, Any]  # path, format, parser, log_version, notes
    job: dict[str, Any]  # jobid, nprocs, runtime_s, exe, ...
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # bytes, io time, share of run time
    tool: dict[str, Any] = field(default_factory=dict)  # ioadvisor version, rule set
    # Compact, downsampled plot data (per-rank bytes, histograms, DXT timeline, per-OST
    # bandwidth, ...) so that a saved diagnosis re-renders as HTML without the log.
    figures: dict[str, Any] = field(default_factory=dict)
    # The input's own results as typed numbers: an IOR run's tests ("ior"), a campaign's curves
    # ("campaign"), a snapshot's settings ("snapshot"); empty for Darshan-like inputs.
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # set when the input could not be diagnosed

    @classmethod
    def failed(cls, path: str | Path, reason: str) -> Diagnosis:
        """The result of an input that could not be diagnosed: which input, and why."""
        return cls(source={"path": str(path), "format": "unknown"},
                   job={"jobid": "", "nprocs": 0, "runtime_s": 0.0, "exe": ""}, error=reason)

    def sorted_findings(self) -> list[Finding]:
        """Findings by severity, then by the time they cost (largest first), in every reporter.

        A prediction belongs to a fix that several findings may share (its saving is the fix's,
        not the finding's): predictions rank the fixes (:meth:`fixes`), never the findings."""
        return sorted(self.findings, key=lambda f: (SEVERITY_RANK[f.severity], -f.cost_s, f.code))

    def lost_s(self) -> float:
        """The time per process the findings lose together. Findings that name each other in
        `same_time_as` describe the same seconds (small writes and small writes to a shared file)
        and count once, at the largest of them; other costs can overlap too, so the sum is capped
        by the job's I/O time, though never below the costliest finding
        (a straggler's cost is the slowest rank's, above the mean I/O time), and by the run."""
        costs = _overlap_maxima([f for f in self.findings if f.cost_s > 0])
        if not costs:
            return 0.0
        io = self.summary.get("io_time_s")
        cap = max(max(costs), float(io)) if isinstance(io, (int, float)) and io > 0 else sum(costs)
        runtime = self.job.get("runtime_s")
        if isinstance(runtime, (int, float)) and runtime > 0:
            cap = min(cap, float(runtime))
        return min(sum(costs), cap)

    def fixes(self) -> list[FixSummary]:
        """The distinct fixes the warn-or-high findings propose, best first (advisor.fixes)."""
        return fix_summaries(self.sorted_findings())

    def fixes_not_to_apply(self) -> list[FixSummary]:
        """The fixes those findings propose that were measured or predicted slower (advisor.fixes)."""
        return fixes_not_to_apply(self.sorted_findings())

    def to_dict(self) -> dict[str, Any]:
        ordered = self.sorted_findings()
        doc = {f.name: plain(getattr(self, f.name)) for f in fields(self) if f.name != "findings"}
        doc["findings"] = [plain(f) for f in ordered]
        doc["summary"]["fixes"] = [plain(s) for s in fix_summaries(ordered)]
        doc["summary"]["fixes_not_to_apply"] = [plain(s) for s in fixes_not_to_apply(ordered)]
        return {"schema": SCHEMA_ID, **doc}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Diagnosis:
        findings = []
        for f in doc.get("findings", []):
            f = dict(f)
            f["recommendation"] = Recommendation(**f.get("recommendation", {"text": ""}))
            saved = f.get("prediction")
            f["prediction"] = Prediction.from_dict(saved) if isinstance(saved, dict) else None
            f["verification"] = Verification.from_dict(f.get("verification"))
            findings.append(Finding(**f))
        return cls(
            source=doc["source"],
            job=doc["job"],
            findings=findings,
            not_checked=[NotChecked(**n) for n in doc.get("not_checked", [])],
            # derived from the findings: recomputed, never read back
            summary={k: v for k, v in doc.get("summary", {}).items() if k not in DERIVED_SUMMARY},
            tool=doc.get("tool", {}),
            figures=doc.get("figures", {}),
            data=doc.get("data") if isinstance(doc.get("data"), dict) else {},
            error=doc.get("error"),
        )


def _overlap_maxima(findings: list[Finding]) -> list[float]:
    """One cost per group of findings linked through `same_time_as`: the group's largest."""
    group = {f.code: f.code for f in findings}

    def root(code: str) -> str:
        while group[code] != code:
            code = group[code]
        return code

    for f in findings:
        for other in f.same_time_as:
            if other in group:
                group[root(other)] = root(f.code)
    largest: dict[str, float] = {}
    for f in findings:
        r = root(f.code)
        largest[r] = max(largest.get(r, 0.0), float(f.cost_s))
    return list(largest.values())


def diagnoses_json(diagnoses: list[Diagnosis], as_list: bool = False) -> str:
    """The document `diagnose --json` and the hook write: one diagnosis as an object (the shape
    readers of v1 expect), several, or any number when `as_list`, as a list in input order."""
    docs = [d.to_dict() for d in diagnoses]
    return json.dumps(docs[0] if len(docs) == 1 and not as_list else docs, indent=2, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays as Python values; anything else JSON cannot hold as its text."""
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


_LEAVES = (str, int, float, type(None))  # bool is an int


def plain(value: Any) -> Any:
    """`dataclasses.asdict` without its deep copy of every leaf: dataclasses become dicts, lists,
    tuples and dicts are rebuilt (so the result can be edited), leaves are shared. A fleet
    diagnosis with its figure data spent a fifth of its analysis in asdict's copying."""
    if isinstance(value, _LEAVES):  # first: most values are the figures' numbers
        return value
    if hasattr(type(value), "__dataclass_fields__"):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [v if isinstance(v, _LEAVES) else plain(v) for v in value]
    if isinstance(value, tuple):
        return type(value)(*(plain(v) for v in value)) if hasattr(value, "_fields") else tuple(plain(v) for v in value)
    if isinstance(value, dict):  # leaves kept inline: a call per key and number was most of a fleet job's plain()
        return {k if isinstance(k, _LEAVES) else plain(k): v if isinstance(v, _LEAVES) else plain(v)
                for k, v in value.items()}
    return value
