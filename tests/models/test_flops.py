"""models.flops against a hand count and against torch's FlopCounterMode (which we did not write), and the dry run's
compute estimate: per-run FLOPs and GPU-hours, their totals, and the accelerator options."""

import io
import re

import pytest
import torch
from rich.console import Console
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from experiments.sweeps.compute_estimate import Accelerator
from experiments.sweeps.sweep import main as sweep_main
from experiments.sweeps.sweep import run_sweep
from models.flops import flops_per_token, matmul_parameters
from models.registry import build_language_model_from
from models.xlstm import components
from tests.sweep_fakes import small_artifact

BATCH, LENGTH, VOCAB, WIDTH = 2, 32, 100, 64


def test_a_one_block_llama_matches_the_hand_count():
    """E = 64, S = 32, V = 100, one block: Llama's SwiGLU hidden size is 8/3 E rounded up to a multiple of 64 = 192."""
    E, S, V, hidden = WIDTH, LENGTH, VOCAB, 192
    matmuls = {  # multiply-accumulates per token
        "q, k, v, o projections": 4 * E * E,
        "SwiGLU gate and up": 2 * E * hidden,
        "SwiGLU down": hidden * E,
        "QK^T (S keys of E)": S * E,
        "AV (S values of E)": S * E,
        "LM head": E * V,
    }  # the token embedding is a lookup: no multiply
    forward = 2 * sum(matmuls.values())  # 2 FLOPs per multiply-accumulate
    assert forward == 127_488
    flops = flops_per_token("llama", E, 1, sequence_length=S, output_size=V)
    assert flops.matmul_parameters == 4 * E * E + 3 * E * hidden  # the norms' scales are elementwise
    assert flops.forward == forward
    assert flops.training == 3 * forward


def test_the_terms_follow_the_architecture():
    """Attention grows with S, a recurrence does not; a vector input adds 2 d E; the chunkwise mLSTM costs less
    than the parallel one at S >> chunk size."""
    short, long = (flops_per_token("llama", WIDTH, 2, sequence_length=S, output_size=VOCAB) for S in (32, 64))
    assert long.sequence_mixing == 2 * short.sequence_mixing and long.parameters == short.parameters
    lstm = [flops_per_token("lstm", WIDTH, 2, sequence_length=S, output_size=VOCAB) for S in (32, 4096)]
    assert lstm[0] == lstm[1] and lstm[0].sequence_mixing == 0
    vectors = flops_per_token("lstm", WIDTH, 2, sequence_length=32, output_size=VOCAB, input_features=10)
    assert vectors.forward - lstm[0].forward == 2 * 10 * WIDTH
    forms = {
        form: flops_per_token(
            "xlstm_1_0", WIDTH, 2, {"mlstm": {"formulation": form}}, sequence_length=2048, output_size=VOCAB
        ).sequence_mixing
        for form in ("parallel", "chunkwise")
    }
    assert forms["chunkwise"] < forms["parallel"] / 4


def test_every_backbone_has_an_estimate_and_bad_values_are_named():
    for name in (
        "gla",
        "gpt3",
        "h3",
        "hgrn",
        "hgrn2",
        "hyena",
        "llama",
        "lstm",
        "lstm_block",
        "lstm_residual",
        "mamba",
        "retnet",
        "rwkv4",
        "rwkv5",
        "rwkv6",
        "xlstm_0_1",
        "xlstm_1_0",
        "xlstm_1_1",
        "xlstm_7_1",
    ):
        flops = flops_per_token(name, 256, 4, sequence_length=64, output_size=VOCAB)
        assert flops.training > 3 * flops.parameters > 0, name
    with pytest.raises(ValueError, match="unknown backbone 'lama'"):
        flops_per_token("lama", WIDTH, 1, sequence_length=32, output_size=VOCAB)
    with pytest.raises(ValueError, match="sequence_length=0 must be a positive integer"):
        flops_per_token("llama", WIDTH, 1, sequence_length=0, output_size=VOCAB)


def test_the_meta_build_counts_the_parameters_of_a_real_one():
    real = build_language_model_from("xlstm_1_1", VOCAB, embedding_dim=WIDTH, num_blocks=2).stack
    matmul = sum(p.numel() for name, p in real.named_parameters() if p.dim() >= 2 and not name.endswith("bias"))
    assert matmul_parameters("xlstm_1_1", WIDTH, 2, "{}") == matmul


def measured_training_flops(name: str, options: dict) -> int:
    """FlopCounterMode's count of one forward and backward of a language model on (BATCH, LENGTH) tokens."""
    torch.manual_seed(0)
    model = build_language_model_from(name, VOCAB, embedding_dim=WIDTH, num_blocks=1, **options)
    tokens = torch.randint(0, VOCAB, (BATCH, LENGTH))
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        model(tokens).logsumexp(-1).mean().backward()
    return counter.get_total_flops()


def estimated_training_flops(name: str, options: dict) -> float:
    return flops_per_token(name, WIDTH, 1, options, sequence_length=LENGTH, output_size=VOCAB).training * BATCH * LENGTH


def conv_overcount(channels: int, kernel_size: int = 4) -> int:
    """What FlopCounterMode counts for our CausalConv1d (a depthwise conv1d) beyond models.flops's 2 K FLOPs per
    channel and token, forward and twice backward: the counter gets the forward and the input gradient right but
    counts the weight gradient as a dense convolution (groups ignored), 2 K channels^2 per token instead of
    2 K channels."""
    return 2 * kernel_size * channels * (channels - 1) * BATCH * LENGTH


# FlopCounterMode counts matmuls (mm, bmm, addmm, baddbmm), convolutions and attention kernels, forward and backward;
# elementwise ops are free to both. SDPA runs in its math form (CPU's fused SDPA kernel is not counted), over the full
# S x S square as models.flops counts it. Head-wise maps run block-wise (below 512 features they run as one dense
# block-diagonal matmul, for speed on CPU: more FLOPs than the model needs). What remains is named per case, and
# then the two agree to the FLOP.
CASES = {
    "llama": ({}, lambda estimate: estimate),
    "gpt3": ({}, lambda estimate: estimate),
    # chunks of 8: 4 chunks of 32 steps, so both the within-chunk and the across-chunk terms are exercised
    "xlstm_1_0 chunkwise": (
        {"mlstm": {"formulation": "chunkwise", "chunk_size": 8, "backend": "torch_autograd"}},
        lambda estimate: estimate + conv_overcount(2 * WIDTH),
    ),
    # the parallel kernel also reads out a start state (zero in training): q C_0 and q n_0, 2 DH E_in + 2 E_in
    # FLOPs per token forward, and as much backward for q's gradient (the constant state needs none)
    "xlstm_1_0 parallel": (
        {"mlstm": {"formulation": "parallel", "backend": "torch_autograd"}},
        lambda estimate: (
            estimate
            + conv_overcount(2 * WIDTH)
            + 2 * (2 * (2 * WIDTH // 4) * 2 * WIDTH + 2 * 2 * WIDTH) * BATCH * LENGTH
        ),
    ),
    # the mLSTM at the embedding dim (Table abl_matrixmemory), without the convolution: no extra at all
    "xlstm_1_0 post-up-projection": (
        {
            "mlstm_block": "post_up_projection",
            "feedforward": {"gated": False},
            "mlstm": {
                "formulation": "chunkwise",
                "chunk_size": 8,
                "backend": "torch_autograd",
                "conv1d_kernel_size": 0,
            },
        },
        lambda estimate: estimate,
    ),
    # the first step's recurrent matmul multiplies h_0 = 0, which needs no gradient: one weight-sized matmul less
    "xlstm_0_1": (
        {"slstm": {"backend": "torch_autograd"}},
        lambda estimate: estimate + conv_overcount(WIDTH) - 2 * 4 * WIDTH * (WIDTH // 4) * BATCH,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_flop_counter_mode_measures_what_the_formula_says(case, monkeypatch):
    monkeypatch.setattr(components, "DENSE_HEADWISE_MAX_DIM", 0)
    options, expected_measurement = CASES[case]
    name = case.split()[0]
    measured = measured_training_flops(name, options)
    assert measured == expected_measurement(estimated_training_flops(name, options))  # exactly


@pytest.mark.parametrize(
    "name, options",
    [
        ("gla", {}),
        ("retnet", {}),
        ("hgrn2", {"expand_ratio": 32}),
        ("rwkv5", {"head_size": 32}),
        ("rwkv6", {"head_size": 32}),
    ],
)
def test_flop_counter_mode_measures_the_chunkwise_linear_rnns_within_two_percent(name, options):
    """Their chunkwise kernels run the terms models.flops counts as matmuls, and their decays elementwise."""
    width, length = 128, 64  # two heads or more, and chunks of 8 (16 for RWKV-5) that fill the sequence
    torch.manual_seed(0)
    model = build_language_model_from(name, VOCAB, embedding_dim=width, num_blocks=1, **options)
    with FlopCounterMode(display=False) as counter:
        model(torch.randint(0, VOCAB, (BATCH, length))).logsumexp(-1).mean().backward()
    estimate = flops_per_token(name, width, 1, options, sequence_length=length, output_size=VOCAB)
    assert estimate.sequence_mixing > 0
    assert counter.get_total_flops() == pytest.approx(estimate.training * BATCH * length, rel=2e-2)


def dry_run(*extra: str, root) -> str:
    console = Console(file=io.StringIO(), width=250)
    artifact = small_artifact(["llama", "xlstm_1_0"], tasks=["parity", "even_pairs"], seeds=[0, 1])
    assert (
        run_sweep(
            artifact, "smoke", dry_run=True, verbose=True, root=root, console=console, accelerator=Accelerator(*extra)
        )
        == 0
    )
    return console.file.getvalue()


def number_after(label: str, text: str) -> float:
    return float(re.search(rf"{label}: ([0-9.e+-]+)", text).group(1))


def test_the_dry_run_prints_flops_and_gpu_hours_per_run_and_in_total(tmp_path):
    output = dry_run(root=tmp_path)
    rows = [line.split() for line in output.splitlines() if line.split()[:1] in (["llama"], ["xlstm_1_0"])]
    per_run = [row for row in rows if len(row) == 9]  # model task lr seed run_id status tokens FLOPs GPU-h
    assert len(per_run) == 8 and all(row[5] == "pending" for row in per_run)
    tokens, flops, hours = (sum(float(row[column]) for row in per_run) for column in (6, 7, 8))
    assert number_after("damaged runs", output) == tokens  # 8 x 3.2e+03, exact
    total_flops = number_after("FLOPs", output)
    total_hours = number_after("GPU-hours", output)
    # the rows print two significant digits, the totals three
    assert total_flops == pytest.approx(flops, rel=5e-2) and total_hours == pytest.approx(hours, rel=5e-2)
    assert total_hours == pytest.approx(total_flops / (312e12 * 0.4) / 3600, rel=1e-2)
    assert "GPU-hours: " in output and "on A100 bf16 (312 TFLOP/s) at 40% utilisation" in output
    # one run by hand: 10 steps x batch 8 x parity's train_max_length 40 (the fixture's smoke scale)
    llama_parity = next(row for row in per_run if row[:2] == ["llama", "parity"])
    config = small_artifact(["llama"]).runs("smoke")[0].config
    per_token = flops_per_token(
        "llama", config.model.embedding_dim, config.model.num_blocks, sequence_length=40, output_size=2
    )  # parity: two classes
    assert float(llama_parity[6]) == 10 * 8 * 40
    assert float(llama_parity[7]) == pytest.approx(per_token.training * 10 * 8 * 40, rel=5e-2)


def test_the_accelerator_is_an_option_of_the_dry_run(tmp_path, capsys):
    faster = dry_run("H100 bf16", 989.0, 0.5, root=tmp_path)
    assert "on H100 bf16 (989 TFLOP/s) at 50% utilisation" in faster
    assert number_after("GPU-hours", faster) == pytest.approx(
        number_after("FLOPs", faster) / (989e12 * 0.5) / 3600, rel=1e-2
    )
    assert (
        sweep_main(["sweep-fixture", "--scale", "smoke", "--dry-run", "--root", str(tmp_path), "--utilization", "1.5"])
        == 2
    )
    assert "--utilization=1.5 must be in (0, 1]" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_every_lra_run_is_estimated_images_by_their_pixels_and_retrieval_by_both_documents():
    from experiments.config.artifacts import load_artifact
    from experiments.sweeps.compute_estimate import run_compute

    runs = {(run.cell["task"], run.cell["model"]): run for run in load_artifact("lra_test_accuracy").runs("paper")}
    computes = {key: run_compute(run.config) for key, run in runs.items()}
    assert all(compute.tokens is not None for compute in computes.values())
    pathfinder = runs["lra_pathfinder", "llama"].config.trainer
    assert computes["lra_pathfinder", "llama"].tokens == pathfinder.max_steps * pathfinder.batch_size * 32 * 32
    retrieval = runs["lra_retrieval", "llama"].config
    assert computes["lra_retrieval", "llama"].tokens == (
        retrieval.trainer.max_steps * retrieval.trainer.batch_size * 2 * retrieval.task.max_length
    )
