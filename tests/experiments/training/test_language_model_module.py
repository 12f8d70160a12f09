"""The language-model training module and the paper's LM recipe (Appendix B.2): AdamW (0.9, 0.95, eps 1e-5), weight
decay 0.1 with embedding, norms and biases excluded, 750 warm-up steps, cosine decay to 10% of the peak, perplexity
as the token-weighted mean cross-entropy's exponential."""

import math

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from experiments.config.configuration import compose_run_config
from experiments.training.language_model_module import LanguageModelModule
from experiments.training.train import build_module
from models.language_model import LanguageModel
from models.xlstm.language_model import XLSTMLanguageModel
from tasks.spec import IGNORE_INDEX, TaskSpec

VOCAB = 64
SPEC = TaskSpec(
    name="toy_lm",
    input_kind="tokens",
    input_size=VOCAB,
    num_classes=VOCAB,
    random_accuracy=1 / VOCAB,
    group="language modelling",
    output_kind="vocab",
)


def lm_config(model: str, **optim):
    config = compose_run_config([f"model={model}", "optim=adamw_lm", "trainer.max_steps=28170"])
    for key, value in optim.items():
        OmegaConf.update(config, f"optim.{key}", value)
    return config


def test_the_lm_recipe_is_the_papers():
    """Appendix B.2, quoted in configs/optim/adamw_lm.yaml; Table 1's runs decay over 30k steps, compared at 28170."""
    module = build_module(lm_config("llama", decay_steps=30000), SPEC)
    optimizers = module.configure_optimizers()
    optimizer, schedule = optimizers["optimizer"], optimizers["lr_scheduler"]["scheduler"]
    assert optimizer.defaults["betas"] == (0.9, 0.95) and optimizer.defaults["eps"] == 1e-5
    factor = schedule.lr_lambdas[0]
    assert factor(0) == pytest.approx(1 / 750) and factor(749) == pytest.approx(1.0)
    assert factor(30000) == pytest.approx(0.1)  # "cosine decay to 10% of the peak learning rate"
    halfway = 750 + (30000 - 750) / 2
    assert factor(halfway) == pytest.approx(0.55)  # 0.1 + 0.9 * (1 + cos(pi / 2)) / 2
    progress = (28170 - 750) / (30000 - 750)
    assert factor(28170) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def test_weight_decay_spares_the_token_embedding_norms_and_biases():
    module = build_module(lm_config("llama"), SPEC)
    decayed, spared = module.configure_optimizers()["optimizer"].param_groups
    assert decayed["weight_decay"] == 0.1 and spared["weight_decay"] == 0.0
    spared_ids = {id(p) for p in spared["params"]}
    assert id(module.model.token_embedding.weight) in spared_ids
    assert id(module.model.lm_head.weight) not in spared_ids  # untied: the head decays
    for name, parameter in module.named_parameters():
        if "norm" in name.lower() or name.endswith("bias"):
            assert id(parameter) in spared_ids, name


def test_xlstm_runs_get_xlstms_own_language_model_and_others_the_generic_one():
    assert isinstance(build_module(lm_config("xlstm_1_0"), SPEC).model, XLSTMLanguageModel)
    module = build_module(lm_config("llama"), SPEC)
    assert isinstance(module.model, LanguageModel)
    assert module.model.lm_head.weight is not module.model.token_embedding.weight  # untied unless a config ties
    tied = compose_run_config(["model=llama", "optim=adamw_lm", "+model.tie_embeddings=true"])
    model = build_module(tied, SPEC).model
    assert model.lm_head.weight is model.token_embedding.weight


def test_perplexity_is_the_token_weighted_mean_cross_entropys_exponential():
    """Batches with different numbers of scored tokens: every token counts once (a mean of batch means would not)."""
    torch.manual_seed(0)
    module = LanguageModelModule(SPEC, LanguageModel(torch.nn.Identity(), VOCAB, 8), optim={}, max_steps=1)
    batches = []
    for scored in (5, 17):
        inputs = torch.randint(VOCAB, (2, 12))
        targets = torch.randint(VOCAB, (2, 12))
        targets.view(-1)[scored:] = IGNORE_INDEX
        batches.append((inputs, targets))
    for batch in batches:
        module._evaluate(batch, "val")
    logged = {}
    module.log_dict = lambda values, **_: logged.update(values)
    module.on_validation_epoch_end()
    with torch.no_grad():
        losses = [
            F.cross_entropy(module.model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")
            for x, y in batches
        ]
    expected = sum(losses) / (5 + 17)
    assert logged["val/loss"].item() == pytest.approx(expected.item(), rel=1e-6)
    assert logged["val/perplexity"].item() == pytest.approx(math.exp(expected.item()), rel=1e-6)


def test_a_batch_with_a_nan_loss_makes_the_splits_loss_nan_not_a_mean_of_the_others():
    """A diverging model must not show the perplexity of the batches it still gets finite (torchmetrics' default
    drops NaN values)."""
    module = LanguageModelModule(SPEC, LanguageModel(torch.nn.Identity(), VOCAB, 8), optim={}, max_steps=1)
    module.loss["val"].update(torch.tensor(2.0), weight=torch.tensor(5))
    module.loss["val"].update(torch.tensor(math.nan), weight=torch.tensor(17))
    logged = {}
    module.log_dict = lambda values, **_: logged.update(values)
    module.on_validation_epoch_end()
    assert math.isnan(logged["val/loss"].item()) and math.isnan(logged["val/perplexity"].item())


def test_the_module_refuses_a_task_that_is_not_language_modelling():
    spec = TaskSpec(name="parity", input_kind="tokens", input_size=2, num_classes=2, random_accuracy=0.5, group="R")
    with pytest.raises(ValueError, match="output kind 'vocab'"):
        LanguageModelModule(spec, LanguageModel(torch.nn.Identity(), 2, 8), optim={}, max_steps=1)
