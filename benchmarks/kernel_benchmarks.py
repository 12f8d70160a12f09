"""Our mLSTM and sLSTM kernels against the official ones (mlstm_kernels==2.0.6, xlstm==2.0.6): time, memory, GFLOP/s;
Mamba's selective scan against transformers' torch reference scan; the gated linear attention of GLA, HGRN2 and
RWKV-6 against flash-linear-attention's recurrent reference.

Every peer is the fastest of the official native torch kernels of that formulation, timed interleaved with ours.
"""

import itertools

import torch

import kernels.mlstm as mlstm
import kernels.slstm as slstm
from benchmarks.comparison import Comparison
from benchmarks.memory import LiveTensorBytes
from benchmarks.timing import interleaved_medians
from kernels.linear_attention import gla, rwkv6
from kernels.selective_scan import selective_scan

B, NH, DH = 1, 4, 64
CHUNK = 64
MIB = 2**20
OFFICIAL_PEERS = {  # formulation -> official native kernels (mlstm_kernels names)
    "chunkwise": ["chunkwise--native_custbw", "chunkwise--native_autograd"],
    "parallel": ["parallel--native_custbw", "parallel--native_autograd"],
    "recurrent": ["native_sequence__native"],
}
# the targets: (formulation, mode, S) -> minimum speed-up over the fastest official native kernel
SPEED_TARGETS = {
    ("chunkwise", "fwd+bwd", 4096): 2.0,
    ("parallel", "fwd", 4096): 3.0,
    ("parallel", "fwd+bwd", 4096): 3.0,
}
MEMORY_TARGETS = {"chunkwise": 1.0, "parallel": 8.0}  # at S = 4096: official peak / our peak


def mlstm_inputs(S: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """q, k, v (B, NH, S, DH), i ~ N(0, 1) and f ~ 3 + N(0, 1) (B, NH, S), float32, requiring grad."""
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, NH, S, DH, generator=generator) for _ in range(3))
    i = torch.randn(B, NH, S, generator=generator)
    f = 3 + torch.randn(B, NH, S, generator=generator)
    return tuple(x.requires_grad_() for x in (q, k, v, i, f))


def ours(formulation: str):
    options = {"chunk_size": CHUNK} if formulation == "chunkwise" else {}
    function = getattr(mlstm, formulation)
    return lambda q, k, v, i, f: function(q, k, v, i, f, **options)


def official(name: str):
    """An official kernel as (q, k, v, i, f) -> h; it scales q where we scale k: the same h."""
    from mlstm_kernels.torch import get_mlstm_kernel, get_mlstm_sequence_kernel

    if name.startswith("native_sequence"):
        return get_mlstm_sequence_kernel(name)
    kernel = get_mlstm_kernel(name)
    options = {"chunk_size": CHUNK} if name.startswith("chunkwise") else {}
    return lambda q, k, v, i, f: kernel(q=q, k=k, v=v, i=i, f=f, **options)


def run_mode(function, inputs, mode: str):
    """A no-argument callable running ``function`` once: forward only, or forward and backward of h.sum()."""
    if mode == "fwd":

        def forward():
            with torch.no_grad():
                function(*inputs)

        return forward

    def forward_backward():
        for tensor in inputs:
            tensor.grad = None
        function(*inputs).sum().backward()

    return forward_backward


def chunkwise_flops(S: int, mode: str) -> float:
    """Matmul FLOPs of the chunkwise form: per chunk of L steps q k^T and (.)v (4 L^2 DH), q C and k^T v
    (4 L DH^2); the backward counted as twice the forward."""
    forward = B * NH * S * (4 * CHUNK * DH + 4 * DH * DH)
    return forward * (3 if mode == "fwd+bwd" else 1)


def mlstm_comparisons(lengths, repeats: int, matmul_peak: float) -> list[Comparison]:
    rows = []
    for S in lengths:
        inputs = mlstm_inputs(S)
        for formulation, peers in OFFICIAL_PEERS.items():
            for mode in ("fwd", "fwd+bwd"):
                candidates = {"ours": run_mode(ours(formulation), inputs, mode)}
                candidates |= {name: run_mode(official(name), inputs, mode) for name in peers}
                times = interleaved_medians(candidates, repeats)
                peer = min(peers, key=times.get)
                target = SPEED_TARGETS.get((formulation, mode, S))
                rows.append(
                    Comparison(
                        f"mLSTM {formulation} {mode}",
                        f"S={S}",
                        "ms",
                        times["ours"] * 1e3,
                        peer,
                        times[peer] * 1e3,
                        target,
                    )
                )
                if formulation == "chunkwise":
                    gflops = chunkwise_flops(S, mode) / times["ours"] / 1e9
                    rows.append(
                        Comparison(
                            f"mLSTM chunkwise {mode} GFLOP/s",
                            f"S={S}",
                            "GFLOP/s",
                            gflops,
                            "matmul peak",
                            matmul_peak,
                            0.3 if target else None,
                        )
                    )
    return rows


def training_peak_mib(function, inputs) -> float:
    """Peak live tensor memory (MiB) of one forward and backward, inputs and their gradients excluded."""
    for tensor in inputs:
        tensor.grad = None
    with LiveTensorBytes() as memory:
        function(*inputs).sum().backward()
        for tensor in inputs:
            tensor.grad = None
    return memory.peak / MIB


def memory_comparisons(S: int = 4096) -> list[Comparison]:
    """Training peak memory at S of ours vs the official kernel that our speed is compared with."""
    inputs = mlstm_inputs(S)
    peers = {"chunkwise": "chunkwise--native_custbw", "parallel": "parallel--native_custbw"}
    return [
        Comparison(
            f"mLSTM {formulation} fwd+bwd peak memory",
            f"S={S}",
            "MiB",
            training_peak_mib(ours(formulation), inputs),
            peer,
            training_peak_mib(official(peer), inputs),
            MEMORY_TARGETS[formulation],
        )
        for formulation, peer in peers.items()
    ]


def memory_scaling_comparisons(lengths=(1024, 4096, 16384)) -> list[Comparison]:
    """Chunkwise training memory per step of S against the shortest S: >= 1 means at most linear growth."""
    peaks = {S: training_peak_mib(ours("chunkwise"), mlstm_inputs(S)) for S in lengths}
    shortest = lengths[0]
    return [
        Comparison(
            "mLSTM chunkwise fwd+bwd memory x S/S0",
            f"S={S} vs S0={shortest}",
            "MiB",
            peaks[S],
            f"linear from S0 ({peaks[shortest]:.1f} MiB)",
            peaks[shortest] * S / shortest,
            0.9,
        )
        for S in lengths[1:]
    ]


def slstm_comparisons(repeats: int) -> list[Comparison]:
    """Our sLSTM scan vs the official vanilla sLSTM cell, forward and backward."""
    from xlstm.blocks.slstm.cell import sLSTMCell, sLSTMCellConfig

    batch, S, heads, head_dim = 16, 256, 4, 32
    torch.manual_seed(0)
    cell = sLSTMCell(sLSTMCellConfig(hidden_size=heads * head_dim, num_heads=heads, backend="vanilla", dtype="float32"))
    recurrent_kernel = cell.recurrent_kernel[:].permute(2, 0, 1, 3).contiguous().requires_grad_(True)  # (4, NH, DH, DH)
    bias = cell.bias[:].permute(1, 0, 2).contiguous().requires_grad_(True)  # (4, NH, DH)
    wx = torch.randn(batch, S, 4, heads, head_dim, requires_grad=True)  # gate pre-activations from the input
    ours_run = run_mode(slstm.scan, (wx, recurrent_kernel, bias), "fwd+bwd")

    def official_run():
        wx.grad = None
        cell.zero_grad()
        cell(wx.reshape(batch, S, -1))[0].sum().backward()

    times = interleaved_medians({"ours": ours_run, "official": official_run}, repeats)
    return [
        Comparison(
            "sLSTM scan fwd+bwd",
            f"B={batch} S={S} NH={heads} DH={head_dim}",
            "ms",
            times["ours"] * 1e3,
            "xlstm vanilla sLSTMCell",
            times["official"] * 1e3,
        )
    ]


# (B, S, DI, N): a mini MQAR Mamba layer (width 64, batch 64) at twice mqar-main's mini context (128), and a mini
# language model's layer (width 192, batch 16, context 256)
SELECTIVE_SCAN_MODES = {(64, 128, 128, 16): ("fwd", "fwd+bwd"), (16, 256, 384, 16): ("fwd",)}


def selective_scan_inputs(batch: int, S: int, inner: int, N: int) -> tuple[torch.Tensor, ...]:
    """x, dt (B, S, DI), A (DI, N), B, C (B, S, N), D (DI,): float32, dt in Mamba's range, requiring grad."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch, S, inner, generator=generator)
    dt = torch.nn.functional.softplus(torch.randn(batch, S, inner, generator=generator) - 2)
    A = -torch.exp(torch.randn(inner, N, generator=generator))
    B, C = (torch.randn(batch, S, N, generator=generator) for _ in range(2))
    D = torch.randn(inner, generator=generator)
    return tuple(t.requires_grad_() for t in (x, dt, A, B, C, D))


def selective_scan_comparisons(repeats: int) -> list[Comparison]:
    """Our torch selective scan (backend "torch", chunks of 8 steps) against transformers' ``mamba_selective_scan``
    (its torch path: the recurrence step by step, every state kept), float32. The peer gets its inputs in its own
    layout, (B, DI, S) and (B, N, S). Its backward takes seconds (autograd through S indexing steps), so fwd+bwd is
    timed at one shape only."""
    from transformers.models.mamba.modeling_mamba import mamba_selective_scan

    comparisons = []
    for shape, modes in SELECTIVE_SCAN_MODES.items():
        ours_inputs = selective_scan_inputs(*shape)
        x, dt, A, B, C, D = (t.detach() for t in ours_inputs)
        peer_layout = [x.transpose(1, 2), dt.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2), D]
        peer_inputs = [t.contiguous().requires_grad_() for t in peer_layout]
        for mode in modes:
            ours_run = run_mode(lambda *inputs: selective_scan(*inputs, backend="torch"), ours_inputs, mode)
            peer_run = run_mode(mamba_selective_scan, peer_inputs, mode)
            times = interleaved_medians({"ours": ours_run, "peer": peer_run}, repeats)
            comparisons.append(
                Comparison(
                    f"selective scan {mode}",
                    "B={} S={} DI={} N={}".format(*shape),
                    "ms",
                    times["ours"] * 1e3,
                    "transformers mamba_selective_scan",
                    times["peer"] * 1e3,
                )
            )
    return comparisons


# (B, S, NH, D, decays) -> modes: the MQAR mini grid's RWKV-6 layer (width 64, one head of 64, batch 64, context 64)
# at GLA's decays and at a trained RWKV-6's, and a language model's (width 192, three heads of 64, batch 16, context
# 256), forward only: the peer's backward through 256 steps takes about a minute
LINEAR_ATTENTION_MODES = {
    (64, 64, 1, 64, "slow"): ("fwd", "fwd+bwd"),
    (64, 64, 1, 64, "fast"): ("fwd+bwd",),
    (16, 256, 3, 64, "slow"): ("fwd",),
}
# log decays from standard normal x: GLA's range, log-sigmoid(x) / 16 (a chunk of 8 totals about -0.4, one matmul per
# chunk); a trained RWKV-6's, -exp(x + 4) (chunks of 8 total hundreds to thousands, as RWKV-6's after 500 steps of a
# formal task: the halving)
DECAYS = {
    "slow": lambda x: torch.nn.functional.logsigmoid(x) / 16,
    "fast": lambda x: -torch.exp(x + 4),
}


def linear_attention_inputs(batch: int, S: int, NH: int, D: int, decays: str) -> tuple[torch.Tensor, ...]:
    """q, k, v, log decays (B, S, NH, D) of DECAYS[decays] and a bonus (NH, D), requiring grad."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(batch, S, NH, D, generator=generator) for _ in range(3))
    log_decay = DECAYS[decays](torch.randn(batch, S, NH, D, generator=generator))
    bonus = torch.randn(NH, D, generator=generator)
    return tuple(t.requires_grad_() for t in (q, k, v, log_decay, bonus))


def linear_attention_comparisons(repeats: int) -> list[Comparison]:
    """Our chunkwise torch op (backend "torch", chunks of 8 steps) against fla's recurrent reference
    (``naive_recurrent_gla``, ``naive_recurrent_rwkv6``: the recurrence step by step in float32), GLA's inclusive
    form and RWKV-6's exclusive one with its bonus; slow decays take our one-matmul scores, fast ones the halving
    (kernels/linear_attention/chunkwise.py)."""
    from fla.ops.gla.naive import naive_recurrent_gla
    from fla.ops.rwkv6.recurrent_naive import naive_recurrent_rwkv6

    def fla_rwkv6(r, k, v, log_decay, bonus):  # fla's reference takes (B, NH, S, D) and returns that layout
        heads_first = (x.transpose(1, 2) for x in (r, k, v, log_decay))
        return naive_recurrent_rwkv6(*heads_first, bonus, scale=1.0)[0].transpose(1, 2)

    ops = {  # op -> ours, the peer (both take q or r, k, v, log decays, bonus), the peer's name
        "gla": (
            lambda q, k, v, log_decay, bonus: gla(q, k, v, log_decay, backend="torch"),
            lambda q, k, v, log_decay, bonus: naive_recurrent_gla(q, k, v, log_decay)[0],  # both scale q by D^-0.5
            "fla naive_recurrent_gla",
        ),
        "rwkv6": (lambda *inputs: rwkv6(*inputs, backend="torch"), fla_rwkv6, "fla naive_recurrent_rwkv6"),
    }
    comparisons = []
    for shape, modes in LINEAR_ATTENTION_MODES.items():
        inputs = linear_attention_inputs(*shape)
        for (op, (ours_op, peer_op, peer_name)), mode in itertools.product(ops.items(), modes):
            runs = {"ours": run_mode(ours_op, inputs, mode), "peer": run_mode(peer_op, inputs, mode)}
            times = interleaved_medians(runs, repeats)
            comparisons.append(
                Comparison(
                    f"{op} {mode}",
                    "B={} S={} NH={} D={} decays {}".format(*shape),
                    "ms",
                    times["ours"] * 1e3,
                    peer_name,
                    times["peer"] * 1e3,
                )
            )
    return comparisons
