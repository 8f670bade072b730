"""`np.unique` and `np.median` as numpy gives them, without importing `numpy.ma`.

numpy 2.x's plain ``np.unique(a)`` asks ``np.ma.is_masked(a)`` and ``np.median`` of floats
asks ``np.ma.isMaskedArray``: either imports the masked-array package, some 20 ms of a
one-log diagnosis (4 % of its CPU) for arrays that are never masked. These two give the
same values, dtype and order (tests/test_arrays.py compares them with numpy's own).
"""

from __future__ import annotations

import numpy as np


def unique(values, axis=None) -> np.ndarray:
    """The sorted distinct values (or columns, rows: `axis`), as ``np.unique(values, axis=axis)``:
    numpy's sorting path (which skips the masked-array check once counts are asked for), the
    counts dropped."""
    return np.unique(values, return_counts=True, axis=axis)[0]


def median(values):
    """``np.median(values)``; a non-empty 1-d float array is partitioned here, as numpy does it,
    so that its NaN check does not import numpy.ma (integers and other shapes go to numpy,
    whose path for them does not)."""
    a = np.asanyarray(values)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind != "f" or type(a) is not np.ndarray:
        return np.median(a)
    size = a.size
    middle = [size // 2 - 1, size // 2] if size % 2 == 0 else [(size - 1) // 2]
    part = np.partition(a, [*middle, -1])  # the last index too: where a NaN would sort
    index = size // 2
    mid = np.mean(part[index:index + 1] if size % 2 else part[index - 1:index + 1], axis=0)
    return part[-1] if np.isnan(part[-1]) else mid


def isin(element, test_elements, kind=None) -> np.ndarray:
    """``np.isin(element, test_elements, kind=kind)`` for arrays of one dtype. Numpy compares
    few tested values one by one (no np.unique: called as is); for more, its sort path is taken
    here, made distinct first as numpy does, with :func:`unique` for the tested values."""
    element, tested = np.asarray(element), np.asarray(test_elements)
    if tested.size < 10 * element.size ** 0.145:  # numpy's own test for its loop
        return np.isin(element, tested, kind=kind)
    values, inverse = np.unique(element, return_inverse=True)
    found = np.isin(values, unique(tested), assume_unique=True, kind=kind)
    return found[inverse.ravel()].reshape(element.shape)


def union(first, second) -> np.ndarray:
    """``np.union1d(first, second)``: the sorted distinct values of both."""
    return unique(np.concatenate((first, second), axis=None))
