"""`ioadvisor tune`: search each fix's settings by replaying the job (docs/tune.md).

:mod:`advisor.tune.space` (what is searched), :mod:`advisor.tune.race` (how the search decides),
:mod:`advisor.tune.search` (the replays), :mod:`advisor.tune.result` (what it found),
:mod:`advisor.report.tune` (how reporters show it: terminal lines and the HTML section).
"""
