"""BEN020-BEN022 on real IOzone and fio outputs: the page cache and the sustainable peak of one client."""

from __future__ import annotations

import dataclasses

import pytest

from advisor import api
from advisor.config import SiteConfig
from tests.conftest import CORPUS

DUSCC = CORPUS / "iozone"
FIO = CORPUS / "generated" / "k_fio_randwrite_4k" / "fio.json"


def _site(**system) -> SiteConfig:
    config = SiteConfig()
    return dataclasses.replace(config, system=dataclasses.replace(config.system, **system))


def _codes(path, config) -> dict[str, str]:
    d = api.diagnose_path(path, config)
    assert d.error is None, d.error
    return {f.code: f.severity for f in d.findings}


def test_64_readers_of_156_mib_on_a_256_gib_node_read_the_page_cache(corpus):
    """DUSCC: 64 x 156 MiB read at 104 GiB/s through a 100 Gb/s link: cache, twice over."""
    codes = _codes(DUSCC / "tput_3.493_t64_read_duscc-bm.txt",
                   _site(client_memory_bytes=256 << 30, client_peak_mib_s=11920))
    assert codes.get("BEN020") == "high" and codes.get("BEN022") == "high"


def test_a_10_gib_single_writer_on_a_small_node_is_a_file_system_rate(corpus):
    """DUSCC, 1 thread writing 10 GiB with -e at 367 MiB/s: beyond an 8 GiB node's memory, 62 % of a 5 Gb/s link."""
    codes = _codes(DUSCC / "tput_3.493_t1_write_duscc-bm.txt",
                   _site(client_memory_bytes=8 << 30, client_peak_mib_s=596))
    assert not {"BEN020", "BEN021", "BEN022"} & set(codes)


def test_far_below_what_the_servers_sustain_points_at_the_servers(corpus):
    """The DiFX lesson: the same 367 MiB/s against servers said to sustain 4 GB/s."""
    d = api.diagnose_path(DUSCC / "tput_3.493_t1_write_duscc-bm.txt", _site(peak_write_mib_s=4000,
                                                                             peak_read_mib_s=4000))
    finding = next(f for f in d.findings if f.code == "BEN021")
    assert finding.severity == "warn" and "ioadvisor collect" in " ".join(finding.recommendation.commands)


@pytest.mark.parametrize("memory", [1 << 20, 1 << 40])
def test_random_fio_jobs_are_not_judged_as_streaming(corpus, memory):
    codes = _codes(FIO, _site(client_memory_bytes=memory, client_peak_mib_s=10))
    assert not {"BEN020", "BEN021", "BEN022"} & set(codes)


def test_iozone_results_are_the_sequential_tests_in_mib_s(corpus):
    """facts.benchmarks: readers and re-readers of DUSCC's -t 64 run; re-reads measure the cache by design."""
    from advisor.facts.benchmarks import _iozone
    from advisor.ingest.iozone import load as load_iozone

    (r,) = _iozone(load_iozone(DUSCC / "tput_3.493_t64_read_duscc-bm.txt"))
    assert (r.operation, r.direct) == ("read", False) and r.label.startswith("IOzone readers (64 threads")
    assert r.mib_s == pytest.approx(108879387.38 / 1024) and r.data_bytes == 159744 * 1024 * 64
