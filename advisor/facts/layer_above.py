"""A layer's time above the layer below it: the one definition (docs/layers.md, "One definition of
"time above""), used by the layer account and by MPI008's per-call overhead, nowhere else."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.facts import FactContext, Missing
from advisor.facts._darshan import darshan_like
from advisor.facts.layer_views import BY_NAME, NO_FILE, Layer, ModuleView, carrier, files_of, layer_time, views_of
from advisor.facts.sanity import LayerTime
from advisor.metrics import SPECS


@dataclass
class Above:
    """A layer's time above the layer below it (:func:`time_above`), seconds per process: per file
    both saw (`keys`, sorted), and over those files as the account bounds every layer's time."""

    layer: str
    below: str  # "" when no layer below has records
    keys: np.ndarray
    upper: np.ndarray  # the layer's seconds per file, bounded by the file's records' lives
    lower: np.ndarray  # the layer below's: its mean per process, or what the ranks waited for
    upper_total: float | None = None  # None: not timed
    lower_total: float | None = None

    @property
    def per_file(self) -> np.ndarray:
        return np.maximum(self.upper - self.lower, 0.0)

    @property
    def total(self) -> float | None:
        if self.upper_total is None or self.lower_total is None:
            return None
        return max(0.0, self.upper_total - self.lower_total)

    def of(self, key: int) -> float | None:
        i = int(np.searchsorted(self.keys, np.uint64(key)))
        return float(self.per_file[i]) if i < len(self.keys) and self.keys[i] == key else None


def time_above(ctx: FactContext, layer: str, kinds: tuple[str, ...] | None = None, waited: bool = False) -> Above:
    """The one definition of a layer's time above the layer below (docs/layers.md, "Own time"): on the
    files both saw, the layer's seconds per process less the layer below's (of `kinds`: all by default).

    What is subtracted depends on the question. The layer account asks where the mean process's time
    went: both sides are means per process, so their difference is the time a process spent inside
    the layer's calls and not inside its own calls below (`waited=False`; its totals are bounded like
    every layer's time). MPI008 asks what fewer, larger collective calls would save: with collective
    buffering only the aggregators call POSIX and every rank waits inside the collective call for
    the slowest of them, so what the ranks waited for the file system (the slowest rank's time on a
    shared file when Darshan kept it, never less than the mean) is data movement that larger calls
    do not remove (`waited=True`); subtracting the mean would count that wait as per-call overhead."""
    darshan_like(ctx)
    _present, views, per_file, runtime = views_of(ctx)
    if layer not in per_file:
        raise Missing(f"no {layer} records in the log")
    spec = BY_NAME[layer]
    below, same, matched = carrier(spec, per_file)
    if not below:
        return Above(layer, "", same, np.zeros(0), np.zeros(0))
    here = files_of(spec, views, runtime, kinds)
    there = files_of(BY_NAME[below], views, runtime, kinds)
    on = same if matched else same[:0]
    upper = here.time[np.searchsorted(here.keys, on)]
    lower = there.time[np.searchsorted(there.keys, on)]
    if waited:
        lower = np.maximum(lower, _slowest_rank(ctx, BY_NAME[below], views, on))
    unplaced = per_file[layer].index(NO_FILE) is not None  # records naming no file: whole layers compared
    top = layer_time(ctx, spec, views, None if unplaced or not matched else same, runtime)
    bottom = layer_time(ctx, BY_NAME[below], views, same, runtime)
    return Above(layer, below, on, upper, lower, _kinds(top, kinds), _kinds(bottom, kinds))


def _kinds(t: LayerTime | None, kinds: tuple[str, ...] | None) -> float | None:
    if t is None:
        return None
    return t.total if kinds is None else sum(getattr(t, k) for k in kinds)


def _slowest_rank(ctx: FactContext, layer: Layer, views: dict[str, ModuleView], files: np.ndarray) -> np.ndarray:
    """Per file of `files`, the slowest rank's seconds on it where a shared record kept them."""
    out = np.zeros(len(files))
    for module in layer.modules:
        view, rec = views.get(module), ctx.profile.records.get(module)
        name = f"{SPECS[module].prefix}_F_SLOWEST_RANK_TIME"
        if view is None or not rec.has(name):
            continue
        at = np.searchsorted(files, view.keys)
        hit = view.shared & (at < len(files)) & (files[np.minimum(at, len(files) - 1)] == view.keys)
        np.maximum.at(out, at[hit], np.clip(np.asarray(rec.get(name), np.float64)[hit], 0, None))
    return out
