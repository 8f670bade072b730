"""advisor.arrays gives what numpy's np.unique, np.median, np.isin and np.union1d give: values,
dtype and order, on a real log's record ids, ranks and times and on random arrays with ties and NaNs."""

from __future__ import annotations

import numpy as np

from advisor import arrays
from advisor.ingest.darshan_log import load

LOGS = ("darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan",
        "darshan-logs/darshan_logs/hdf5_diagonal_write_only/hdf5_diagonal_write_half_flush_dxt.darshan")


def _same(ours, numpys) -> None:
    assert type(ours) is type(numpys)
    assert np.asarray(ours).dtype == np.asarray(numpys).dtype
    assert np.array_equal(ours, numpys, equal_nan=True)
    assert np.array_equal(np.signbit(ours), np.signbit(numpys))  # -0.0 where numpy keeps it


def _real_arrays(corpus) -> list[np.ndarray]:
    out = []
    for name in LOGS:
        profile = load(corpus / name)
        for rec in profile.records.values():
            out += [rec.ids, rec.ranks, rec.ids[: len(rec.ids) // 2]]
            out += [v for k, v in rec.fcounters.items() if k.endswith("_TIME")][:3]
    assert len(out) > 20
    return out


def _random_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(24)
    out = []
    for dtype in (np.int64, np.uint64, np.int32, np.float64, np.float32):
        for size in (1, 2, 3, 4, 7, 100, 1001):
            a = rng.integers(0, 40, size).astype(dtype)  # ties
            if a.dtype.kind == "f" and size > 3:
                a[rng.integers(0, size, 2)] = np.nan
                a[0], a[1] = -0.0, 0.0
            out += [a, (rng.standard_normal(size) * 1e3).astype(dtype) if a.dtype.kind == "f" else a[::-1]]
    return out


def test_the_same_as_numpy(corpus):
    cases = _real_arrays(corpus) + _random_arrays()
    for a in cases:
        _same(arrays.unique(a), np.unique(a))
        if a.size:
            _same(arrays.median(a), np.median(a))
        half = a[: max(1, a.size // 3)]
        _same(arrays.isin(a, half), np.isin(a, half))
        _same(arrays.isin(a, half, kind="sort"), np.isin(a, half, kind="sort"))
        _same(arrays.union(half, a[::2]), np.union1d(half, a[::2]))
    grid = np.stack([cases[0][:50] % 3, cases[1][:50] % 2])
    _same(arrays.unique(grid, axis=1), np.unique(grid, axis=1))
    _same(arrays.median([1.5, 2.5, 4.0]), np.median([1.5, 2.5, 4.0]))  # a list, as the facts pass
