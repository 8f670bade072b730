"""Benchmark-validity rules on real IOR outputs (tests/data/ior) and a site config."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.api import diagnose_profile, load
from advisor.config import from_dict

DATA = Path(__file__).parent / "data" / "ior"
SITE = {"system": {"osts": 64, "default_stripe_count": 1, "default_stripe_size": 1 << 20,
                   "client_memory_bytes": 256 << 30, "peak_write_mib_s": 11444, "peak_read_mib_s": 11444}}


def _findings(name: str, site: dict = SITE) -> dict:
    result = diagnose_profile(load(DATA / name), from_dict(site))
    return {f.code: f for f in result.findings}, {n.check.split()[0]: n.reason for n in result.not_checked}


def test_read_without_reorder_from_cache_and_the_fix():
    found, _ = _findings("tutorial_fragment_2.txt")
    (read,) = found["BEN002"].evidence["ior_unshuffled_reads"]
    assert read["read_mib_s"] == 149473 and read["why"] == "reads much faster than writes"
    assert "-C" in found["BEN002"].recommendation.commands[0]
    assert "BEN008" in found  # 149,473 MiB/s on a 11,444 MiB/s file system


def test_read_with_reorder_is_accepted():
    found, _ = _findings("tutorial_fragment_3.txt")
    assert "BEN002" not in found


def test_data_in_client_memory_and_block_size_fix():
    found, _ = _findings("ior_text_3.3.0.txt")
    (test,) = found["BEN001"].evidence["ior_cache_tests"]
    assert test["data_per_node"] == 64 << 20  # 16 MiB x 2 segments x 2 tasks on one node
    assert "-b 128g" in found["BEN001"].recommendation.commands[0]  # 2 x 256 GiB / (2 tasks x 2 segments)


def test_memory_unknown_is_not_checked():
    site = {"system": {**SITE["system"], "client_memory_bytes": None}}
    found, unchecked = _findings("ior_text_3.3.0.txt", site)
    assert "BEN001" not in found and "client_memory_bytes" in unchecked["BEN001"]


def test_one_repetition_and_shared_file_on_one_stripe():
    found, _ = _findings("ior_text_3.3.0.txt")
    assert found["BEN004"].evidence["ior_min_repetitions"] == 1
    (issue,) = found["BEN005"].evidence["ior_stripe_issues"]
    assert issue["kind"] == "shared file on too few OSTs" and issue["suggest_count"] == 2
    assert found["BEN005"].recommendation.commands[0].startswith("lfs setstripe -c 2")


def test_no_stripes_or_osts_for_an_object_store_api():
    """IO500's ior-hard-write on Aurora's DAOS (`-a DFS`, 62,400 tasks, review12): DFS stores DAOS
    objects, so a site config with Lustre's OSTs must not give it a stripe count nor `lfs setstripe`;
    the same shared file through POSIX keeps BEN005."""
    found, unchecked = _findings("io500_dfs_aurora_hard_write.txt")
    assert "BEN005" not in found and "BEN005" not in unchecked
    found, _ = _findings("ior_text_3.3.0.txt")
    assert "BEN005" in found


def _io500(corpus, name: str):
    return next((corpus / "ior-logs" / "public" / "IO500__submission-data" / "DKRZ").rglob(name))


def test_io500_phases_are_not_faulted_for_what_io500_fixes(corpus):
    """ior-hard's 47,008-byte records and IO500's one repetition are the benchmark's rules: said
    under "not checked", never a finding."""
    for name in ("ior_hard_write.txt", "ior-hard-read.txt", "ior-easy-write.txt"):
        result = diagnose_profile(load(_io500(corpus, name)), from_dict(SITE))
        found = {f.code for f in result.findings}
        unchecked = {n.check.split()[0]: n.reason for n in result.not_checked}
        assert "BEN004" not in found and "IO500" in unchecked["BEN004"], name
        if "hard" in name:
            assert "BEN003" not in found and "47,008-byte" in unchecked["BEN003"], name


def test_the_same_small_transfers_outside_io500_are_flagged(corpus, tmp_path):
    """ior-hard's output with its IO500 path and record size changed: an ordinary IOR run."""
    text = _io500(corpus, "ior_hard_write.txt").read_text()
    path = tmp_path / "ior.txt"
    path.write_text(text.replace("ior_hard", "scratch").replace("47008", "47000"))
    found = {f.code: f for f in diagnose_profile(load(path), from_dict(SITE)).findings}
    (issue,) = found["BEN003"].evidence["ior_transfer_issues"]
    assert issue["transfer_size"] == 47000 and issue["below_rpc"] and issue["misaligned"]
    assert "-t 1m" in found["BEN003"].recommendation.commands[0]
    assert found["BEN004"].evidence["ior_min_repetitions"] == 1


@pytest.mark.parametrize("name, note", [("ior_json_stdout-v.txt", "invalid JSON"),
                                        ("ior_csv_4.0.0.txt", "CSV output"),
                                        ("ior_2.10_stdout_prefix.txt", "prefixes stripped")])
def test_every_format_is_diagnosed_with_benchmark_rules_only(name, note):
    result = diagnose_profile(load(DATA / name), from_dict(SITE))
    assert result.error is None and result.source["format"].startswith("ior")
    assert any(note in n for n in result.source["notes"])
    codes = {f.code for f in result.findings}
    assert codes and all(code.startswith("BEN") for code in codes)  # no Darshan rule on an IOR run


def test_io500_random_read_phase_size_is_the_benchmarks():
    """IO500's ior-rnd4K phase (GWDG, review13) reads 4 KiB at random offsets of ior-easy's files:
    the size is IO500's, like ior-hard's 47,008 bytes; the same test outside IO500 keeps BEN003."""
    found, unchecked = _findings("io500_rnd4k_read.txt")
    assert "BEN003" not in found and "benchmark's definition" in unchecked["BEN003"]
    assert "BEN004" not in found


def test_csv_output_does_not_claim_the_reorder_flag():
    """IOR's CSV states no options (review13): BEN002 rests on the read/write ratio and says that
    whether -C or -Z was set is unknown, instead of "without -C"."""
    found, _ = _findings("ior_csv_4.0.0.txt")
    (read,) = found["BEN002"].evidence["ior_unshuffled_reads"]
    assert read["reorder_unknown"] and read["why"] == "reads much faster than writes"
    assert "does not say whether -C or -Z was set" in found["BEN002"].message
    assert "Without -C" not in found["BEN002"].message
    found, _ = _findings("tutorial_fragment_2.txt")  # its command line has no -C: known, not unknown
    assert not found["BEN002"].evidence["ior_unshuffled_reads"][0]["reorder_unknown"]
