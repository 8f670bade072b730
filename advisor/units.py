"""Binary size units, the one home for them (the replayer keeps its own: it imports only numpy and mpi4py)."""

from __future__ import annotations

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
