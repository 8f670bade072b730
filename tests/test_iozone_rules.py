"""The rules only IOzone's and fio's own tests give (BEN023-BEN025), on the corpus's outputs: what
each reads from them, and the thresholds that move them."""

from __future__ import annotations

from pathlib import Path

from advisor import pipeline
from advisor.config import SiteConfig, from_dict
from tests.conftest import CORPUS

IOZONE = CORPUS / "iozone"
DATA_FIO = Path(__file__).parent / "data" / "fio"


def _findings(path, config=None) -> dict:
    (result,) = pipeline.run([path], pipeline.Stages(), config or SiteConfig()).results
    assert result.diagnosis.error is None, result.diagnosis.error
    return {f.code: f for f in result.diagnosis.findings}


def test_BEN023_reads_of_just_written_files_from_the_page_cache(corpus):
    """ODroid HC1 (2 GiB of memory), -a up to 512 MiB files: at 512 MiB the median read is 30x the write
    and re-reads gain nothing; the -U run (remount between tests) reads at a tenth of its writes."""
    found = _findings(IOZONE / "auto_3.471_R_arm32_ericmountain.txt")["BEN023"]
    (cells,) = found.evidence["iozone_cached_reads"]
    assert (cells["file_kib"], cells["records"], cells["read_over_write"], cells["reread_over_read"]) == \
        (524288, 9, 30.26, 0.9)
    assert "-U" in found.recommendation.text
    assert "BEN023" not in _findings(IOZONE / "auto_3.327_U_rovanion-ext3.txt")
    strict = from_dict({"thresholds": {"iozone_cached_read_ratio": 40}})
    assert "BEN023" not in _findings(IOZONE / "auto_3.471_R_arm32_ericmountain.txt", strict)


def test_BEN024_backward_and_stride_reads_against_sequential(corpus):
    """ZFS mirror, one process, 24 GiB: reverse readers 706,505 and stride readers 494,082 kB/s against
    readers 2,870,275 kB/s."""
    (p,) = _findings(IOZONE / "tput_3.457_l1u1_cpu_R_freebsd-zfs.txt")["BEN024"].evidence["iozone_pattern_reads"]
    assert (p["threads"], p["file_kib"]) == (1, 25165824)
    assert (p["backward_share"], p["stride_share"]) == (round(706505.38 / 2870275, 3), round(494081.50 / 2870275, 3))
    # BeeGFS 1 GiB files: backward 0.72, stride 0.63 of sequential (median over 13 record sizes): not reported
    assert "BEN024" not in _findings(IOZONE / "auto_3.489_b-excel-below_beegfs.txt")


def test_BEN025_a_latency_tail_in_the_corpus_fio_run(corpus):
    path = CORPUS / "generated" / "k_fio_randwrite_4k" / "fio.json"
    (t,) = _findings(path)["BEN025"].evidence["fio_latency_tails"]
    assert (t["job"], t["ios"], t["tail_ratio"]) == ("randwrite4k", 16384, round(63744 / 3312, 1))
    assert "BEN025" not in _findings(path, from_dict({"thresholds": {"fio_tail_ratio": 20}}))
    assert "--direct=1" in _findings(path)["BEN025"].recommendation.commands[0]  # buffered: compare with direct


def test_BEN025_does_not_ask_an_o_direct_job_for_direct():
    """fio recorded for review13 (tests/data/fio): a direct=1 random 4 KiB reader at iodepth 16 with a
    99.9th percentile 160x its median. Its tail is not page-cache writeback, and direct=1 is set."""
    path = DATA_FIO / "review13-seqwrite-randread4k.json"
    found = _findings(path)["BEN025"]
    (t,) = found.evidence["fio_latency_tails"]
    assert (t["job"], t["direct"], t["ios"]) == ("randread4k", True, 52328)
    assert "writeback" not in found.recommendation.text and "already bypass the page cache" in found.recommendation.text
    assert not any("--direct=1" in c for c in found.recommendation.commands)
