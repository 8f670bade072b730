"""Loads libdarshan-util once, before forking parsing children (advisor.ingest.isolate).

Imported by the parsing forkserver, or by a single-threaded caller before its second
child: every child then starts with the library mapped and its cffi declarations
parsed, so a log costs a fork instead of a library load.
"""

from advisor.ingest import darshan_dxt, darshan_log, darshan_records  # noqa: F401
from advisor.ingest.darshan_lib import bindings, counter_names, pydarshan_version

bindings()
pydarshan_version()
for _prefix in ("POSIX", "MPIIO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "DFS", "DAOS"):
    counter_names(_prefix, False)
    counter_names(_prefix, True)
