"""Backbone configs are validated without torch, and find every inconsistency the module build finds.

A sweep or train command checks each run's model config with ``models.catalog`` before importing torch, so a bad
config is rejected at once. That only holds if (a) the config modules never import torch and (b) a config that
constructs always builds: both are checked here, the second against building the module on the meta device.
"""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from models import catalog, registry

ROOT = Path(__file__).resolve().parents[2]

# name -> (options, None if valid else a regex of the ValueError); the build on the meta device must agree.
CASES = {
    "lstm": [
        ({}, None),
        ({"hidden": 3}, r"unknown lstm option\(s\) \['hidden'\]; valid choices"),
        ({"num_blocks": 0}, r"lstm.num_blocks=0 must be positive"),
    ],
    "lstm_residual": [({"norm_eps": 1e-6}, None), ({"norm_eps": 0}, r"norm_eps=0 must be positive")],
    "lstm_block": [
        ({"ffn_proj_factor": 2.0}, None),
        ({"ffn_proj_factor": 1.01}, r"whole number of MLP units"),
        ({"ffn_bias": True, "dropout": 0.1}, r"unknown lstm_block option\(s\) \['dropout'\]"),
    ],
    "xlstm": [
        ({"slstm_at": [1], "slstm": {"num_heads": 2}}, None),
        ({"slstm_at": [2]}, r"xlstm.slstm_at=\[2\] must hold distinct block indices in \[0, 1\]"),
        ({"mlstm": {"num_heads": 5}}, r"divisible by mlstm.num_heads=5"),
    ],
    "xlstm_0_1": [
        ({"embedding_dim": 64, "slstm": {"num_heads": 1, "conv1d_kernel_size": 0}}, None),
        ({"embedding_dim": 30}, r"xlstm.embedding_dim=30 must be divisible by slstm.num_heads=4"),
        ({"slstm": {"bias_init": "zero"}}, r"slstm.bias_init='zero' is not valid; valid choices"),
        ({"slstm": {"heads": 2}}, r"unknown slstm option\(s\) \['heads'\]"),
        ({"slstm_at": [0]}, r"places its sLSTM blocks itself"),
    ],
    "xlstm_1_0": [
        ({"mlstm": {"num_heads": 1}}, None),
        ({"mlstm": {"forget_gate": "tanh"}}, r"mlstm.forget_gate='tanh' is not valid"),
        ({"mlstm": {"backend": "cuda"}}, r"mlstm.backend='cuda' is not valid; valid choices"),
        ({"embedding_dim": 40, "mlstm": {"num_heads": 3}}, r"divisible by mlstm.num_heads=3"),
        (
            {
                "mlstm": {
                    "forget_gate_input_dependent": False,
                    "forget_gate_learnable_bias": False,
                    "forget_gate_bias_init": "infinity",
                    "input_gate_bias_init": "zeros",
                }
            },
            None,
        ),
        (
            {"mlstm": {"forget_gate_bias_init": "infinity"}},
            r"forget_gate_bias_init='infinity' fixes the forget gate at one.*forget_gate_input_dependent=True",
        ),
        ({"mlstm": {"input_gate_bias_init": "ones"}}, r"input_gate_bias_init='ones' is not valid; valid"),
        ({"mlstm_block": "post_up_projection", "feedforward": {"gated": False, "activation": "relu^2"}}, None),
        ({"mlstm_block": "post"}, r"xlstm.mlstm_block='post' is not valid; valid choices"),
        (
            {"embedding_dim": 20, "mlstm_block": "post_up_projection", "mlstm": {"num_heads": 8}},
            r"embedding_dim=20 must be divisible by mlstm.num_heads=8",
        ),
    ],
    "xlstm_1_1": [
        ({"embedding_dim": 32, "num_blocks": 4}, None),
        ({"feedforward": {"activation": "tanh"}}, r"feedforward.activation='tanh' is not valid"),
    ],
    "xlstm_7_1": [({"num_blocks": 8}, None), ({"num_blocks": 3}, r"xlstm_7_1 needs num_blocks >= 4")],
    "gla": [
        ({}, None),
        ({"num_head": 4}, r"unknown gla option\(s\) \['num_head'\]; valid choices"),
        ({"backend": "cuda"}, r"gla\.backend='cuda' is not valid; valid choices"),
        ({"embedding_dim": 96, "num_heads": 5}, r"gla\.key_dim=48 must be divisible by num_heads=5"),
        ({"embedding_dim": 30, "expand_k": 0.25}, r"expand_k=0\.25 times embedding_dim=30 must be"),
        ({"num_heads": 4.0}, r"gla\.num_heads=4\.0 must be an integer"),
    ],
    "hgrn": [
        ({"embedding_dim": 64, "expand_ratio": 1.5}, None),
        ({"expand": 2}, r"unknown hgrn option\(s\) \['expand'\]; valid choices"),
        ({"backend": "triton"}, r"hgrn\.backend='triton' is not valid; valid choices"),
        ({"use_lower_bound": "yes"}, r"hgrn\.use_lower_bound='yes' is not valid; valid choices"),
    ],
    "hgrn2": [
        ({"embedding_dim": 64, "expand_ratio": 32}, None),
        ({"num_heads": 2}, r"unknown hgrn2 option\(s\) \['num_heads'\]; valid choices"),
        ({"embedding_dim": 96, "expand_ratio": 64}, r"hgrn2\.embedding_dim=96 must be divisible"),
    ],
    "retnet": [
        ({"embedding_dim": 64, "num_heads": 4}, None),
        ({"embedding_dim": 30, "num_heads": 4}, r"retnet\.key_dim=30 must be divisible by num_heads=4"),
        ({"embedding_dim": 24, "num_heads": 8}, r"head key dim key_dim/num_heads=3 must be even"),
        ({"embedding_dim": 32, "num_heads": 8, "expand_v": 0.625}, r"retnet\.value_dim=20 must be divisible"),
    ],
    "rwkv6": [
        ({"embedding_dim": 64, "head_size": 16}, None),
        ({"head_dim": 16}, r"unknown rwkv6 option\(s\) \['head_dim'\]; valid choices"),
        ({"embedding_dim": 96}, r"rwkv6\.key_dim=96 must be divisible by head_size=64"),
        ({"embedding_dim": 64, "head_size": 16, "expand_k": 0.75}, r"rwkv6\.value_dim=64 must be divisible"),
    ],
    "llama": [
        ({"embedding_dim": 64, "num_heads": 4}, None),
        ({"dropout": 0.1}, r"unknown llama option\(s\) \['dropout'\]; valid choices: \[.*'num_heads'"),
        ({"embedding_dim": 30, "num_heads": 4}, r"llama.num_heads=4 must be positive and divide"),
        ({"embedding_dim": 24, "num_heads": 8}, r"llama.num_heads=8 gives an odd head dim 3"),
        ({"ffn_hidden_dim": 0}, r"llama.ffn_hidden_dim=0 must be positive"),
    ],
    "gpt3": [
        ({"embedding_dim": 24, "num_heads": 8, "max_context_length": 16}, None),
        ({"rope_theta": 10000.0}, r"unknown gpt3 option\(s\) \['rope_theta'\]"),
        ({"embedding_dim": 30, "num_heads": 4}, r"gpt3.num_heads=4 must be positive and divide embedding_dim=30"),
        ({"max_context_length": 0}, r"gpt3.max_context_length=0 must be positive"),
    ],
    "h3": [
        ({"embedding_dim": 16, "head_dim": 2, "state_dim": 8}, None),
        ({"heads": 2}, r"unknown h3 option\(s\) \['heads'\]"),
        ({"conv_method": "fourier"}, r"h3.conv_method='fourier' is not valid; valid choices: \['fft', 'direct'\]"),
        ({"embedding_dim": 16, "head_dim": 3}, r"h3.head_dim=3 must divide h3.embedding_dim=16"),
        ({"state_dim": 7}, r"h3.state_dim=7 must be even"),
        ({"dt_min": 0.5}, r"h3.dt_min=0.5 must not exceed h3.dt_max=0.1"),
    ],
    "hyena": [
        ({"embedding_dim": 16, "order": 3, "max_length": 64, "filter_embedding_dim": 5}, None),
        ({"num_heads": 2}, r"unknown hyena option\(s\) \['num_heads'\]"),
        ({"backend": "flashfftconv"}, r"hyena.backend='flashfftconv' is not valid"),
        ({"order": 1}, r"hyena.order=1 must be at least 2"),
        ({"filter_embedding_dim": 4}, r"hyena.filter_embedding_dim=4 must be odd and at least 3"),
    ],
    "mamba": [
        ({"embedding_dim": 16, "state_dim": 8, "dt_rank": 3}, None),
        ({"d_state": 16}, r"unknown mamba option\(s\) \['d_state'\]"),
        ({"backend": "cuda"}, r"mamba.backend='cuda' is not valid; valid choices"),
        ({"chunk_size": 0}, r"mamba.chunk_size=0 must be positive"),
        ({"dt_rank": 3.0}, r"mamba.dt_rank=3.0 must be an integer"),
    ],
    "rwkv4": [
        ({"embedding_dim": 16, "ffn_proj_factor": 3.5}, None),
        ({"dim_att": 16}, r"unknown rwkv4 option\(s\) \['dim_att'\]"),
        ({"backend": "fla"}, r"rwkv4.backend='fla' is not valid; valid choices: \['auto', 'torch'\]"),
        ({"embedding_dim": 16, "ffn_proj_factor": 1.01}, r"rwkv4.ffn_proj_factor=1.01 times"),
    ],
    "rwkv5": [
        ({"embedding_dim": 64, "head_size": 16}, None),
        ({"heads": 2}, r"unknown rwkv5 option\(s\) \['heads'\]; valid choices"),
        ({"embedding_dim": 64, "head_size": 16, "backend": "cuda"}, r"rwkv5\.backend='cuda' is not valid"),
        ({"embedding_dim": 96}, r"rwkv5\.head_size=64 must divide rwkv5\.embedding_dim=96"),
        ({"embedding_dim": 64, "head_size": 16, "ffn_dim": 0}, r"rwkv5\.ffn_dim=0 must be positive"),
    ],
}
TINY = {"embedding_dim": 16, "num_blocks": 2}


def _cases():
    for name, cases in CASES.items():
        for options, expected in cases:
            yield pytest.param(name, {**TINY, **options}, expected, id=f"{name}-{options}")


def test_every_backbone_has_a_config_function_and_cases():
    assert catalog.known_backbones() == registry.known_backbones()
    assert set(CASES) == set(catalog.known_backbones())
    for name, cases in CASES.items():
        assert any(expected is None for _, expected in cases), name
        assert any(expected is not None for _, expected in cases), name


@pytest.mark.parametrize("name, options, expected", list(_cases()))
def test_the_config_rejects_exactly_what_the_module_build_rejects(name, options, expected):
    if expected is None:
        catalog.backbone_config(name, **options)
        with torch.device("meta"):
            registry.build_backbone(name, **options)
        return
    with pytest.raises(ValueError, match=expected):
        catalog.backbone_config(name, **options)
    with pytest.raises(ValueError, match=expected), torch.device("meta"):
        registry.build_backbone(name, **options)


# torch-free list of kernel backends in a config module -> the kernel ops (kernels.backends registry) it selects for
BACKEND_LISTS = {
    ("models.xlstm.config", "MLSTM_BACKENDS"): ["mlstm.chunkwise", "mlstm.parallel", "mlstm.recurrent", "mlstm.step"],
    ("models.xlstm.config", "SLSTM_BACKENDS"): ["slstm.scan"],
    ("models.mamba.config", "BACKENDS"): ["selective_scan"],
    ("models.rwkv4.config", "BACKENDS"): ["wkv4"],
    ("models.rwkv5.config", "BACKENDS"): ["wkv5"],
    ("models.ssm_conv.config", "BACKENDS"): ["long_conv"],
    ("models.linear_rnn.config", "BACKENDS"): ["gla", "hgrn", "retention", "rwkv6"],
}


@pytest.mark.parametrize("module, name", list(BACKEND_LISTS))
def test_the_backend_choices_of_a_config_are_the_kernel_registry_s(module, name):
    from kernels.backends import backends_of

    for kernel in ("linear_attention", "long_conv", "mlstm", "selective_scan", "slstm", "wkv4", "wkv5"):
        importlib.import_module(f"kernels.{kernel}")  # registers its backends

    registered = {backend for op in BACKEND_LISTS[module, name] for backend in backends_of(op)}
    assert set(getattr(importlib.import_module(module), name)) == {"auto", *registered}


def test_the_torch_free_list_of_long_convolution_methods_is_the_kernels():
    from kernels.long_conv import METHODS
    from models.ssm_conv.config import CONV_METHODS

    assert tuple(CONV_METHODS) == tuple(METHODS)


def test_unknown_backbone_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown backbone 'lama'; valid choices: \[.*'llama'"):
        catalog.backbone_config("lama")


def _run_without_torch(code: str) -> subprocess.CompletedProcess:
    check = (
        "\nloaded = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning'))"
        "\nassert not loaded, loaded"
    )
    return subprocess.run(
        [sys.executable, "-c", "import sys\n" + code + check], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_configs_and_run_validation_import_no_torch():
    result = _run_without_torch(
        "import experiments.config.validation, models.catalog\n"
        "for name in models.catalog.known_backbones():\n"
        "    models.catalog.backbone_config(name, embedding_dim=128, num_blocks=8)"
    )
    assert result.returncode == 0, result.stderr


def test_the_sweep_command_rejects_an_inconsistent_config_before_importing_torch(tmp_path):
    result = _run_without_torch(
        "from experiments.cli import main\n"
        f"assert main(['sweep', 'formal-main', '--scale', 'smoke', '--dry-run', '--root', {str(tmp_path)!r},"
        " 'model.embedding_dim=30']) == 2"
    )
    assert result.returncode == 0, result.stderr
    assert "=30 must be divisible by" in result.stderr
    assert not any(tmp_path.iterdir())


def test_the_report_command_rejects_a_bad_value_before_importing_the_plotting_stack():
    check = (
        "\nloaded = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'seaborn', 'scipy'))"
        "\nassert not loaded, loaded"
    )
    code = (
        "import sys\nfrom experiments.cli import main\n"
        "assert main(['report', 'formal-main', '--scale', 'mini', 'model.embedding_dim=abc']) == 2"
    )
    result = subprocess.run([sys.executable, "-c", code + check], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "model.embedding_dim='abc' must be an integer" in result.stderr
