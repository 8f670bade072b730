"""Site config: TOML sections as dataclasses; unknown keys and wrong types name the key."""

from __future__ import annotations

import pytest

from advisor.config import load_config
from advisor.engine import check_thresholds
from advisor.engine.rules import load_catalogue
from advisor.errors import ConfigError


def _write(tmp_path, text):
    path = tmp_path / "site.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(monkeypatch):
    monkeypatch.delenv("IOADVISOR_CONFIG", raising=False)
    config = load_config(None)
    assert config.system.rpc_size is None and config.system.osts is None  # unset: the facts assume and say so


def test_system_and_thresholds(tmp_path, monkeypatch):
    path = _write(tmp_path, '[system]\nosts = 48\ndefault_stripe_count = 4\nlustre_version = "2.15"\n'
                            '[thresholds]\nsmall_request_bytes = "4MiB"\n[thresholds.IO001]\nmin_share = "20%"\n')
    monkeypatch.setenv("IOADVISOR_CONFIG", str(path))
    config = load_config()
    assert config.system.osts == 48 and config.system.lustre_version == "2.15"
    assert config.threshold("min_share", 0.1, "IO001") == 0.2
    assert config.threshold("min_share", 0.1, "IO002") == 0.1
    assert config.threshold("small_request_bytes", 1) == 4 << 20
    check_thresholds(config, load_catalogue())


@pytest.mark.parametrize("text,words", [
    ("[system]\nostz = 4\n", "unknown key 'ostz'"),
    ("[system]\nosts = 'many'\n", "key 'osts' must be an integer"),
    ("[system]\nosts = true\n", "key 'osts' must be an integer"),
    ("[sytem]\nosts = 4\n", "unknown section [sytem]"),
    ("[thresholds]\nsmall_request_bytes = 'big'\n", "[thresholds] key 'small_request_bytes'"),
    ("[system\n", "not valid TOML"),
    ("[replay]\nreproducibility = 1.5\n", "key 'reproducibility' must lie in [0, 1)"),
])
def test_bad_config_names_the_key(tmp_path, text, words):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    assert words in str(err.value) and "site.toml" in str(err.value)


@pytest.mark.parametrize("text,words", [
    ("[thresholds]\nno_such = 1\n", "[thresholds] unknown key 'no_such'"),
    ("[thresholds.IO001]\nmin_sharez = 1\n", "[thresholds.IO001] unknown key 'min_sharez'"),
    ("[thresholds.ZZZ001]\nmin_share = 1\n", "[thresholds.ZZZ001] names no rule"),
])
def test_threshold_names_checked_against_the_catalogue(tmp_path, text, words):
    config = load_config(_write(tmp_path, text))
    with pytest.raises(ConfigError) as err:
        check_thresholds(config, load_catalogue())
    assert words in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.toml")


def test_replay_defaults_are_the_executors():
    """The site file's [replay] defaults and the executor's (replay.stats.Policy) are one set:
    `ioadvisor replay` and a bare `python -m replay.executor` decide alike."""
    from advisor.config import ReplayConfig
    from replay.stats import Policy

    site, policy = ReplayConfig(), Policy()
    for key in ("margin", "reproducibility", "precision", "min_pairs", "max_pairs"):
        assert getattr(site, key) == getattr(policy, key), key
