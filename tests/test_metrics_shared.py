"""metrics.shared_tables: a profile's per-file and summary tables computed once within a diagnosis."""

from __future__ import annotations

from advisor import metrics
from advisor.config import load_config
from advisor.ingest.darshan_log import load
from advisor.pipeline import Stages, diagnose_profile

BADOST = "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"


def test_tables_are_shared_within_the_scope_only(corpus):
    profile = load(corpus / BADOST)
    outside = metrics.per_file(profile)
    assert outside and metrics.per_file(profile) is not outside  # no cache outside a scope
    with metrics.shared_tables():
        files, summary = metrics.per_file(profile), metrics.summarize(profile)
        with metrics.shared_tables():  # a nested scope shares the outer one
            assert metrics.per_file(profile) is files and metrics.summarize(profile) is summary
        assert metrics.per_file(profile, 3) == files[:3]  # a top-N table is its own
    assert files == outside and metrics.per_file(profile) is not files  # gone with the scope


def test_a_diagnosis_with_figures_is_the_same_with_shared_tables(corpus):
    """The figures read the table the facts computed: same figure data as computed afresh."""
    from advisor.report.figures import figure_data

    profile = load(corpus / BADOST)
    config = load_config(None)
    diagnosis = diagnose_profile(profile, Stages.from_config(config, figures=True), config)
    assert diagnosis.figures == figure_data(profile) and diagnosis.figures["osts"]
