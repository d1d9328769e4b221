"""Reading the repository config from where its source says: the defaults, or an error naming the source."""

from __future__ import annotations

import pytest

from bot.core.config import lenient
from bot.core.config import source as config_source
from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.config.source import WORK_TREE, ConfigSource

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("source", "label"),
    [
        (WORK_TREE, ".github/perfbot.yml"),
        (ConfigSource.at_revision(SHA), ".github/perfbot.yml at 0123456789"),
        (ConfigSource.default_branch("main"), ".github/perfbot.yml@main"),
    ],
)
def test_each_source_names_itself_in_errors(source, label):
    assert source.label == label and source.path == ".github/perfbot.yml"
    with pytest.raises(ConfigError, match=f"^{label}: risk.thresholds.high"):
        config_source.read("risk:\n  thresholds: {high: 500}\n", source)


def test_no_config_means_the_defaults():
    assert config_source.read(None, WORK_TREE) == RepoConfig()
    assert config_source.read_or_defaults(None, ConfigSource.default_branch("main")) == (RepoConfig(), None)


def test_a_valid_config_is_read():
    config = config_source.read(b"risk:\n  profile: vllm\n", ConfigSource.at_revision(SHA))
    assert config.risk.profile == "vllm"


def test_an_invalid_config_gives_its_valid_part_held_and_the_error_for_a_caller_that_goes_on():
    config, error = config_source.read_or_defaults("version: 2\n", ConfigSource.default_branch("dev"))
    assert config == lenient.held(RepoConfig())
    assert error is not None and error.startswith(".github/perfbot.yml@dev: version")
    assert "off until it is fixed" in error


def test_a_file_that_is_not_yaml_gives_the_defaults_held():
    config, error = config_source.read_or_defaults("risk: [\n", ConfigSource.default_branch("dev"))
    assert config == lenient.held(RepoConfig())
    assert error is not None and "not valid YAML" in error
