"""Many chains of length-prefixed entries walked together, one numpy step per link.

Recorder's ``.cst`` tables and ``.cfg`` grammars are lists of variable-length entries, each
head saying where the next one starts: finding the entries is sequential within a file, but
1,024 ranks' files are 1,024 independent chains. Walking them in lockstep costs one array step
per link of the longest chain (FLASH: 1,496 signature entries, 255 rules) instead of one Python
step per entry of every file (710,000 and 220,000).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_WORD = np.arange(4)


def walk(first: np.ndarray, count: np.ndarray,
         step: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The positions of every chain's `count` entries (chain after chain) and where each chain
    ends. Chain c starts at `first[c]`; `step(positions)` gives each entry's length. `step` must
    read safely whatever the position (a damaged file's chain may run anywhere): the caller
    checks the positions against its files afterwards."""
    count = np.maximum(np.asarray(count, np.int64), 0)
    order = np.argsort(-count, kind="stable")  # longest chains first: the chains still walking are a prefix
    counts = count[order]
    pos = np.asarray(first, np.int64)[order].copy()
    base = (np.cumsum(count) - count)[order]
    out = np.empty(int(count.sum()), np.int64)
    walking = np.searchsorted(-counts, -np.arange(int(counts[0]) if counts.size else 0), side="left")
    for i, k in enumerate(walking.tolist()):
        here = pos[:k]
        out[base[:k] + i] = here
        pos[:k] = here + step(here)
    end = np.empty_like(pos)
    end[order] = pos
    return out, end


def int32_at(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian int32 at each byte position of a uint8 buffer (positions clipped into it)."""
    at = np.minimum(np.maximum(at, 0), buf.size - 4)  # (np.clip costs more than the gather)
    return buf[at[:, None] + _WORD].view("<i4").ravel()
