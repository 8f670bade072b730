"""The per-user cache of the checked rule catalogue: used when it is ours and current, else rebuilt."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.engine import cache
from advisor.engine.rules import load_catalogue, rule_files


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("IOADVISOR_RULE_CACHE", raising=False)
    return tmp_path / "cache" / "ioadvisor"


class Builds:
    """A build function that counts its calls."""

    def __init__(self, value=("catalogue",)):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def rules_file(tmp_path: Path, text: str = "- one\n") -> list[Path]:
    path = tmp_path / "extra.yaml"
    path.write_text(text)
    return [path]


def test_the_second_load_reads_the_cache(home, tmp_path):
    files, build = rules_file(tmp_path), Builds()
    assert cache.cached(files, build) == build.value
    assert cache.cached(files, build) == build.value
    assert build.calls == 1
    [stored] = home.glob("catalogue-*.pickle")
    assert stored.stat().st_mode & 0o777 == 0o600 and home.stat().st_mode & 0o777 == 0o700


def test_a_changed_rule_file_rebuilds_and_drops_the_stale_entry(home, tmp_path):
    files, build = rules_file(tmp_path), Builds()
    cache.cached(files, build)
    files[0].write_text("- two\n")
    cache.cached(files, build)
    assert build.calls == 2 and len(list(home.glob("catalogue-*.pickle"))) == 1


@pytest.mark.parametrize("spoil", ["damaged", "writable by others"])
def test_a_damaged_or_foreign_entry_is_not_used(home, tmp_path, spoil):
    files, build = rules_file(tmp_path), Builds()
    cache.cached(files, build)
    [stored] = home.glob("catalogue-*.pickle")
    if spoil == "damaged":
        stored.write_bytes(b"\x80\x05not a pickle")
    else:
        os.chmod(stored, 0o666)
    assert cache.cached(files, build) == build.value and build.calls == 2


def test_no_usable_cache_directory_means_no_cache_and_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # ioadvisor/ cannot be made under a file
    files, build = rules_file(tmp_path), Builds()
    assert cache.cached(files, build) == build.value and cache.cached(files, build) == build.value
    assert build.calls == 2


def test_the_cache_can_be_turned_off(home, tmp_path, monkeypatch):
    monkeypatch.setenv("IOADVISOR_RULE_CACHE", "0")
    files, build = rules_file(tmp_path), Builds()
    cache.cached(files, build)
    cache.cached(files, build)
    assert build.calls == 2 and not home.exists()


def test_the_cached_catalogue_is_the_checked_one(home):
    files = rule_files()
    fresh = load_catalogue(files)
    cache.cached(files, lambda: fresh)
    stored = cache.cached(files, Builds(None))
    assert stored is not fresh
    assert [r.code for r in stored.rules] == [r.code for r in fresh.rules]
    for mine, theirs in zip(stored.rules, fresh.rules):
        assert mine == theirs and mine.condition == theirs.condition and mine.depends_on == theirs.depends_on


def test_compiled_templates_are_kept_and_a_damaged_one_is_recompiled(tmp_path):
    log = Path(__file__).resolve().parents[1] / "traces" / "ior-small-shared-4k.darshan"  # several findings
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "IOADVISOR_RULE_CACHE": "1"}

    def diagnose() -> dict:
        done = subprocess.run([sys.executable, "-m", "advisor", "diagnose", "--json", "-", str(log)],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        doc = json.loads(done.stdout)
        assert doc["findings"]
        return {f["code"]: (f["message"], f["recommendation"]) for f in doc["findings"]}

    first = diagnose()
    [templates] = (tmp_path / "ioadvisor").glob("templates-*")
    [bundle] = templates.iterdir()  # every compiled template in one file
    entries = marshal.loads(bundle.read_bytes())
    assert len(entries) >= len(first)  # a message and a recommendation per finding at least
    stored, written = bundle.read_bytes(), bundle.stat().st_mtime_ns
    assert diagnose() == first
    assert bundle.stat().st_mtime_ns == written  # read, not compiled again
    key = next(iter(entries))
    bundle.write_bytes(marshal.dumps({**entries, key: (entries[key][0], b"garbage")}))  # one damaged entry
    assert diagnose() == first
    assert marshal.loads(bundle.read_bytes()) == entries  # compiled and stored again
    bundle.write_bytes(stored[:40] + b"garbage")  # a damaged file
    assert diagnose() == first
    assert marshal.loads(bundle.read_bytes()) == entries
    bundle.chmod(0o666)  # a file others can write is not read: compiled and written anew, private
    assert diagnose() == first
    assert bundle.stat().st_mode & 0o777 == 0o600 and marshal.loads(bundle.read_bytes()) == entries


def test_saving_compiled_templates_keeps_what_another_process_stored(home):
    """Two fleet workers read the bundle, compile different templates and save in turn: the second
    writer must not drop the first one's entries."""
    from advisor.engine import render

    render.environment.cache_clear()
    try:
        render.render("{{ size | bytes }} in one call", {"size": 4096})  # this process compiles one template
        bundle = render.environment().bytecode_cache
        [ours] = bundle.entries
        theirs = {"another-workers-template": ("its-checksum", marshal.dumps(compile("1", "t", "eval")))}
        fd = os.open(bundle.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:  # the other worker saved after this one read the file
            fh.write(marshal.dumps(theirs))
        render.save()
        assert set(marshal.loads(bundle.path.read_bytes())) == {ours, "another-workers-template"}
    finally:
        render.environment.cache_clear()


def test_a_cache_directory_others_can_write_is_not_used_and_old_keys_go(home):
    from advisor import usercache

    folder = usercache.private_dir("templates", "one")
    assert folder == home / "templates-one" and folder.stat().st_mode & 0o777 == 0o700
    os.chmod(folder, 0o777)
    assert usercache.private_dir("templates", "one") is None
    assert usercache.private_dir("templates", "two") is not None and not folder.exists()


def test_every_template_of_the_catalogue_compiles_by_its_cached_name():
    from advisor.engine import render

    texts = [t for rule in load_catalogue(rule_files()).rules
             for t in (rule.message, rule.recommendation["text"], *rule.recommendation["commands"])]
    assert len(texts) > 100
    for text in texts:  # names are hashes: Jinja2 quotes them into the Python code it generates
        assert render.compile_template(text).name != text
