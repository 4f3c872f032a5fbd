"""The comparison's settings travel as one resolved file, as a training run's do: what the workflow writes is
what ``consert compare --config`` reads back, and a fault in it is one line."""

from __future__ import annotations

import pytest
import yaml

from consert.configs import ConfigError
from consert.planner.comparison import ComparisonConfig
from consert.planner.design import expected_seeds
from consert.planner.load import read_workflow_config
from consert.verdict.decision import load_decision
from tests.conftest import PUBLISHED, ROOT


def test_the_paper_configs_settings_round_trip_through_their_file(tmp_path):
    config = read_workflow_config(ROOT / "config" / "config.yaml")
    settings = ComparisonConfig.of_workflow(config, PUBLISHED)
    path = tmp_path / "comparison_config.yaml"
    path.write_text(settings.to_yaml(), encoding="utf-8")
    assert ComparisonConfig.read(path) == settings
    # the design's seeds by ARTIFACT:KIND, as the gate's simulation plans them (table2's ConSERT rows: 3 seeds)
    assert settings.seeds == expected_seeds(config, load_decision(PUBLISHED)) and settings.seeds["table2:consert"] == 3
    assert settings.not_run == config.not_run and settings.inconclusive == "pass"


def test_the_offline_config_lets_its_stand_in_gate_pass_and_says_so_in_the_file():
    config = read_workflow_config(ROOT / "config" / "offline.yaml")
    text = ComparisonConfig.of_workflow(config, PUBLISHED).to_yaml()
    assert yaml.safe_load(text)["allow_stand_in"] is True


def test_a_wrong_key_or_policy_in_the_file_is_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("margin: {table2: 1.0}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key `margin` \(did you mean `margins`\?\)"):
        ComparisonConfig.read(path)
    path.write_text("inconclusive: maybe\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="inconclusive: expected one of"):
        ComparisonConfig.read(path)
