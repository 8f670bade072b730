"""How often the cyclic garbage collector runs in ioadvisor's own processes.

A command allocates its modules, the rule catalogue and a log's facts in bursts of objects
that nearly all live until the end: at Python's default threshold (700 allocations) a short
`diagnose` ran about a hundred collections over them (some 5 % of its CPU), and a fleet
worker spent a tenth of its CPU in collections. Garbage in cycles is still collected, every
10,000 allocations instead of 700; reference counting frees the rest at once as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLD = 10_000


def for_bursts() -> None:
    """Collect young objects every :data:`THRESHOLD` allocations (older generations as before)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(THRESHOLD, older, oldest)


def settled() -> None:
    """What this process has loaded (modules, rules) stays: never scan it again (gc.freeze)."""
    gc.freeze()


@contextmanager
def loading() -> Iterator[None]:
    """No collection while the block imports modules or loads data that live as long as the
    process, and none of it scanned afterwards (frozen): a `diagnose` of a small log had spent
    some 30-45 ms of its 0.5 s of CPU collecting among its imports, which leave next to no garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        settled()
        if enabled:
            gc.enable()
