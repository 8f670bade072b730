"""One pipeline for every entry point, in one order.

    ingest -> expectation (learned model) -> engine (one forward-chaining pass)
           -> predictions (model) -> verification (replay) -> figures -> campaign

``ioadvisor diagnose``, the Slurm hook, fleet workers, ``ioadvisor replay`` and the model
check all call :func:`run`; what each one runs is its :class:`Stages` value, built with
:meth:`Stages.from_config`, so the site's ``[model] path`` applies wherever a job is
diagnosed. An input that cannot be read or diagnosed gives a :meth:`Diagnosis.failed`
result and the others go on; a wrong site config, rule set or model raises, because it
would fail every input alike.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.config import ReplayConfig, SiteConfig
from advisor.errors import AdvisorError, ConfigError, InputError
from advisor.gcpolicy import loading
from advisor.ingest import start_profile
from advisor.profile import JobProfile
from advisor.records import Frozen

# The engine and the findings (with numpy's friends, Jinja2 and a hundred dataclasses) are
# imported by run() once the first input's parse has started: in a one-log diagnose that
# third of the start-up runs beside the parse, on the other core.
if TYPE_CHECKING:
    from advisor.expectation import JobExpectation
    from advisor.findings import Diagnosis
    from advisor.models.train import Model


class Verify(Frozen):
    """Replay each fix on `target` and measure it (``--verify``): `repeat` rounds, or (None)
    until the sequential test decides within the site's ``[replay]`` settings."""

    target: Path
    repeat: int | None = None
    nprocs: int | None = None
    scale: float | None = None
    settings: ReplayConfig | None = None
    quiet: bool = False  # no progress lines on stderr (``--json -``)


class Stages(Frozen):
    """Which stages run after ingest and the engine (which always run)."""

    model: str | None = None  # a model file, or "default" (the one shipped); None: no model stage
    verify: Verify | None = None
    figures: bool = False  # the compact plot data the HTML report draws
    campaign: bool = False  # one campaign diagnosis over the IOR runs among the inputs
    baselines: tuple[str, ...] = ()  # baseline IOR runs of the campaign
    isolate: bool = True  # parse each input in a child process (time and memory limits, crash safety)
    timeout_s: float = 120.0  # of one isolated parse

    @classmethod
    def from_config(cls, config: SiteConfig, *, model: str | None = None, **choices) -> Stages:
        """An entry point's choice of stages; the model defaults to the site's ``[model] path``."""
        return cls(model=model or config.section("model").path or None, **choices)


@dataclass
class Result:
    """One input's diagnosis, and its profile when the input could be read."""

    path: str
    diagnosis: Diagnosis
    profile: JobProfile | None = None
    internal: bool = False  # failed on a bug of ours, not on its input


@dataclass
class Run:
    """Every input's result, in input order (then the campaign's), and notes for the user."""

    results: list[Result] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. baseline files skipped, with the reason

    @property
    def diagnoses(self) -> list[Diagnosis]:
        """The usable diagnoses (inputs that failed left out)."""
        return [r.diagnosis for r in self.results if r.diagnosis.error is None]

    @property
    def failures(self) -> list[Diagnosis]:
        return [r.diagnosis for r in self.results if r.diagnosis.error is not None]

    @property
    def exit_status(self) -> int:
        """0 when every input was diagnosed, 2 when some input was unusable, 3 after a bug of ours."""
        if any(r.internal for r in self.results):
            return 3
        return 2 if self.failures else 0


def internal_error(path: str, exc: BaseException) -> str:
    """The one-line reason of an input that met a bug (the traceback: IOADVISOR_DEBUG=1)."""
    return (f"{path}: internal error: {type(exc).__name__}: {exc} "
            "(set IOADVISOR_DEBUG=1 for a traceback and please report it)")


Input = str | Path | JobProfile | InputError  # an InputError: an input already found unusable


def run(inputs: Sequence[Input], stages: Stages, config: SiteConfig) -> Run:
    """Every stage `stages` asks for over every input (paths, or profiles already loaded)."""
    pending = _ingest(inputs, stages)
    first = next(pending, None)  # its parse runs in its child while the rules and the model load
    with loading():  # the engine, its rules and the model live as long as the process
        from advisor.engine import check_thresholds
        from advisor.engine.rules import load_catalogue
        from advisor.findings import Diagnosis

        try:
            check_thresholds(config, load_catalogue())  # a wrong config or model fails once, before any input
            model = load_model(stages.model)
        except AdvisorError:
            pending.close()
            if first is not None and hasattr(first[1], "__self__"):
                first[1].__self__.cancel()  # an isolated parse (advisor.ingest.isolate.Isolated.result)
            raise
    out = Run()
    for path, profile_of in itertools.chain([first] if first else [], pending):
        try:
            profile = profile_of()
            diagnosis = diagnose_profile(profile, stages, config, model)
        except ConfigError:
            raise
        except AdvisorError as exc:
            out.results.append(Result(path, Diagnosis.failed(path, str(exc))))
            continue
        except Exception as exc:  # a bug met on one input must not cost the others their results
            if os.environ.get("IOADVISOR_DEBUG"):
                raise
            out.results.append(Result(path, Diagnosis.failed(path, internal_error(path, exc)), internal=True))
            continue
        out.results.append(Result(path, diagnosis, profile))
    if stages.campaign:
        out.results += _campaign(out, stages, config)
    return out


def diagnose_profile(profile: JobProfile, stages: Stages, config: SiteConfig,
                     model: Model | None = None) -> Diagnosis:
    """The stages after ingest, for one profile (`model`: loaded from ``stages.model`` if None)."""
    from advisor.metrics import shared_tables

    with shared_tables():  # the facts, the model and the figures read the same per-file table
        return _stages(profile, stages, config, model)


def _stages(profile: JobProfile, stages: Stages, config: SiteConfig, model: Model | None) -> Diagnosis:
    model = model if model is not None else load_model(stages.model)
    expectation = _expectation(model, profile)
    diagnosis = diagnose(profile, config, expectation=expectation)
    if model is not None:
        _predict(model, profile, diagnosis, expectation)
    if stages.verify is not None:
        _verify(profile, diagnosis, stages.verify)
        _learn(profile, diagnosis, stages.verify, config, model)
    if stages.figures:
        diagnosis.figures = _figures(profile)
    return diagnosis


def diagnose(profile: JobProfile, config: SiteConfig, **choices) -> Diagnosis:
    """The engine's diagnosis of `profile` (:func:`advisor.engine.diagnose`)."""
    from advisor import engine

    return engine.diagnose(profile, config, **choices)


def _ingest(inputs: Sequence[Input], stages: Stages) -> Iterator[tuple[str, Callable[[], JobProfile]]]:
    """(path, profile getter) per input. Isolated parses start one input ahead: a log parses
    in its child on the other core while this process loads the rules or diagnoses the
    input before it."""
    if not inputs:
        return
    pending = [_start(item, stages) for item in inputs[:1]]
    for following in [*inputs[1:], None]:
        if following is not None:
            pending.append(_start(following, stages))
        yield pending.pop(0)


def _start(item: Input, stages: Stages) -> tuple[str, Callable[[], JobProfile]]:
    if isinstance(item, JobProfile):
        return item.source.path, lambda: item
    if isinstance(item, InputError):
        return item.path, _raising(item)
    path = str(item)
    try:
        return path, start_profile(path, timeout_s=stages.timeout_s, isolate=stages.isolate)
    except Exception as exc:  # noqa: BLE001 -- raised again, for this input alone, by run()
        return path, _raising(exc)


def _raising(error: Exception) -> Callable[[], JobProfile]:
    def failed() -> JobProfile:
        raise error

    return failed


# The model, replay and figure stages import their code when they run: scikit-learn, the
# replayer and the plotting code would otherwise cost every hook and fleet start-up even
# when the site runs none of them (bench/hook.py: p99 < 2 s).

def load_model(model_path: str | None) -> Model | None:
    """The model of the model stage (None without one); InputError when it cannot be loaded."""
    if not model_path:
        return None
    from advisor.models.predict import load

    return load(model_path)


def _expectation(model: Model | None, profile: JobProfile) -> JobExpectation | None:
    if model is None:
        return None
    from advisor.models.expect import expectation

    return expectation(model, profile)


def _predict(model: Model, profile: JobProfile, diagnosis: Diagnosis, expectation: JobExpectation) -> None:
    from advisor.models.predict import predict_findings

    predict_findings(model, profile, diagnosis, expectation)


def _verify(profile: JobProfile, diagnosis: Diagnosis, verify: Verify) -> None:
    from advisor.verify import verify_findings

    from advisor.report.progress import steps

    name = str(diagnosis.source.get("path", "") or "the job").rsplit("/", 1)[-1]
    with steps(f"replaying {name} on {verify.target}", quiet=verify.quiet) as on_progress:
        verify_findings(profile, diagnosis, verify.target, verify.repeat, verify.nprocs, verify.scale,
                        settings=verify.settings, on_progress=on_progress)


def _learn(profile: JobProfile, diagnosis: Diagnosis, verify: Verify, config: SiteConfig,
           model: Model | None) -> None:
    """After a replay: predictions beside the measurements, and the measured fixes appended to the
    site's model data (``[model] learn_from_verify``)."""
    from advisor.errors import AdvisorError
    from advisor.models.learn import record

    if model is not None:
        from advisor.models.predict import against_measured

        against_measured(diagnosis)
    try:
        record(profile, diagnosis, config.section("model"), verify.nprocs, verify.scale)
    except (AdvisorError, OSError) as exc:  # the diagnosis stands without the site's data
        diagnosis.source.setdefault("notes", []).append(f"measured fixes not kept for the site's model: {exc}")


def _figures(profile: JobProfile) -> dict:
    from advisor.report.figures import figure_data

    return figure_data(profile)


CAMPAIGN_KINDS = ("ior", "iozone")
"""The kinds of input :func:`advisor.campaign.campaign_runs` makes campaigns of."""


def _campaign(done: Run, stages: Stages, config: SiteConfig) -> list[Result]:
    """A campaign diagnosis per benchmark (IOR, IOzone throughput runs) with two or more runs among
    the inputs (or one and a baseline)."""
    if not any(r.profile.kind in CAMPAIGN_KINDS for r in done.results if r.profile is not None):
        return []  # no run of a benchmark: the campaign code and the IOR and IOzone readers stay unloaded
    # imported here: a Darshan log's diagnosis needs neither (a tenth of diagnose's start-up)
    from advisor.campaign import campaign_runs, load_runs, thread_counts
    from advisor.ingest.iozone import IozoneProfile

    def scales(runs: list[JobProfile]) -> bool:  # one IOzone output of several thread counts is a sweep
        return len(runs) >= 2 or (isinstance(runs[0], IozoneProfile) and len(thread_counts(runs[0])) >= 2)

    groups = [runs for runs in campaign_runs([r.profile for r in done.results if r.profile is not None])
              if scales(runs) or stages.baselines]
    if not groups:
        return []
    base, skipped = load_runs(list(stages.baselines))
    done.notes += [f"baseline skipped: {reason}" for reason in skipped]
    if stages.baselines and not base:
        raise ConfigError(f"--baseline: no IOR run nor IOzone run in {', '.join(stages.baselines)}")
    out = []
    for runs in groups:
        diagnosis = diagnose_campaign(runs, config, [b for b in base if type(b) is type(runs[0])])
        out.append(Result(diagnosis.source.get("path", "campaign"), diagnosis))
    return out


def diagnose_campaign(profiles: list[JobProfile], config: SiteConfig,
                      baseline_profiles: list[JobProfile] | None = None) -> Diagnosis:
    """Campaign rules over the IOR runs of one study (and its baseline): one Diagnosis."""
    from advisor.campaign import build_campaign, campaign_data, campaign_profile, figure_data

    campaign = build_campaign(profiles, config, baseline_profiles)
    if not campaign.curves:
        raise InputError(campaign_profile(campaign).source.path,
                         "no IOR test with a task count and a result, nor IOzone throughput result in kB/s")
    diagnosis = diagnose(campaign_profile(campaign), config)
    diagnosis.source["runs"] = list(campaign.sources)
    figures = figure_data(campaign, config.system.osts)
    # the knees drawn are the ones CAM001 reports (same significance threshold)
    figures["knees"] = [{"label": k["curve"], "tasks": k["tasks"], "bw_mib_s": k["bw_mib_s"]}
                        for f in diagnosis.findings if f.code == "CAM001"
                        for k in f.evidence.get("campaign_knees", [])]
    diagnosis.figures["campaign"] = figures
    diagnosis.data["campaign"] = campaign_data(campaign)
    return diagnosis
