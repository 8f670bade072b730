"""The newcomer's list (issue 24 item 3): what a new user met on a fresh clone, `make demo` and the
README's commands, each checked on the real demo trace, corpus logs and a real node snapshot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import CORPUS

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "traces" / "ior-small-shared-4k.darshan"


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, **kw)


def test_rules_code_shows_no_raw_template_syntax():
    """`ioadvisor rules IO001` printed '{{ coalesce_size | bytes }}' and '{% if ... %}'."""
    out = _cli("rules", "IO001", env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "{{" not in out.stdout and "{%" not in out.stdout
    assert "<coalesce_size>" in out.stdout and "[when small_writes_below_collective]" in out.stdout


def test_diagnose_json_shape_follows_the_command_line_and_help_says_so(tmp_path):
    """One input file: one object; a directory (even holding one log) or several inputs: a list.
    A script passing a directory used to get an object or a list depending on what it held."""
    help_text = " ".join(_cli("diagnose", "--help").stdout.split())
    assert "One input file gives one object; several inputs or a directory give a list" in help_text
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / DEMO.name).symlink_to(DEMO)
    one = _cli("diagnose", str(DEMO), "--json", "-")
    in_dir = _cli("diagnose", str(folder), "--json", "-")
    assert one.returncode == 0 and in_dir.returncode == 0, in_dir.stderr
    assert isinstance(json.loads(one.stdout), dict)
    listed = json.loads(in_dir.stdout)
    assert isinstance(listed, list) and len(listed) == 1 and listed[0]["schema"] == json.loads(one.stdout)["schema"]


def test_one_amount_is_written_one_way_in_the_header():
    """The demo read 64 MiB and wrote 64 MiB + 2.2 KiB of stdout: 'read 64 MiB  written 64.0 MiB'."""
    out = _cli("diagnose", str(DEMO), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert "read 64 MiB" in out.stdout and "written 64 MiB" in out.stdout and "64.0 MiB" not in out.stdout


def test_plan_only_states_the_ranks_the_replay_runs_and_counts_in_words():
    """`replay --plan-only` said '4 ranks (job: 4)' (2,048 for sample-badost) where the replay then
    ran at most the CPUs here; and '1 files (1 shared) in 1 directories'."""
    from advisor.verify import default_np

    out = _cli("replay", str(DEMO), "--plan-only", env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    here = default_np(4)
    assert (f"{here} ranks (the job's 4 folded onto them)" if here < 4 else "4 ranks, as the job") in out.stdout
    assert "1 file (1 shared) in 1 directory, 2 phases" in out.stdout
    doc = json.loads(_cli("replay", str(DEMO), "--plan-only", "--json", "-").stdout)
    assert doc["plan"]["np"] == here and doc["plan"]["nprocs_source"] == 4


def test_show_of_a_snapshot_has_no_empty_job_line_and_counts_what_it_lists(tmp_path):
    """`show` of a `collect` snapshot printed 'job , 0 processes, run time 0 s'; `collect` said
    '10 block devices' (loop, zram included) where `show` listed 1; '1 sockets'."""
    from advisor.collect import storage_devices

    snap = tmp_path / "node.json"
    made = _cli("collect", "--out", str(snap))
    assert made.returncode == 0, made.stderr
    doc = json.loads(snap.read_text())
    devices = storage_devices(doc)
    word = "block device" if len(devices) == 1 else "block devices"
    assert f"({len(devices)} {word}," in made.stderr
    shown = _cli("show", str(snap), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    assert "job ," not in shown and "0 processes" not in shown and "collected " in shown
    listed = shown.split("Block devices", 1)[1].split("\n\n")[0].splitlines()[2:]  # after the column heads
    assert sorted(line.split()[0] for line in listed) == sorted(d["name"] for d in devices)
    assert "1 sockets" not in shown and " threads per core" in shown


def test_show_writes_counts_with_their_noun_and_thousands_separators():
    """'2048 processes' beside '2,048' (sample-badost); '1 files' (dd writing one file)."""
    badost = CORPUS / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"
    dd = CORPUS / "generated" / "k3_dd_4k_writes" / "case.darshan"
    shown = _cli("show", str(badost), str(dd), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    assert "2,048 processes" in shown and "2048 processes" not in shown
    assert re.search(r"in 1 file(?!s)", shown)


def test_wrapped_not_checked_lines_keep_their_indent():
    """On a narrow terminal 'LUS010, ...: no file is on Lustre (file systems: ext4)' wrapped to column 0."""
    out = _cli("diagnose", str(DEMO), env={"COLUMNS": "70", "PATH": "/usr/bin:/bin"})
    tail = out.stdout.split("Not checked (", 1)[1].splitlines()[1:]
    assert len(tail) > 2 and all(line.startswith("  ") for line in tail if line.strip())


def test_top_files_counts_files_as_the_header_does(tmp_path):
    """The header's FILES said 1 and 'Top files by I/O time' said '2 files' (it counted <STDOUT>)."""
    page = tmp_path / "demo.html"
    assert _cli("diagnose", str(DEMO), "--html", str(page)).returncode == 0
    html = page.read_text()
    assert "<dt>files</dt><dd>1" in html
    assert "1 file and &lt;STDOUT&gt;; the slowest is" in html and "2 files; the slowest" not in html


def test_assumed_values_are_listed_once_with_their_keys_and_findings_marked(tmp_path):
    """The demo repeated 'Assumed, not read from the input or the site config: a latency of 100 us
    ... an RPC size of 1 MiB ... 2,048 MiB/s ...' in five of six findings (terminal and HTML), with
    Lustre values for a job that ran on ext4."""
    page = tmp_path / "demo.html"
    out = _cli("diagnose", str(DEMO), "--html", str(page), env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"}).stdout
    html = page.read_text()
    for text in (out, html):
        assert "Assumed, not read" not in text and text.count("a latency of 100 us per request") == 1
        assert text.count("Assumed values") >= 1
    listed = out.split("Assumed values (not read from the input or the site config):", 1)[1].split("\n\n")[0]
    assert "1. a latency of 100 us per request (a Lustre RPC round trip) (assumed Lustre default; " \
        "this job ran on ext4): set [system] request_latency_s in the site config" in listed
    assert "[system] rpc_size" in listed and "[system] stream_mib_s" in listed
    assert out.count("assumes 1, 2, 3 (see Assumed values)") == 5  # every finding that used them, marked
    # IMB003's collective fix is charged the time its aggregator streams the bytes: the assumed rate
    assert out.count("assumes 3 (see Assumed values)") == 1
    assert html.count('class="assumes muted"') == 6 and "this job ran on ext4" in html


def test_lustre_defaults_are_not_flagged_for_a_job_on_lustre():
    """imbalanced-io ran on Lustre: its assumed RPC size is Lustre's default, said without 'ran on'."""
    from advisor import api

    log = CORPUS / "darshan-logs" / "darshan_logs" / "imbalanced_io" / "imbalanced-io.darshan"
    found = api.diagnose_profile(api.load(log)).findings
    values = [a for f in found for a in f.assumptions]
    assert any(a["key"] == "[system] rpc_size" for a in values) and not any(a.get("ran_on") for a in values)


def test_the_headline_says_when_a_rules_ceiling_holds_the_costliest_finding_below_its_share(tmp_path):
    """'the costliest loses about 75.3 ms (61.6% of the run)' named MPI002, a warn finding, without
    saying why 61.6% of the run is not high: warn is the most MPI002 reports."""
    page = tmp_path / "demo.html"
    out = _cli("diagnose", str(DEMO), "--html", str(page), "--json", str(tmp_path / "demo.json"),
               env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"}).stdout
    headline = " ".join(page.read_text().split("the costliest loses about", 1)[1].split("</p>", 1)[0].split())
    assert "(61.6% of the run); MPI002 stays warn, the most its rule reports: its cost alone would make it high" \
        in headline
    assert "MPI002 stays warn, the most its rule reports" in out
    saved = {f["code"]: f for f in json.loads((tmp_path / "demo.json").read_text())["findings"]}
    assert saved["MPI002"]["confidence"]["by_cost"] == "high" and "by_cost" not in saved["IO001"]["confidence"]


def test_make_demo_says_what_it_is_doing():
    """`make demo` was silent through a minute of install and a minute of replay."""
    dry = subprocess.run(["make", "-n", "-B", "demo"], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    echoes = [line for line in dry.splitlines() if line.startswith("echo ")]
    assert any("installing ioadvisor and its dependencies" in e for e in echoes)
    assert any("replaying each fix" in e and "one line per round" in e for e in echoes)
    assert dry.index("installing ioadvisor") < dry.index("pip install") < dry.index("replaying each fix") \
        < dry.index("ioadvisor diagnose")


def test_replay_rounds_are_reported_one_line_each_and_quiet_under_json_stdout(tmp_path):
    """A replay's rounds (a minute of the demo) show on stderr, one line each without a terminal;
    with --json - nothing but the document is written."""
    target = tmp_path / "scratch"
    target.mkdir()
    run = ("replay", str(DEMO), "--target", str(target), "--fix", "IO001", "--repeat", "2")
    shown = _cli(*run)
    assert shown.returncode == 0, shown.stderr
    rounds = [line for line in shown.stderr.splitlines() if ": round " in line]
    assert [r.split(": round ", 1)[1].split(",")[0] for r in rounds] == ["1 of at most 2", "2 of at most 2"]
    assert all(r.startswith(f"replaying {DEMO.name} on {target}") for r in rounds)
    quiet = _cli(*run, "--json", "-")
    assert quiet.returncode == 0 and "round" not in quiet.stderr and json.loads(quiet.stdout)["verifications"]


def test_calibration_reports_each_batch_in_a_log(tmp_path):
    """Without a terminal, rich's bar printed nothing until the end: one line per batch instead."""
    target = tmp_path / "mount"
    target.mkdir()
    done = _cli("calibrate", "--target", str(target), "--out", str(tmp_path / "cal"), "--budget", "0.05")
    assert done.returncode == 0, done.stderr
    batches = [line for line in done.stderr.splitlines() if line.startswith("calibrating: ")]
    assert batches and all(" patterns, " in b and " s budget" in b for b in batches)


def test_the_terminal_header_writes_the_rank_count_as_the_findings_do():
    """sample-badost: 'ranks 2048' in the header above '2,048 ranks' in its findings."""
    badost = CORPUS / "darshan-repo-logs/darshan-util/pydarshan/darshan/examples/example_logs/sample-badost.darshan"
    out = _cli("diagnose", str(badost), env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    assert "ranks 2,048" in out and "2048" not in out


def test_progress_is_one_line_per_step_in_a_log_and_nothing_when_quiet(capsys):
    """report.progress.steps: no terminal attached (pytest's capture): one line per step on stderr."""
    from advisor.report.progress import steps

    with steps("replaying", quiet=True) as say:
        assert say is None
    with steps("replaying") as say:
        say("round 1 of at most 40")
        say("round 2 of at most 40")
    assert capsys.readouterr().err.splitlines() == ["replaying ...", "replaying: round 1 of at most 40",
                                                     "replaying: round 2 of at most 40"]
