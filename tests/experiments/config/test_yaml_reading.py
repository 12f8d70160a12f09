"""Artifact files read by libyaml's C parser give what OmegaConf's reader gives (its float syntax, no timestamps, a
duplicate key refused), and a file it cannot read is read by OmegaConf, which names the problem."""

import pytest
import yaml
from omegaconf import OmegaConf

from experiments.config.artifacts import artifact_files
from experiments.config.yaml_reading import C_LOADER, read_yaml


def omegaconf_read(path):
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def test_every_artifact_file_reads_as_omegaconf_reads_it():
    files = list(artifact_files().values())
    assert len(files) > 20 and C_LOADER is not None  # this machine's yaml has libyaml: the C reader is what is tested
    for path in files:
        assert repr(read_yaml(path)) == repr(omegaconf_read(path)), path  # repr: 1 and 1.0 and '1' differ


def test_omegaconf_s_rules_hold(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("lr: 1e-3\nsteps: 1_000\nwhen: 2024-01-01\nname: '1'\nflag: yes\nnothing: null\n")
    assert (
        read_yaml(path)
        == omegaconf_read(path)
        == {"lr": 0.001, "steps": 1000, "when": "2024-01-01", "name": "1", "flag": True, "nothing": None}
    )
    assert yaml.load(path.read_text(), Loader=yaml.CSafeLoader)["lr"] == "1e-3"  # what plain YAML 1.1 would give


def test_a_duplicate_key_and_bad_yaml_are_omegaconf_s_errors(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("grid: {}\ngrid: {}\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="found duplicate key grid"):
        read_yaml(path)
    path.write_text("grid: [a, b\n")
    with pytest.raises(
        yaml.YAMLError, match="expected ',' or ']', but got '<stream end>'"
    ):  # the Python parser's words
        read_yaml(path)
