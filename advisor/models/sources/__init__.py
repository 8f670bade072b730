"""Workloads as :class:`advisor.models.features.Part` records: from a replay plan, an IOR run
or a Darshan job profile (one module per source)."""
