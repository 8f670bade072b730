"""The rule catalogue: data files read by advisor.engine (installed as advisor._rules)."""
