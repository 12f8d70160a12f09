"""Step equals forward on CUDA, for every backbone of configs/model/: the recurrent step API (the kernels' step
backends: mlstm_kernels' step kernel, the compiled sLSTM cell, ...) over a sequence gives the outputs of the
parallel forward (the chunkwise kernels: TFLA or our Triton mLSTM, fla's, ...), in float32.

The backbones are the configs' (embedding 128, 2 blocks; xLSTM[7:1] 8) with every parameter perturbed, so that no
zero-initialised path (a recurrent matrix, an output projection) hides a difference; 80 steps: two chunks of 64, the
second ragged. Bound: kernels.probe's float32 tolerance relative to the largest output (TF32 matmuls in cuDNN's
convolutions and Triton's dots stay well within it).
"""

import pytest
import torch
import yaml

from kernels.probe import TOLERANCE
from models.registry import build_backbone
from tests.gpu.training_runs import MODEL_CONFIGS, model_configs

pytestmark = pytest.mark.gpu

CUDA = torch.device("cuda")
BATCH, STEPS = 2, 80


def backbone_configs() -> dict[str, dict]:
    """Backbone name -> its config file's keyword config (mamba_tied.yaml builds mamba's backbone: once)."""
    configs = {}
    for model in model_configs():
        config = yaml.safe_load((MODEL_CONFIGS / f"{model}.yaml").read_text())
        configs.setdefault(
            config["name"],
            dict(embedding_dim=config["embedding_dim"], num_blocks=config["num_blocks"], **config["options"]),
        )
    return configs


@pytest.mark.parametrize("model", sorted(backbone_configs()))
def test_step_equals_forward_on_cuda(model):
    config = backbone_configs()[model]
    torch.manual_seed(0)
    backbone = build_backbone(model, **config)
    with torch.no_grad():
        for parameter in backbone.parameters():
            parameter.add_(0.02 * torch.randn_like(parameter))
    backbone = backbone.to(CUDA).eval()
    x = torch.randn(BATCH, STEPS, config["embedding_dim"], generator=torch.Generator().manual_seed(1)).to(CUDA)
    with torch.no_grad():
        expected = backbone(x)  # (B, S, D)
        state, outputs = backbone.init_state(BATCH), []
        for t in range(STEPS):
            y_t, state = backbone.step(x[:, t], state)
            outputs.append(y_t)
    stepped = torch.stack(outputs, dim=1)  # (B, S, D)
    assert expected.shape == x.shape and expected.abs().max() > 0
    error = ((stepped - expected).abs().max() / expected.abs().max()).item()
    assert error <= TOLERANCE[torch.float32], f"{model}: step against forward, relative error {error:.3g}"
