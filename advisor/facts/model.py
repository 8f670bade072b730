"""Facts from a learned model's expectation of the job (``ioadvisor diagnose --model``).

The model stage of :mod:`advisor.pipeline` computes the model's expectation of the job's
own pattern (:class:`advisor.expectation.JobExpectation`) before the engine runs and hands
it to the fact context; without a model these facts do not apply and the rules are
skipped silently.
"""

from __future__ import annotations

import math

from advisor.facts import FactContext, Missing, NotApplicable, fact
from advisor.units import MiB


def _expectation(ctx: FactContext):
    exp = ctx.expectation
    if exp is None:
        raise NotApplicable("no learned model was given (--model or [model] path)")
    if exp.reason:
        raise Missing(exp.reason)
    return exp


def _finite(value: float) -> float:
    if value is None or not math.isfinite(value):
        raise Missing("the model gave no finite prediction for this job")
    return float(value)


@fact("model_measured_rate", "rate", "The job's measured bandwidth: bytes / I/O seconds of its slowest rank (bytes/s).",
      label="measured bandwidth")
def model_measured_rate(ctx: FactContext) -> float:
    return _finite(_expectation(ctx).measured_mib_s) * MiB


@fact("model_expected_rate", "rate", "Bandwidth the model expects for the job's pattern on its file system.",
      label="bandwidth the model expects")
def model_expected_rate(ctx: FactContext) -> float:
    return _finite(_expectation(ctx).expected_mib_s) * MiB


@fact("model_expected_low_rate", "rate", "Lower end of the model's interval for the job's bandwidth.",
      label="lower end of the expected bandwidth")
def model_expected_low_rate(ctx: FactContext) -> float:
    return _finite(_expectation(ctx).expected_low_mib_s) * MiB


@fact("model_shortfall", "ratio", "How many times longer the job's I/O took than the model expects.",
      label="time taken / time expected")
def model_shortfall(ctx: FactContext) -> float:
    return _finite(_expectation(ctx).shortfall)


@fact("model_lost_s", "seconds", "I/O seconds (slowest rank) beyond what the model expects for the pattern.",
      label="time beyond the expectation")
def model_lost_s(ctx: FactContext) -> float:
    exp = _expectation(ctx)
    return max(_finite(exp.measured_s - exp.expected_s), 0.0)


@fact("model_extrapolation", "text", "Features of the job outside the model's training ranges.",
      label="features outside the training data")
def model_extrapolation(ctx: FactContext) -> list[str]:
    return list(_expectation(ctx).extrapolation)


@fact("model_name", "text", "What the model is and what it was trained on.", label="model")
def model_name(ctx: FactContext) -> str:
    return _expectation(ctx).model
