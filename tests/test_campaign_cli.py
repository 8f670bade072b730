"""`ioadvisor diagnose` on a directory of IOR runs and with --baseline: one campaign diagnosis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

import advisor

from tests.test_campaign_jaguar import write_ior_log


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True,
                          timeout=300, check=False)


def test_directory_campaign_with_baseline_json(tmp_path):
    new, old = tmp_path / "after", tmp_path / "acceptance"
    for clients, (w_old, w_new) in {16: (1600, 1580), 32: (3000, 2950), 64: (5200, 3900)}.items():
        write_ior_log(old / f"ior_{clients}.txt", clients=clients, write_mbs=w_old, read_mbs=None,
                      fpp=True, block=8 << 30)
        write_ior_log(new / f"ior_{clients}.txt", clients=clients, write_mbs=w_new, read_mbs=None,
                      fpp=True, block=8 << 30)
    (new / "README").write_text("notes about the runs\n")  # skipped, not an input
    config = tmp_path / "site.toml"
    config.write_text("[system]\nosts = 48\n")
    out = tmp_path / "result.json"
    proc = _run("diagnose", str(new), "--baseline", str(old), "--config", str(config), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(out.read_text())
    schema = json.loads((Path(advisor.__file__).parent / "schemas" / "diagnosis-v1.json").read_text())
    for doc in docs:
        jsonschema.validate(doc, schema)
    campaign = next(d for d in docs if d["source"]["format"] == "ior-campaign")
    (finding,) = [f for f in campaign["findings"] if f["code"] == "CAM005"]
    (regression,) = finding["evidence"]["campaign_regressions"]
    assert regression["tasks"] == 64 and abs(regression["drop"] - 0.25) < 0.01
    figures = campaign["figures"]["campaign"]
    assert [c["tasks"] for c in figures["curves"]] == [[16, 32, 64]]
    assert figures["baseline"] and figures["osts"] == 48
    drop = figures["clients_exceed_osts"][0]
    assert (drop["before"]["tasks"], drop["after"]["tasks"]) == (32, 64)
    assert len([d for d in docs if d["source"]["format"] == "ior-text"]) == 3


def test_bad_baseline_is_one_line(tmp_path):
    run = write_ior_log(tmp_path / "a.txt", clients=4, write_mbs=100, read_mbs=100, fpp=False, block=1 << 30)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _run("diagnose", str(run), "--baseline", str(empty), "--config", "/dev/null")
    assert proc.returncode == 2 and "no IOR run" in proc.stderr and "Traceback" not in proc.stderr


def test_io500_on_ime_against_its_baseline(corpus):
    """Oakforest-PACS, IO500 on DDN's IME (`-a IME`) twice in 2020 (review13): ior-easy's write lost
    10.2 % (380,623 to 341,965 MiB/s), the other three phases did not. Both files are named; IME's
    client writes no OSTs, so the fix does not send anyone to `lfs df`."""
    runs = corpus / "ior-logs" / "public" / "IO500__submission-data" / "JCAHPC" / "Oakforest-PACS" / "IME" / "2020"
    proc = _run("diagnose", str(runs / "submission-35"), "--baseline", str(runs / "submission-26"), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    campaign = next(d for d in json.loads(proc.stdout) if d["source"]["format"] == "ior-campaign")
    (finding,) = [f for f in campaign["findings"] if f["code"] == "CAM005"]
    (regression,) = finding["evidence"]["campaign_regressions"]
    assert (regression["tasks"], regression["new_mib_s"], regression["baseline_mib_s"]) == (4096, 341965.05, 380622.6)
    assert {Path(f).name for f in finding["files"]} == {"ior-easy-write.txt", "ior_easy_write.txt"}
    assert not any("lfs" in c.split("#")[0] for c in finding["recommendation"]["commands"])


def test_an_io500_result_folder_is_a_campaign_and_show_reads_it(corpus):
    """GWDG's IO500 result folder (review13): five IOR outputs beside IOR's per-rank CSVs and IO500's
    own result.txt, result_summary.txt and config.ini. The run's companion files are skipped as the
    READMEs are (they were four error lines and exit 2); named alone, a per-rank CSV is still refused
    with its reason. `show` walks the folder as `diagnose` does."""
    gwdg = corpus / "ior-logs" / "public" / "IO500__submission-data" / "GWDG"
    folder = next(gwdg.rglob("ior-rnd4K-read.txt")).parent
    proc = _run("diagnose", str(folder), "--json", "-")
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
    docs = json.loads(proc.stdout)
    assert sorted(Path(d["source"]["path"]).name for d in docs if d["source"]["format"] == "ior-text") == [
        "ior-easy-read.txt", "ior-easy-write.txt", "ior-hard-read.txt", "ior-hard-write.txt", "ior-rnd4K-read.txt"]
    shown = _run("show", str(folder), "--json", "-")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)["results"]) == 5
    alone = _run("diagnose", str(folder / "ior-hard-write.csv"))
    assert alone.returncode == 2 and "per-rank performance CSV" in alone.stderr
