"""The Jaguar XT3 (2006) IOR campaigns, written as IOR logs from the published tables.

/work/shared/corpus/campaigns/jaguar-xt3-2006.csv holds the paper's figures (MB/s); a
helper writes one IOR 2.x text log per study and client count, and the campaign
analysis must find what the authors saw: the shared-file knee near 512 clients, the
write collapse at 2048, "Point A" when file-per-process clients exceed the 48 OSTs,
the flat stripe-count-1 shared file, and the regressions against the acceptance test.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advisor.campaign import build_campaign, load_runs
from advisor.pipeline import diagnose_campaign
from advisor.config import from_dict

MB_PER_MIB = 1.048576
GiB = 1 << 30


def write_ior_log(path: Path, *, clients: int, write_mbs: float | None, read_mbs: float | None,
                  fpp: bool, block: int, xfer: int = 1 << 20, segments: int = 1,
                  began: str = "Mon Jan 23 16:07:00 2006") -> Path:
    """An IOR 2.8.4 text log with these results (MB/s as published, printed as MiB/s like IOR)."""
    flags = " -F" if fpp else ""
    ops = (" -w" if write_mbs is not None else "") + (" -r" if read_mbs is not None else "")
    lines = [
        "IOR-2.8.4: MPI Coordinated Test of Parallel I/O", "",
        f"Run began: {began}",
        f"Command line used: /IOR-2.8.4/src/C/IOR -a POSIX{ops} -i 1 -t {xfer} -b {block} -s {segments}"
        f"{flags} -o /lustre/scratch/IORfile",
        "Machine: Catamount jaguar", "", "Summary:",
        "\tapi                = POSIX",
        "\ttest filename      = /lustre/scratch/IORfile",
        f"\taccess             = {'file-per-process' if fpp else 'single-shared-file'}",
        f"\tpattern            = segmented ({segments} segment{'s' if segments > 1 else ''})",
        "\tordering           = sequential offsets",
        f"\tclients            = {clients} (1 per node)",
        "\trepetitions        = 1",
        f"\txfersize           = {xfer / (1 << 20):g} MiB",
        f"\tblocksize          = {block / GiB:g} GiB",
        f"\taggregate filesize = {clients * block * segments / GiB:g} GiB", "",
        "access    bw(MiB/s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   iter",
        "------    ---------  ---------- ---------  --------   --------   --------   ----",
    ]
    maxes = []
    for op, mbs in (("write", write_mbs), ("read", read_mbs)):
        if mbs is None:
            continue
        mib = mbs / MB_PER_MIB
        seconds = clients * block * segments / (1 << 20) / mib
        lines.append(f"{op:<9} {mib:<10.2f} {block // 1024:<10} {xfer // 1024:<10} 0.100000   "
                     f"{seconds:<10.2f} 0.100000   0")
        maxes.append(f"Max {op.capitalize()}: {' ' if op == 'read' else ''}{mib:.2f} MiB/sec ({mbs:.2f} MB/sec)")
    lines += [""] + maxes + ["", "Run finished: Mon Jan 23 18:19:00 2006", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


@pytest.fixture(scope="module")
def jaguar(corpus, tmp_path_factory) -> Path:
    """One directory per study of the campaign table, one IOR log per client count."""
    root = tmp_path_factory.mktemp("jaguar")
    table = (corpus / "campaigns" / "jaguar-xt3-2006.csv").read_text().splitlines()
    rows = csv.DictReader(line for line in table if not line.startswith("#"))
    for row in rows:
        clients = int(row["clients"])
        write_ior_log(root / row["study"] / f"ior_{clients:05d}.txt", clients=clients,
                      write_mbs=float(row["write_MBps"]), read_mbs=float(row["read_MBps"]),
                      fpp=row["access"] == "fpp", block=int(row["block_bytes"]))
    return root


CONFIG = from_dict({"system": {"osts": 48, "peak_write_mib_s": 9000 / MB_PER_MIB,
                               "peak_read_mib_s": 9000 / MB_PER_MIB}})


def _diagnose(*dirs: Path, baseline: list[Path] | None = None, config=CONFIG):
    profiles, skipped = load_runs(list(dirs))
    assert not skipped, skipped
    base = load_runs(baseline)[0] if baseline else None
    result = diagnose_campaign(profiles, config, base)
    return result, {f.code: f for f in result.findings}


def test_the_logs_parse_back_to_the_published_numbers(jaguar):
    profiles, _ = load_runs([jaguar / "sc1_fpp"])
    campaign = build_campaign(profiles, CONFIG)
    write = next(c for c in campaign.curves if c.key.operation == "write")
    assert [p.tasks for p in write.points] == [1, 2, 4, 8, 16, 24, 48, 64, 96, 128, 256, 512, 1024, 2048]
    assert write.points[6].bw_mib * MB_PER_MIB == pytest.approx(4435.46, abs=0.01)


def test_point_a_when_fpp_clients_exceed_the_48_osts(jaguar):
    result, found = _diagnose(jaguar / "sc1_fpp")
    drops = {d["curve"].split(" · ")[-1]: d for d in found["CAM002"].evidence["campaign_ost_drops"]}
    write, read = drops["write"], drops["read"]
    assert (write["before"]["tasks"], write["after"]["tasks"]) == (48, 64)
    assert write["drop"] == pytest.approx(1 - 3738.33 / 4435.46, abs=1e-3)  # ~15 %
    assert read["drop"] == pytest.approx(1 - 2690.80 / 4403.25, abs=1e-3)  # ~38 %
    assert write["recovered_at"] == 96 and read["recovered_at"] is None  # writes recover at 2x OSTs
    exceed = result.figures["campaign"]["clients_exceed_osts"]
    assert {(e["before"]["tasks"], e["after"]["tasks"]) for e in exceed} == {(48, 64)}
    gap = found["CAM004"].evidence["campaign_rw_gaps"][0]
    assert gap["last_tasks"] == 2048 and gap["last_read_over_write"] < 0.6  # writes pull ahead


@pytest.mark.parametrize("study", ["sc48_4g", "sc48_var_bs"])
def test_shared_file_knee_near_512_and_write_collapse_at_2048(jaguar, study):
    result, found = _diagnose(jaguar / study)
    knees = {k["curve"].split(" · ")[-1]: k for k in found["CAM001"].evidence["campaign_knees"]}
    assert knees["write"]["tasks"] == 512
    assert knees["read"]["tasks"] in (256, 512)
    collapses = found["CAM003"].evidence["campaign_collapses"]
    assert [c["curve"].split(" · ")[-1] for c in collapses] == ["write"]  # reads hold
    assert collapses[0]["last"]["tasks"] == 2048 and collapses[0]["drop"] > 0.25
    assert "CAM002" not in found  # a shared file: no file-per-process point A
    gap = found["CAM004"].evidence["campaign_rw_gaps"][0]
    assert gap["faster"] == "read"
    assert result.figures["campaign"]["knees"]


def test_stripe_count_one_shared_file_is_flat(jaguar):
    _, found = _diagnose(jaguar / "sc1_shared")
    flat = {f["curve"].split(" · ")[-1] for f in found["CAM006"].evidence["campaign_flat_curves"]}
    assert flat == {"write", "read"}


def test_studies_in_several_directories_stay_apart(jaguar):
    result, _ = _diagnose(*sorted(p for p in jaguar.iterdir() if p.is_dir()))
    labels = {c["label"] for c in result.figures["campaign"]["curves"]}
    assert len(labels) == 10 and any(label.startswith("sc48_4g_ss512k") for label in labels)
    assert result.job["nprocs"] == 2048


ACCEPTANCE = {"acceptance": (6793.14, 6527.48), "os_update": (2410.88, 4072.83),
              "disks_replaced": (3464.50, 6395.33), "later_update": (6654.84, 5357.55)}


@pytest.fixture(scope="module")
def acceptance(tmp_path_factory) -> dict[str, Path]:
    """The acceptance test (128 clients, -t 160m -b 160m -s 65, shared file) and its re-runs."""
    root = tmp_path_factory.mktemp("acceptance")
    return {name: write_ior_log(root / name / "ior.txt", clients=128, write_mbs=w, read_mbs=r, fpp=False,
                                block=160 << 20, xfer=160 << 20, segments=65)
            for name, (w, r) in ACCEPTANCE.items()}


@pytest.mark.parametrize("rerun, regressed", [
    ("os_update", {"write": 0.645, "read": 0.376}),
    ("disks_replaced", {"write": 0.49}),
    ("later_update", {"read": 0.18}),
])
def test_regressions_against_acceptance(acceptance, rerun, regressed):
    _, found = _diagnose(acceptance[rerun], baseline=[acceptance["acceptance"]])
    drops = {r["curve"].split(" · ")[-1]: r["drop"] for r in found["CAM005"].evidence["campaign_regressions"]}
    assert drops == pytest.approx(regressed, abs=0.005)
    assert found["CAM005"].files == sorted([str(acceptance[rerun]), str(acceptance["acceptance"])])  # both runs


def test_acceptance_is_57_percent_of_the_12000_sustainable(acceptance):
    from advisor.api import diagnose_profile, load

    config = from_dict({"system": {"osts": 64, "peak_write_mib_s": 12000 / MB_PER_MIB,
                                   "peak_read_mib_s": 12000 / MB_PER_MIB}})
    result = diagnose_profile(load(acceptance["acceptance"]), config)
    found = {f.code: f for f in result.findings}
    assert "57 % of the 12,000 MB/s sustainable" in found["BEN006"].message
    assert "54 % of the 12,000 MB/s sustainable" in found["BEN006"].message
    after = diagnose_profile(load(acceptance["os_update"]), config)
    assert "20 % of the 12,000 MB/s" in {f.code: f for f in after.findings}["BEN007"].message
