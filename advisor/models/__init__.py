"""Learned models of what a file system delivers for an I/O pattern (docs/models.md).

features (same names for replay plans, IOR runs, Darshan jobs; sources/ computes them) ->
design + calibrate (a measured sweep on a mount) and rows (training rows from calibration
data, IOR logs, Darshan logs) -> train (gradient boosting, intervals, CV, importances) ->
store (safe model files) -> predict/expect (fix speedups, anomalies in diagnosis) and
check (predictions against the replayer). bandwidth adapts the fleet's history to the same
machinery.
"""
