"""SequenceTaskModule's whole-sequence classification (TaskSpec output kinds "sequence_class" and
"sequence_pair_class", the LRA): mean and last pooling over a sequence's own positions, padding that changes nothing
for a causal backbone, the pair features of the two-tower head, and per-sequence loss and accuracy."""

import math

import pytest
import torch
from torch import nn

from experiments.training.module import SequenceTaskModule
from experiments.training.pooling import pair_features, pool
from models.registry import build_backbone
from tasks.spec import TaskSpec

OPTIM = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0, "warmup_fraction": 0.1, "min_lr": 1e-7}


def spec(pooling: str, kind: str = "sequence_class") -> TaskSpec:
    return TaskSpec(
        name="classify",
        input_kind="tokens",
        input_size=9,
        num_classes=3,
        random_accuracy=1 / 3,
        group="test",
        output_kind=kind,
        pooling=pooling,
    )


def sequences_of(labels: list[int], lengths: list[int], width: int):
    torch.manual_seed(2)
    inputs = torch.randint(1, 9, (len(labels), width))  # (B, S)
    inside = torch.arange(width) < torch.tensor(lengths)[:, None]  # (B, S)
    return inputs * inside, torch.where(inside, torch.tensor(labels)[:, None], -100)


def test_mean_and_last_pooling_take_each_sequences_own_positions():
    hidden = torch.arange(2 * 4 * 2, dtype=torch.float32).reshape(2, 4, 2)  # (N, S, D)
    inside = torch.tensor([[True, True, True, False], [True, False, False, False]])
    assert pool(hidden, inside, "mean").tolist() == [[2.0, 3.0], [8.0, 9.0]]
    assert pool(hidden, inside, "last").tolist() == [[4.0, 5.0], [8.0, 9.0]]
    with pytest.raises(ValueError, match=r"pooling='max' is not valid; valid choices: \['mean', 'last'\]"):
        pool(hidden, inside, "max")
    pairs = torch.tensor([[[1.0, 2.0], [3.0, 5.0]]])  # (B, 2, D)
    assert pair_features(pairs).tolist() == [[1.0, 2.0, 3.0, 5.0, 3.0, 10.0, -2.0, -3.0]]


@pytest.mark.parametrize("pooling", ["mean", "last"])
def test_padding_after_a_sequence_does_not_change_its_logits_under_a_causal_backbone(pooling):
    torch.manual_seed(0)
    module = SequenceTaskModule(
        spec(pooling), build_backbone("lstm", embedding_dim=8, num_blocks=1), embedding_dim=8, optim=OPTIM, max_steps=10
    )
    inputs, targets = sequences_of([2, 0], [3, 7], width=7)
    with torch.no_grad():
        batched, labels = module._pooled_logits(inputs, targets)
        alone, _ = module._pooled_logits(inputs[:1, :3], targets[:1, :3])
    assert labels.tolist() == [2, 0] and batched.shape == (2, 3)
    assert torch.allclose(batched[0], alone[0], atol=1e-6)


def test_one_loss_and_one_accuracy_per_sequence(monkeypatch):
    torch.manual_seed(0)
    module = SequenceTaskModule(spec("mean"), nn.Linear(4, 4), embedding_dim=4, optim=OPTIM, max_steps=10)
    monkeypatch.setattr(module, "log", lambda *arguments, **options: None)
    logged = {}
    monkeypatch.setattr(module, "log_dict", lambda metrics, **options: logged.update(metrics))
    inputs, targets = sequences_of([2, 0, 1], [5, 2, 6], width=6)
    hidden = module.backbone(module.encoder(inputs))  # (B, S, D)
    means = torch.stack([hidden[0, :5].mean(0), hidden[1, :2].mean(0), hidden[2].mean(0)])  # (B, D)
    logits = module.decoder(means)  # (B, C)
    expected = nn.functional.cross_entropy(logits, torch.tensor([2, 0, 1]))
    assert torch.allclose(module.training_step((inputs, targets), 0), expected)
    with torch.no_grad():
        module.validation_step((inputs, targets), 0)
    module.on_validation_epoch_end()
    accuracy = (logits.argmax(-1) == torch.tensor([2, 0, 1])).float().mean()
    assert math.isclose(logged["val/accuracy"], float(accuracy), abs_tol=1e-6)
    assert math.isclose(logged["val/loss"], float(expected.detach()), rel_tol=1e-5)


def test_a_pair_is_classified_from_the_features_of_its_two_pooled_sequences():
    torch.manual_seed(0)
    module = SequenceTaskModule(
        spec("last", "sequence_pair_class"), nn.Identity(), embedding_dim=4, optim=OPTIM, max_steps=10
    )
    first, first_targets = sequences_of([1, 0], [3, 5], width=5)
    second, second_targets = sequences_of([1, 0], [5, 1], width=5)
    inputs, targets = torch.stack([first, second], 1), torch.stack([first_targets, second_targets], 1)  # (B, 2, S)
    logits, labels = module._pooled_logits(inputs, targets)
    embedded = module.encoder
    lasts = torch.stack(
        [
            torch.stack([embedded(first[0, 2]), embedded(second[0, 4])]),
            torch.stack([embedded(first[1, 4]), embedded(second[1, 0])]),
        ]
    )  # (B, 2, D)
    assert labels.tolist() == [1, 0] and torch.allclose(logits, module.decoder(pair_features(lasts)))


def test_a_spec_of_a_sequence_kind_needs_a_pooling_and_no_other_kind_takes_one():
    with pytest.raises(ValueError, match=r"pooling=None is not valid; valid choices: \['mean', 'last'\]"):
        spec(None)
    with pytest.raises(ValueError, match="pooling='mean' is only for the kinds"):
        TaskSpec(
            name="x", input_kind="tokens", input_size=3, num_classes=3, random_accuracy=0.5, group="t", pooling="mean"
        )
