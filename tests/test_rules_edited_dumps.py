"""Darshan-side rules no corpus log triggers (MPI006, LUS003, LUS006), on real dumps edited
in one stated way each: the unedited input is the rule's good case, the edit gives it the
problem. Dumps are darshan-parser text (darshan-dxt-parser appended where DXT is needed),
either from the corpus or printed by tests/darshan_parser_ref.py from a corpus log.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import api
from advisor.config import SiteConfig, from_dict
from advisor.engine import diagnose
from advisor.findings import Finding
from tests.conftest import CORPUS
from tests.helpers import require

HERE = Path(__file__).parent
MiB = 1 << 20
COLLECTIVE = CORPUS / "generated" / "e_mpiio_collective_256k"
GOODOST = CORPUS / "darshan-repo-logs/darshan-util/pydarshan/darshan/tests/input/sample-goodost.darshan"
LUSTRE_DUMP = HERE / "data" / "dumps" / "release_3.5.0_lustre.all.parser.txt"


def _findings(text: str, tmp_path: Path, config: SiteConfig | None = None) -> dict[str, Finding]:
    path = tmp_path / "job.darshan.txt"
    path.write_text(text)
    result = diagnose(api.load(path), config or SiteConfig())
    return {f.code: f for f in result.findings}


def _corpus(path: Path) -> Path:
    require(path.exists(), f"corpus file {path} missing (the shared corpus belongs at {CORPUS})")
    return path


# ---- MPI006: collective I/O through aggregators on fewer nodes than the job has ---------------

def _collective_dump(hosts: dict[int, str]) -> str:
    """IOR -a MPIIO -c on 4 ranks (one VM, ROMIO picked rank 0 as the only aggregator),
    parser and DXT dumps together, with the DXT host name of the given ranks replaced."""
    parser = _corpus(COLLECTIVE / "darshan-parser.txt").read_text()
    dxt = (COLLECTIVE / "darshan-dxt-parser.txt").read_text()
    for rank, host in hosts.items():
        dxt = re.sub(rf"^(# DXT, rank: {rank}, hostname: )\S+$", rf"\g<1>{host}", dxt, flags=re.M)
    return parser + dxt


def test_mpi006_one_aggregator_node_of_two(tmp_path):
    """Ranks 2 and 3 moved to a second node: the single aggregator leaves that node's link idle."""
    found = _findings(_collective_dump({2: "vm2", 3: "vm2"}), tmp_path)
    f = found["MPI006"]
    assert f.evidence["cb_nodes"] == 1 and f.evidence["aggregator_nodes"] == 1
    assert f.evidence["compute_nodes"] == 2
    assert "1 aggregator rank(s) on 1 of the job's 2 compute nodes" in f.message
    assert f.fix == {"transform": "hints", "cb_nodes": 2}  # already collective: the aggregators change
    assert "cb_nodes 2" in f.recommendation.commands[0]


def test_mpi006_silent_when_every_node_has_an_aggregator(tmp_path):
    found = _findings(_collective_dump({}), tmp_path)  # the real run: one node, one aggregator
    assert "MPI006" not in found
    d = diagnose(api.load(_corpus(COLLECTIVE / "case.darshan")), SiteConfig())
    assert "MPI006" not in {f.code for f in d.findings}


def test_mpi006_ignores_darshans_own_log_hints(tmp_path):
    """The `h` metadata holds the hints Darshan wrote its log with (DARSHAN_LOGHINTS), not the job's."""
    text = _collective_dump({2: "vm2", 3: "vm2"})
    assert "# metadata: h = cb_nodes=1\n" in text
    f = _findings(text.replace("# metadata: h = cb_nodes=1\n", "# metadata: h = cb_nodes=8\n"), tmp_path)["MPI006"]
    assert (f.evidence["cb_nodes"], f.evidence["compute_nodes"]) == (1, 2)


# ---- the collective fixes ask for one aggregator per compute node -------------------------------

def _independent_dump(hosts: dict[int, str], with_dxt: bool = True) -> str:
    """IOR -a MPIIO (independent) on 4 ranks of one VM, with DXT host names replaced."""
    case = CORPUS / "generated" / "d_mpiio_independent_256k"
    text = _corpus(case / "darshan-parser.txt").read_text()
    if with_dxt:
        dxt = (case / "darshan-dxt-parser.txt").read_text()
        for rank, host in hosts.items():
            dxt = re.sub(rf"^(# DXT, rank: {rank}, hostname: )\S+$", rf"\g<1>{host}", dxt, flags=re.M)
        text += dxt
    return text


@pytest.mark.parametrize("hosts, with_dxt, expected", [
    ({}, True, 1),                                   # the real run: 4 ranks on one node
    ({2: "vm2", 3: "vm2"}, True, 2),                 # two nodes named by DXT
    ({1: "b", 2: "c", 3: "d"}, True, 4),             # a rank per node
    ({}, False, 4),                                  # no host names: min(ranks, 8)
])
def test_collective_fix_asks_for_one_aggregator_per_node(tmp_path, hosts, with_dxt, expected):
    f = _findings(_independent_dump(hosts, with_dxt), tmp_path)["MPI003"]
    assert f.fix == {"transform": "collective", "cb_nodes": expected}
    assert f.evidence["suggested_cb_nodes"] == expected
    assert f'"cb_nodes", "{expected}"' in f.recommendation.commands[0]


# ---- LUS003: file per process striped over several OSTs -----------------------------------

def _goodost_dump() -> str:
    """sample-goodost.darshan (IOR -F, 48 ranks, 48 files of 1 GiB on 24 OSTs, 1 stripe each)."""
    proc = subprocess.run([sys.executable, str(HERE / "darshan_parser_ref.py"), str(_corpus(GOODOST))],
                          capture_output=True, text=True, timeout=120, check=True)
    return proc.stdout


def _stripe_over_four(dump: str) -> str:
    """Each file on 4 stripes (OSTs i, i+6, i+12, i+18 of 24) instead of 1: IOR -F under `lfs setstripe -c 4`."""
    out = []
    for line in dump.splitlines(keepends=True):
        cols = line.split("\t")
        if cols[0] == "LUSTRE" and cols[3] in ("LUSTRE_NUM_STRIPES", "LUSTRE_COMP1_STRIPE_COUNT"):
            cols[4] = "4"
        out.append("\t".join(cols))
        if cols[0] == "LUSTRE" and cols[3] == "LUSTRE_COMP1_OST_ID_0":
            for k in (1, 2, 3):
                cols[3], cols[4] = f"LUSTRE_COMP1_OST_ID_{k}", str((int(line.split("\t")[4]) + 6 * k) % 24)
                out.append("\t".join(cols))
    return "".join(out)


@pytest.fixture(scope="module")
def goodost_dump() -> str:
    return _goodost_dump()


def test_lus003_fpp_files_on_four_stripes_each(goodost_dump, tmp_path):
    f = _findings(_stripe_over_four(goodost_dump), tmp_path)["LUS003"]
    keys = ("fpp_wide_files", "fpp_writers", "fs_osts", "fpp_stripe_count")
    assert {k: f.evidence[k] for k in keys} == dict(zip(keys, (48, 48, 24, 4)))
    assert "48 per-process files are striped over several OSTs while 48 files already outnumber the 24 OSTs" \
        in f.message
    assert f.fix == {"transform": "stripe", "count": 1, "size": MiB}
    assert f.recommendation.commands == ["lfs setstripe -c 1 DIR"]


def test_lus003_silent_on_the_real_one_stripe_run(goodost_dump, tmp_path):
    assert "LUS003" not in _findings(goodost_dump, tmp_path)


def test_lus003_silent_when_files_are_fewer_than_osts(goodost_dump, tmp_path):
    """The same wide files on a 96-OST file system: too few files to keep every OST busy."""
    config = from_dict({"system": {"osts": 96}})
    assert "LUS003" not in _findings(_stripe_over_four(goodost_dump), tmp_path, config)


# ---- LUS004: large files of one directory all on one stripe -----------------------------------

WIDE_SITE = {"system": {"osts": 200}}  # the site says what the log cannot: 200 OSTs, not the 24 seen


def test_lus004_per_process_files_left_at_one_stripe_on_a_wide_file_system(goodost_dump, tmp_path):
    """48 single-stripe files use at most 48 of 200 OSTs: 5 stripes each cover them all (not 48)."""
    f = _findings(goodost_dump, tmp_path, from_dict(WIDE_SITE))["LUS004"]
    assert f.evidence["single_stripe_dir_files"] == 48 and f.evidence["single_stripe_dir_stripe_count"] == 5
    assert f.recommendation.commands == ["lfs getstripe -d /scratch1/scratchdirs/glock",
                                         "lfs setstripe -c 5 /scratch1/scratchdirs/glock"]
    assert f.fix == {"transform": "stripe", "count": 5, "size": 4 * MiB, "scope": "dir"}


def test_lus004_silent_when_the_files_already_cover_the_osts(goodost_dump, tmp_path):
    assert "LUS004" not in _findings(goodost_dump, tmp_path)  # 48 files on the 24 OSTs seen


def test_lus004_never_restripes_the_file_system_root(goodost_dump, tmp_path):
    """The same files directly in /scratch1, the Lustre mount point."""
    dump = goodost_dump.replace("/scratch1/scratchdirs/glock/", "/scratch1/")
    f = _findings(dump, tmp_path, from_dict(WIDE_SITE))["LUS004"]
    assert f.evidence["single_stripe_dir"] == "DIR" and "/scratch1" not in " ".join(f.recommendation.commands)


# ---- LUS006: data in the narrow components of a PFL layout --------------------------------

def _pfl(boundary: int) -> str:
    """mpi-io-test's 64 MiB shared file given the layout `-E boundary -c 1 -E -1 -c 4`."""
    dump = LUSTRE_DUMP.read_text()
    out = []
    for line in dump.splitlines(keepends=True):
        cols = line.split("\t")
        if cols[0] != "LUSTRE" or len(cols) < 5:
            out.append(line)
            continue
        counter = cols[3]
        if counter == "LUSTRE_NUM_COMPONENTS":
            cols[4] = "2"
        elif counter == "LUSTRE_NUM_STRIPES":
            cols[4] = "5"
        elif counter == "LUSTRE_COMP1_EXT_END":
            cols[4] = str(boundary)
        out.append("\t".join(cols))
        if counter == "LUSTRE_COMP1_OST_ID_0":
            second = {"STRIPE_SIZE": MiB, "STRIPE_COUNT": 4, "STRIPE_PATTERN": "raid0", "FLAGS": 0,
                      "EXT_START": boundary, "EXT_END": -1, "MIRROR_ID": 0, "POOL_NAME": "N/A",
                      **{f"OST_ID_{k}": 2 + k for k in range(4)}}
            for name, value in second.items():
                cols[3], cols[4] = f"LUSTRE_COMP2_{name}", str(value)
                out.append("\t".join(cols))
    return "".join(out)


# a site whose "large file" starts at 64 MiB, so mpi-io-test's 64 MiB file counts
SMALL_SITE = {"thresholds": {"inherit_file_bytes": 64 * MiB}}


def test_lus006_most_data_in_the_one_stripe_component(tmp_path):
    found = _findings(_pfl(48 * MiB), tmp_path, from_dict(SMALL_SITE))
    f = found["LUS006"]
    assert f.files == ["/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"]
    assert f.message.startswith("1 large file(s) with a progressive layout keep most of their data")
    assert f.fix is None


def test_lus006_silent_when_the_wide_component_holds_most_data(tmp_path):
    assert "LUS006" not in _findings(_pfl(8 * MiB), tmp_path, from_dict(SMALL_SITE))


def test_lus006_silent_on_files_below_the_large_file_size(tmp_path):
    assert "LUS006" not in _findings(_pfl(48 * MiB), tmp_path)  # 64 MiB < the default 1 GiB
