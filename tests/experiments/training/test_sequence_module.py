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
SCALAR = TaskSpec(
    name="regression",
    input_kind="vectors",
    input_size=3,
    num_classes=1,
    random_accuracy=None,
    group="test",
    output_kind="scalar",
)


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


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_classes": 2}, "a scalar task has num_classes=1 and random_accuracy=None, not num_classes=2"),
        (
            {"random_accuracy": 0.5},
            "a scalar task has num_classes=1 and random_accuracy=None, not num_classes=1 and random_accuracy=0.5",
        ),
        (
            {"output_kind": "tokens"},
            r"output_kind='tokens' is not valid; valid choices: \['classes', 'scalar', 'vocab', "
            r"'sequence_class', 'sequence_pair_class'\]",
        ),
    ],
)
def test_a_spec_names_what_is_inconsistent(changes, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(**{**SCALAR.__dict__, **changes})


TOKENS = TaskSpec(name="recall", input_kind="tokens", input_size=11, num_classes=11, random_accuracy=0.1, group="test")


def token_batch():
    torch.manual_seed(1)
    inputs = torch.randint(0, 11, (3, 6))  # (B, S)
    targets = torch.full((3, 6), -100)  # (B, S)
    targets[0, [1, 4]] = torch.tensor([3, 5])
    targets[1, 2] = 7  # the third sample scores nothing
    return inputs, targets


def test_classes_are_decoded_at_the_scored_positions_only_with_the_full_decoders_loss_and_accuracy(monkeypatch):
    torch.manual_seed(0)
    module = SequenceTaskModule(TOKENS, nn.Linear(4, 4), embedding_dim=4, optim=OPTIM, max_steps=10)
    monkeypatch.setattr(module, "log", lambda *arguments, **options: None)
    logged = {}
    monkeypatch.setattr(module, "log_dict", lambda metrics, **options: logged.update(metrics))
    inputs, targets = token_batch()
    full = module(inputs)  # (B, S, C): every position decoded
    assert torch.allclose(module.training_step((inputs, targets), 0), module._loss(full, targets))
    with torch.no_grad():
        module.validation_step((inputs, targets), 0)
    module.on_validation_epoch_end()
    correct = full.argmax(-1) == targets
    expected = (
        (correct[0, 1].float() + correct[0, 4].float()) / 2 + correct[1, 2].float()
    ) / 2  # per sample, then mean
    assert math.isclose(logged["val/accuracy"], float(expected), abs_tol=1e-6)
    assert math.isclose(logged["val/loss"], float(module._loss(full, targets).detach()), rel_tol=1e-5)


def test_tied_embeddings_share_one_weight_and_a_task_without_matching_tokens_refuses_them():
    module = SequenceTaskModule(TOKENS, nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10, tie_embeddings=True)
    assert module.decoder.weight is module.encoder.weight and module.decoder.bias is None
    assert sum(parameter.numel() for parameter in module.parameters()) == 11 * 4
    untied = SequenceTaskModule(TOKENS, nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10)
    assert untied.decoder.weight is not untied.encoder.weight and untied.decoder.bias is not None
    with pytest.raises(ValueError, match="tie_embeddings needs token inputs"):
        SequenceTaskModule(SCALAR, nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10, tie_embeddings=True)
