"""SequenceTaskModule's scalar output (regression, e.g. NNS): the decoder's one output per position, mean squared
error over the scored positions only (NaN targets are not scored), val/mse and test/mse logged, no accuracy. The
classification path is covered by every formal-language and MQAR training test."""

import math

import pytest
import torch
from torch import nn

from experiments.training.module import SequenceTaskModule
from tasks.spec import TaskSpec

OPTIM = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "warmup_fraction": 0.1, "min_lr": 1e-7}
SCALAR = TaskSpec(name="regression", input_kind="vectors", input_size=3, num_classes=1, random_accuracy=None,
                  group="test", output_kind="scalar")


def scalar_module() -> SequenceTaskModule:
    torch.manual_seed(0)
    return SequenceTaskModule(SCALAR, nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10)


def batch(batch_size: int = 3, length: int = 5, scored: tuple[int, ...] = (4, 2, 0)):
    inputs = torch.randn(batch_size, length, 3)  # (B, S, 3)
    targets = torch.full((batch_size, length), math.nan)  # (B, S)
    targets[torch.arange(batch_size), torch.tensor(scored)] = torch.rand(batch_size)
    return inputs, targets


def test_a_scalar_task_gets_one_output_per_position_and_the_mse_of_its_scored_positions(monkeypatch):
    module = scalar_module()
    monkeypatch.setattr(module, "log", lambda *arguments, **options: None)  # no trainer here
    inputs, targets = batch()
    outputs = module(inputs)
    assert module.decoder.out_features == 1 and outputs.shape == (3, 5)
    scored = ~targets.isnan()
    expected = ((outputs[scored] - targets[scored]) ** 2).mean()
    loss = module.training_step((inputs, targets), 0)
    assert torch.allclose(loss, expected)
    loss.backward()
    assert all(torch.isfinite(parameter.grad).all() for parameter in module.parameters())
    assert not hasattr(module, "accuracy") and module.monitor == ("val/mse", "min")


def test_evaluation_logs_the_mse_over_all_scored_positions_of_the_split_and_no_accuracy(monkeypatch):
    module = scalar_module()
    logged = {}
    monkeypatch.setattr(module, "log_dict", lambda metrics, **options: logged.update(metrics))
    batches = [batch(3, 5, (4, 2, 0)), batch(2, 7, (6, 1))]
    errors = []
    with torch.no_grad():
        for index, (inputs, targets) in enumerate(batches):
            module.validation_step((inputs, targets), index)
            scored = ~targets.isnan()
            errors += ((module(inputs)[scored] - targets[scored]) ** 2).tolist()
    module.on_validation_epoch_end()
    assert sorted(logged) == ["val/loss", "val/mse"]
    assert logged["val/mse"] == logged["val/loss"] and math.isclose(logged["val/mse"], sum(errors) / 5, rel_tol=1e-6)


def test_a_classification_spec_keeps_its_decoder_and_selection():
    spec = TaskSpec(name="parity", input_kind="tokens", input_size=5, num_classes=5, random_accuracy=0.5, group="r")
    module = SequenceTaskModule(spec, nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10)
    assert spec.output_kind == "classes" and module(torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 5)
    assert module.monitor == ("val/scaled_accuracy", "max")


@pytest.mark.parametrize("changes, message", [
    ({"num_classes": 2}, "a scalar task has num_classes=1 and random_accuracy=None, not num_classes=2"),
    ({"random_accuracy": 0.5}, "a scalar task has num_classes=1 and random_accuracy=None, not num_classes=1 and "
                               "random_accuracy=0.5"),
    ({"output_kind": "vocab"}, r"output_kind='vocab' is not valid; valid choices: \['classes', 'scalar'\]"),
])
def test_a_spec_names_what_is_inconsistent(changes, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(**{**SCALAR.__dict__, **changes})
