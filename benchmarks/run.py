"""Our xLSTM kernels and training step against the official package, in one process, as ratios.

    python -m benchmarks.run [--quick] [--repeats N]

Each row times our implementation and its official peer interleaved (medians of --repeats rounds) and
prints ours, theirs and the speed-up (theirs / ours; > 1 means we are faster). Results also go to
results/reports/benchmarks.csv.
"""

import argparse
import math

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

import kernels.mlstm as mlstm
import kernels.slstm as slstm
from benchmarks.timing import interleaved_medians
from experiments.atomic import write_text_atomic
from experiments.paths import REPORTS
from models.xlstm import XLSTMLanguageModel, from_official


def _fwd_bwd(function, inputs):
    def run():
        for tensor in inputs:
            tensor.grad = None
        function(*inputs).sum().backward()

    return run


def _no_grad(function, inputs):
    def run():
        with torch.no_grad():
            function(*inputs)

    return run


def mlstm_rows(sequence_lengths, repeats):
    from mlstm_kernels.torch.chunkwise.native import mlstm_chunkwise__native_custbw
    from xlstm.blocks.mlstm.backends import parallel_stabilized_simple

    B, NH, DH = 1, 4, 64
    rows = []
    for S in sequence_lengths:
        torch.manual_seed(0)
        q, k, v = (torch.randn(B, NH, S, DH, requires_grad=True) for _ in range(3))
        i, f = torch.randn(B, NH, S, requires_grad=True), (3 + torch.randn(B, NH, S)).requires_grad_(True)
        inputs = (q, k, v, i, f)
        ours = {
            "parallel": lambda *a: mlstm.parallel(*a),
            "chunkwise": lambda *a: mlstm.chunkwise(*a, chunk_size=64),
        }
        theirs = {
            "parallel": lambda q, k, v, i, f: parallel_stabilized_simple(q, k, v, i[..., None], f[..., None]),
            # mlstm_kernels scales q, we scale k: the same h.
            "chunkwise": lambda q, k, v, i, f: mlstm_chunkwise__native_custbw(q=q, k=k, v=v, i=i, f=f, chunk_size=64),
        }
        for formulation in ours:
            if formulation == "parallel" and S > 2048:
                continue  # the official parallel form builds several S x S matrices
            for mode, wrap in (("fwd", _no_grad), ("fwd+bwd", _fwd_bwd)):
                times = interleaved_medians(
                    {"ours": wrap(ours[formulation], inputs), "official": wrap(theirs[formulation], inputs)}, repeats
                )
                rows.append(_row(f"mLSTM {formulation} {mode}", f"S={S}", times))
    return rows


def slstm_rows(repeats):
    from xlstm.blocks.slstm.cell import sLSTMCell, sLSTMCellConfig

    B, S, NH, DH = 16, 256, 4, 32
    torch.manual_seed(0)
    cell = sLSTMCell(sLSTMCellConfig(hidden_size=NH * DH, num_heads=NH, backend="vanilla", dtype="float32"))
    recurrent_kernel = cell.recurrent_kernel[:].permute(2, 0, 1, 3).contiguous().requires_grad_(True)
    bias = cell.bias[:].permute(1, 0, 2).contiguous().requires_grad_(True)
    wx = torch.randn(B, S, 4, NH, DH, requires_grad=True)
    ours = _fwd_bwd(lambda x, R, b: slstm.scan(x, R, b), (wx, recurrent_kernel, bias))

    def theirs():
        wx.grad = None
        cell.zero_grad()
        cell(wx.reshape(B, S, -1))[0].sum().backward()

    return [_row("sLSTM scan fwd+bwd", f"B={B} S={S} NH={NH} DH={DH}", interleaved_medians({"ours": ours, "official": theirs}, repeats))]


def training_step_rows(repeats):
    from tests.official_models import official_config
    from xlstm import xLSTMLMModel

    B, S, E, V = 16, 256, 128, 8192
    tokens = torch.randint(0, V, (B, S + 1))
    rows = []
    for ratio in ("xlstm_1_0", "xlstm_0_1", "xlstm_1_1"):
        torch.manual_seed(0)
        config = official_config(ratio, embedding_dim=E, context_length=S, vocab_size=V)
        official = xLSTMLMModel(config)
        official.reset_parameters()
        ours = from_official(official)
        assert isinstance(ours, XLSTMLanguageModel)
        steps = {name: training_step(model, tokens) for name, model in (("ours", ours), ("official", official))}
        times = interleaved_medians(steps, repeats)
        row = _row(f"training step {ratio}", f"B={B} S={S} E={E} 2 blocks", times)
        row["ours tokens/s"] = round(B * S / times["ours"])
        row["official tokens/s"] = round(B * S / times["official"])
        rows.append(row)
    return rows


def training_step(model, tokens):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def run():
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return run


def _row(benchmark, shape, times):
    return {
        "benchmark": benchmark,
        "shape": shape,
        "ours ms": round(times["ours"] * 1e3, 2),
        "official ms": round(times["official"] * 1e3, 2),
        "speed-up": round(times["official"] / times["ours"], 2),
    }


def matmul_peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    seconds = interleaved_medians({"matmul": lambda: a @ b}, repeats)["matmul"]
    return 2 * size**3 / seconds / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="S=256 only and 3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args(argv)
    repeats = 3 if arguments.quick else arguments.repeats
    lengths = [256] if arguments.quick else [256, 1024, 4096]
    console = Console(width=160)
    console.print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
                  f"matmul peak {matmul_peak_gflops():.0f} GFLOP/s (float32, 2048^2)")
    rows = mlstm_rows(lengths, repeats) + slstm_rows(repeats) + training_step_rows(repeats)
    table = pd.DataFrame(rows)
    view = Table(title="ours vs official xlstm==2.0.6 / mlstm_kernels==2.0.6 (medians, interleaved)")
    for column in table.columns:
        view.add_column(column, justify="left" if column in ("benchmark", "shape") else "right")
    for row in table.itertuples(index=False):
        view.add_row(*("" if isinstance(v, float) and math.isnan(v) else str(v) for v in row))
    console.print(view)
    destination = REPORTS / "benchmarks.csv"
    write_text_atomic(destination, table.to_csv(index=False))
    console.print(f"wrote {destination}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
