"""The distinct fixes of a diagnosis, best first: what to apply first, read by every reporter.

Several findings often propose one fix (IO001 and IO002 both coalesce to 4 MiB). A fix is
summarised once, with the codes that propose it, what its replay measured and what a
learned model predicted. Only findings of warn or high propose a fix here: an info finding
(often of low confidence, or of a small share of the run) keeps its advice on its card. A fix measured
slower, or predicted slower (the model's interval below 1), is never ranked: it goes to the
"do not apply as is" list with what said so. The others, best first: by the highest severity
of the findings proposing them; within one severity the fixes with a speedup (measured when
the replay measured one, else predicted) of at least 1, largest first, then the fixes nothing
measured or predicted, by the time their findings say the fix would win back (what they lose
less what the fix itself costs, advisor.facts.fix_cost), then by their confidence.
Kept free of heavy imports: the hook and fleet workers serialize diagnoses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.formatting import fmt_bytes, fmt_secs, fmt_speedup, fmt_speedup_range, shell_word
from advisor.verification import DECIDED, Verification

if TYPE_CHECKING:
    from advisor.findings import Finding
LAYOUTS = {"shared": "one shared file for all ranks", "fpp": "one file per process"}
RANKED = ("high", "warn")  # the severities whose findings put a fix into the ranking, highest first
CONFIDENCE = ("high", "medium", "low")  # a finding's confidence levels, surest first
HINT_SIZES = ("cb_buffer_size", "striping_unit")  # ROMIO hints given in bytes


def fix_key(fix: dict[str, Any]) -> str:
    """The identity of a fix dict: findings with equal keys propose the same replay transform."""
    return json.dumps(fix, sort_keys=True)


def proposed_fixes(findings: list[Finding]) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """fix key -> (the fix, the codes of the findings proposing it), in the findings' order."""
    return {key: (group[0].fix, [f.code for f in group]) for key, group in _by_fix(findings).items()}


def _by_fix(findings: list[Finding]) -> dict[str, list[Finding]]:
    """fix key -> the findings proposing that fix, in the findings' order."""
    out: dict[str, list[Finding]] = {}
    for f in findings:
        if f.fix:
            out.setdefault(fix_key(f.fix), []).append(f)
    return out


@dataclass
class FixSummary:
    """One distinct fix: who proposes it, what it measured and what a model predicts."""

    fix: dict[str, Any]
    action: str  # the fix in words: "coalesce requests to 4 MiB"
    codes: list[str] = field(default_factory=list)
    cost_s: float = 0.0  # the largest time lost among the findings proposing it (rule estimate)
    # the most time the fix would win back by those findings' estimates (cost_s less what the fix
    # itself costs: advisor.facts.fix_cost); ranks the fixes no replay or model rated
    recovered_s: float = 0.0
    confidence: str = ""  # the surest confidence level among those findings (high, medium, low)
    severity: str = "warn"  # the highest among the findings proposing it
    verdict: str | None = None  # of the replay, when one ran
    speedup: float | None = None  # measured
    ci95: list[float] | None = None
    target: str | None = None  # where it was measured
    fstype: str | None = None
    load: dict[str, Any] | None = None  # the measuring node's load (Verification.load)
    reason: str | None = None  # the replay's verdict in words (advisor.verification.sentence)
    predicted_speedup: float | None = None
    predicted_interval: list[float] | None = None
    time_saved_s: float | None = None  # of the job as recorded: measured when replayed, else predicted
    saving: str = ""  # "measured" or "predicted": where time_saved_s comes from
    predicted_reason: str = ""  # why the model gave no number ("outside what this model measured (...)")
    interval_basis: str = ""  # what the interval is calibrated for when not the model's own (speedup.width_for)
    versus_measured: str = ""  # the measured speedup against the predicted interval, in words

    @property
    def measured(self) -> bool:
        """The replay decided (improved, regressed, equivalent): its speedup ranks the fix."""
        return self.verdict in DECIDED and isinstance(self.speedup, (int, float))

    @property
    def slower(self) -> bool:
        """The replay measured the job slower with this fix."""
        return self.measured and self.verdict == "regressed"

    @property
    def predicted_slower(self) -> bool:
        """Not measured, and a model predicts it slower: the top of its interval is below 1."""
        top = self.predicted_interval[1] if _pair(self.predicted_interval) else None
        return not self.measured and top is not None and top < 1

    @property
    def avoid(self) -> bool:
        """Measured or predicted slower: listed under "do not apply as is", never ranked."""
        return self.slower or self.predicted_slower

    def merit(self) -> float | None:
        """The speedup that ranks the fix: measured when measured, else predicted."""
        return self.speedup if self.measured else self.predicted_speedup

    def outcome(self) -> str:
        """What is known of the fix's effect, in one line."""
        parts = [measured_text(self)] if self.verdict else []
        if self.saving == "measured" and parts:
            parts[0] += f", {saved_text(self.time_saved_s)} {_saving_basis(self.verdict, self.time_saved_s)}"
        if isinstance(self.predicted_speedup, (int, float)):
            parts.append("predicted " + predicted_text(self.predicted_speedup, self.predicted_interval,
                                                       self.time_saved_s if self.saving != "measured" else None))
            if self.interval_basis:
                parts.append(self.interval_basis)
            if self.versus_measured.startswith("measured") and "outside" in self.versus_measured:
                parts.append(self.versus_measured)
        elif self.predicted_reason:
            parts.append(f"no prediction: {self.predicted_reason}")
        return "; ".join(parts) or "not verified"


def measured_text(s: FixSummary) -> str:
    """The replay's verdict sentence and where it ran ('improved: 2.26x faster (...) on /t (ext4)')."""
    where = f" on {place(s.target, s.fstype, s.load)}" if s.target and s.verdict != "not-verifiable" else ""
    advice = ", do not apply as is" if s.slower else ""
    return f"{s.reason or s.verdict}{where}{advice}"


def predicted_text(speedup: float, interval: Any = None, time_saved_s: Any = None) -> str:
    """'3.81x (1.98x-7.31x), saves ~60.7 ms': a learned model's prediction of a fix."""
    text = fmt_speedup(speedup)
    if band := fmt_speedup_range(interval):
        text += f" ({band})"
    if isinstance(time_saved_s, (int, float)):
        text += ", " + saved_text(time_saved_s)
    return text


def _saving_basis(verdict: str, time_saved_s: float) -> str:
    """How far a measured saving holds: decided ('(measured)'), or only the point an undecided or
    equivalent verdict measured (an inconclusive 1.26x, 0.86x-1.85x, does not save 17 ms for certain)."""
    if verdict == "improved" or time_saved_s <= 0:
        return "(measured)"
    return "(measured, within the +-margin)" if verdict == "equivalent" else "(the measured point, not decided)"


def saved_text(time_saved_s: float) -> str:
    """'saves ~60.7 ms', or 'saves nothing' for a fix that does not make the job faster."""
    return f"saves ~{fmt_secs(time_saved_s)}" if time_saved_s > 0 else "saves nothing"


def place(target: str | None, fstype: str | None, load: Any = None) -> str:
    """'/scratch/t (ext4, load 2.1-5.8 on 2 cores)': where a replay ran, and what ran beside it
    (two measurements of one fix that differ in size usually differ in load)."""
    notes = [fstype] if fstype else []
    if isinstance(load, dict) and all(isinstance(load.get(k), (int, float)) for k in ("start", "end", "cores")):
        # the range its samples saw (min, max) when recorded; older results: the start and the end
        ends = (load["min"], load["max"]) if all(isinstance(load.get(k), (int, float)) for k in ("min", "max")) \
            else (load["start"], load["end"])
        lo, hi = (f"{x:.1f}" for x in sorted(ends))
        span = lo if lo == hi else f"{lo}-{hi}"
        notes.append(f"load {span} on {load['cores']} core{'' if load['cores'] == 1 else 's'}")
    return f"{target} ({', '.join(notes)})" if notes else str(target)


def caution(verification: Verification | None) -> str:
    """The warning a finding's fix carries when its replay measured the job slower, else ''."""
    if verification is None or verification.verdict != "regressed":
        return ""
    where = f" on {place(verification.target, verification.fstype, verification.load)}" if verification.target else ""
    return f"measured slower{where}: do not apply as is"


def fix_summaries(findings: list[Finding]) -> list[FixSummary]:
    """The distinct fixes the warn-or-high `findings` propose, best first, less those measured or
    predicted slower (:func:`fixes_not_to_apply`)."""
    return [s for s in _summaries(findings) if not s.avoid]


def fixes_not_to_apply(findings: list[Finding]) -> list[FixSummary]:
    """The distinct fixes of the warn-or-high `findings` measured or predicted slower, most
    severe and slowest first: what not to apply as is, and why (:meth:`FixSummary.outcome`)."""
    return sorted((s for s in _summaries(findings) if s.avoid),
                  key=lambda s: (RANKED.index(s.severity), s.merit() or 0.0, fix_key(s.fix)))


def _summaries(findings: list[Finding]) -> list[FixSummary]:
    summaries = []
    for group in _by_fix([f for f in findings if f.severity in RANKED]).values():
        s = _summary(group[0])  # the replay and the model saw one fix: the first finding says it
        s.codes = [f.code for f in group]
        s.cost_s = max(float(f.cost_s or 0.0) for f in group)
        s.recovered_s = max(float(f.cost_s if f.recovered_s is None else f.recovered_s) for f in group)
        s.confidence = min((_level(f) for f in group), key=CONFIDENCE.index)
        s.severity = min((f.severity for f in group), key=RANKED.index)
        summaries.append(s)
    return sorted(summaries, key=_rank)


def _rank(s: FixSummary) -> tuple:
    """A fix that by its findings' own estimate wins nothing back (its aggregators take longer to
    move the bytes than the small requests lose) after every other one, unless a replay or a model
    rated it. Then severity (an unmeasured high finding's fix before a warn one's); then, as a
    replay or a model rates fixes and not findings, a speedup of at least 1 before no speedup, by
    size. The fixes nothing rated follow the evidence: the time the findings say each fix would win
    back (what they lose less what the fix costs), then the surest confidence, then the time lost."""
    merit = s.merit()
    rated = merit is not None and merit >= 1
    futile = not rated and s.cost_s > 0 and s.recovered_s <= 0
    return (futile, RANKED.index(s.severity), 0 if rated else 1, -(merit or 0.0) if rated else 0.0,
            -s.recovered_s, CONFIDENCE.index(s.confidence or "low"), -s.cost_s, fix_key(s.fix))


def _level(f: Finding) -> str:
    level = (f.confidence or {}).get("level")
    return level if level in CONFIDENCE else "low"


def _summary(f: Finding) -> FixSummary:
    """A fix's summary from the first finding proposing it (the replay and model see one fix)."""
    v, p = f.verification, f.prediction
    return FixSummary(
        fix=dict(f.fix or {}), action=describe(f.fix or {}),
        verdict=v.verdict if v else None, speedup=_number(v.speedup) if v else None,
        ci95=v.ci95 if v and _pair(v.ci95) else None,
        target=v.target if v else None, fstype=v.fstype if v else None, load=v.load if v else None,
        reason=v.reason if v else None,
        predicted_speedup=_number(p.speedup) if p else None,
        predicted_interval=p.interval if p and _pair(p.interval) else None,
        time_saved_s=_number(p.time_saved_s) if p else None, saving=p.saving if p else "",
        predicted_reason=p.reason if p else "", versus_measured=p.versus_measured if p else "",
        interval_basis=p.interval_basis if p else "")


def hints_handoff(fix: dict[str, Any] | None, library: str | None) -> str | None:
    """How a hints fix reaches MPI-IO in a job whose files a library opens (HDF5, PnetCDF): the
    MPI_Info the application fills takes effect only when that library's own call passes it on;
    PnetCDF also reads hints from PNETCDF_HINTS, which needs no rebuild. None for any other fix,
    and for jobs that open their files with MPI-IO themselves (MPI_File_open takes the info)."""
    if not fix or fix.get("transform") != "hints":
        return None
    if library == "HDF5":
        return ("H5Pset_fapl_mpio(fapl, comm, info);  /* HDF5 hands these hints to MPI-IO at the "
                "H5Fcreate/H5Fopen given this fapl */")
    if library == "PnetCDF":
        pairs = ";".join(f"{k}={v}" for k, v in fix.items() if k != "transform")
        return (f"export PNETCDF_HINTS={shell_word(pairs)}  # read by PnetCDF at ncmpi_create/ncmpi_open, "
                "no rebuild (or pass the info to ncmpi_create)")
    return None


# what a finding's advice names when it proposes MPI-IO hints (ROMIO's, Cray MPICH's, PnetCDF's)
HINT_WORDS = ("MPI_Info_set(", "ROMIO_HINTS", "PNETCDF_HINTS", "cb_nodes", "cb_buffer_size", "striping_unit",
              "striping_factor", "romio_")
# HDF5 properties a Darshan log does not record (it has H5F_USE_MPIIO, H5D_USE_MPIIO_COLLECTIVE and the
# chunk sizes, so H5Pset_fapl_mpio, H5Pset_dxpl_mpio and H5Pset_chunk are read from it)
UNRECORDED_H5P = ("H5Pset_all_coll_metadata_ops", "H5Pset_coll_metadata_write", "H5Pset_meta_block_size",
                  "H5Pset_alignment", "H5Pset_chunk_cache", "H5Pset_libver_bounds")
UNTRACED_H5P = ("H5Pset_chunk_cache", "H5Pset_libver_bounds")  # nor does a Recorder 2.5 trace


def _unseen_hints(hints_passed: int) -> str:
    """Why the input cannot say which MPI-IO hints the job sets (`hints_passed`: see :func:`unchecked`)."""
    if hints_passed < 0:
        return "A Recorder trace does not record MPI-IO hints (it prints the info object as a pointer)"
    if hints_passed:
        return (f"The job hands MPI-IO an info object ({hints_passed:,} times, MPIIO_HINTS), which may hold no "
                "hints at all (IOR's is empty); Darshan records neither the hints in it nor those of a "
                "ROMIO_HINTS file")
    # none passed: hints can still come from the environment, which no input records
    return "Hints given in a ROMIO_HINTS file (or MPICH_MPIIO_HINTS) leave no trace in the input"


def unchecked(text: str, commands: list[str], fix: dict[str, Any] | None, hints_passed: int | None,
              properties_recorded: bool | None) -> str | None:
    """What the input could not check about the settings a finding's advice (`text`, `commands`, `fix`)
    proposes: whether the job already makes them. `hints_passed` is the fact mpiio_hints_passed (info
    objects handed to MPI-IO, not hints: an info may be empty; -1: the input cannot tell; 0 still leaves the
    hints of a ROMIO_HINTS file unseen; None: the job does not use MPI-IO, so it sets no hints to check),
    `properties_recorded` the fact hdf5_properties_recorded. None when there is nothing the input left unchecked."""
    said = []
    hints = (fix or {}).get("transform") == "hints" or any(h in c for c in [text, *commands] for h in HINT_WORDS)
    if hints and hints_passed is not None:
        said.append(_unseen_hints(hints_passed) + ", so whether the job already sets these is not checked: set "
                    "only those it does not.")
    unseen = UNTRACED_H5P if properties_recorded else UNRECORDED_H5P
    names = [p for p in unseen if any(p + "(" in c for c in commands)]
    if names:
        calls = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        them = "them" if len(names) > 1 else "it"
        said.append(f"Recorder 2.5 does not trace {calls}, so whether the job already calls {them} is not checked: "
                    f"add {them} only where it does not." if properties_recorded else
                    f"Darshan records no HDF5 property list, so whether the job already calls {calls} is not "
                    "checked: add only the calls it does not make.")
    return " ".join(said) or None


def describe(fix: dict[str, Any]) -> str:
    """A fix dict in words: {"transform": "coalesce", "transfer_size": 4194304} ->
    'coalesce requests to 4 MiB'."""
    match fix.get("transform"):
        case "coalesce":
            return f"coalesce requests to {_size(fix.get('transfer_size'))}"
        case "collective":
            return f"collective MPI-IO with {_count(fix.get('cb_nodes'), 'aggregator')}"
        case "aggregate":
            return f"aggregate I/O through {_count(fix.get('aggregators'), 'rank')}"
        case "stripe":
            return _stripe_text(fix)
        case "fsync" if fix.get("every_writes"):
            return f"fsync every {_count(fix['every_writes'], 'write')} and at close"
        case "fsync" if fix.get("every_bytes"):
            return f"fsync every {_size(fix['every_bytes'])} written and at close"
        case "fsync" if fix.get("mode", "at-close") == "at-close":
            return "fsync once at close"
        case "align":
            return f"align requests to {_size(fix.get('boundary'))} boundaries"
        case "layout" if str(fix.get("mode")) in LAYOUTS:
            return LAYOUTS[str(fix["mode"])]
        case "sequential":
            return "access files sequentially"
        case "mpiio_calls":
            return f"MPI-IO calls of up to {_size(fix.get('call_bytes'))} per rank"
        case "avoid-targets" if fix.get("targets"):
            return f"keep new files off storage target{'s' if len(fix['targets']) > 1 else ''} " \
                   f"{', '.join(map(str, fix['targets']))}"
        case "avoid-targets":
            return "keep new files off the slow storage targets"
        case "hints" if len(fix) > 1:
            return "ROMIO hints: " + ", ".join(f"{k}={_size(v) if k in HINT_SIZES else v}"
                                               for k, v in fix.items() if k != "transform")
    params = ", ".join(f"{k}={v}" for k, v in sorted(fix.items()) if k != "transform")
    return f"{fix.get('transform')} ({params})" if params else str(fix.get("transform"))


def _stripe_text(fix: dict[str, Any]) -> str:
    """'stripe over 4 OSTs in 1 MiB stripes', as the directory's default when its scope is dir."""
    count = fix.get("count")
    text = "stripe over all OSTs" if count == -1 else f"stripe over {_count(count, 'OST')}"
    if fix.get("size"):
        text += f" in {_size(fix.get('size'))} stripes"
    return f"set the directory's default layout: {text}" if fix.get("scope") == "dir" else text


def _size(n: Any) -> str:
    return fmt_bytes(n) if isinstance(n, (int, float)) else "?"


def _count(n: Any, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _pair(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and len(x) == 2 and all(_number(v) is not None for v in x)
