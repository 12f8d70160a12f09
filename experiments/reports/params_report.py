"""Parameter counts of every model and size the suite knows, beside the paper's (built on the meta device)."""

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from experiments.atomic import write_text_atomic
from experiments.paths import PAPER_NUMBERS, REPORTS
from experiments.reports.paper_tables import paper_table
from experiments.run_metrics import count_parameters
from models.catalog import language_model_sizes
from models.registry import build_language_model, known_language_models

# Where the paper's description leaves the architecture open, what we chose and what remains open.
OPEN_QUESTIONS = {
    ("xlstm_0_1", "350m"): (
        "Table ablstudies lists xLSTM[0:1] ('Adding Exponential Gating') at 427.3M without its block layout. "
        "Ours is the paper's xLSTM[0:1] of Section 2.4 at the 350M preset (48 post up-projection sLSTM blocks, "
        "E=1024, 4 heads, gated MLP factor 1.3): 402.5M, the count the paper's own (commented-out) row of Table "
        "spaj15b_model_results gives for xLSTM[0:1] (402M). The 427.3M model is an earlier sLSTM variant whose "
        "extra ~25M parameters the text does not specify."
    ),
    ("retnet", "350m"): (
        "Exception (-3.1%): flash-linear-attention's RetNet defaults (8 heads, key D, value 2D, MLP ratio 2) give "
        "417.7M; no standard option we found gives 431M (an MLP of 1728, torchscale's RetNet-medium value, would "
        "give 431.8M, but nothing in the paper says so)."
    ),
    ("h3", "350m"): (
        "Exception (-1.6%): the reference H3 (d_state 64, head dim 1, 4D GeLU MLP, D=1024, 24 blocks) gives 413.3M; "
        "d_state 128 would give 421.1M but contradicts the reference default."
    ),
    ("hyena", "350m"): (
        "Open: order 2 (the default) gives 409.1M; order 3 with safari's Pile filter settings (emb_dim 33, w 14) "
        "gives 436.0M, which we take as the paper's configuration."
    ),
    ("rwkv5", "2.7b"): (
        "Table spaj_peaklr prints 2048 / 24 blocks for the 2.7B RWKV-5, RWKV-6 and HGRN2, which would repeat the "
        "1.3B counts; 2560 / 32 reproduces all three 2.7B counts, so the presets use it."
    ),
    ("llama", "125m"): (
        "Llama's FFN is 8/3 D rounded up to a multiple of 64 (Meta's multiple of 256 misses the 350M, 1.3B and "
        "2.7B counts by up to 1.3%)."
    ),
    ("xlstm_7_1", "2.7b"): (
        "Table spaj_peaklr has no xLSTM[7:1] rows, though Figure 6 shows a 2.7B xLSTM[7:1] (its sLSTM positions "
        "are not given); ours puts sLSTM at every eighth of the 64 blocks from index 3 "
        "(8 sLSTM blocks, an exact 7:1 ratio)."
    ),
}


def parameter_table() -> pd.DataFrame:
    paper = pd.read_csv(PAPER_NUMBERS / "param_counts.csv", dtype={"size": str})
    rows = []
    for name, sizes in known_language_models().items():
        for size in sizes:
            with torch.device("meta"):
                model = build_language_model(name, size)
            rows.append({"model": name, "size": size, "ours_m": round(count_parameters(model) / 1e6, 2)})
    table = pd.DataFrame(rows).merge(paper[["model", "size", "paper_m"]], on=["model", "size"], how="left")
    table["delta_pct"] = ((table["ours_m"] - table["paper_m"]) / table["paper_m"] * 100).round(3)
    return table


def peak_lr_table(parameters: pd.DataFrame) -> pd.DataFrame:
    """Table spaj_peaklr with ours beside it: per model and size the paper's embedding dim, blocks and count, our
    preset's dims and count (``parameters``: parameter_table()) and the paper's peak learning rates (15B, 300B)."""
    paper = paper_table("spaj_peaklr")
    sizes = language_model_sizes()
    ours = pd.DataFrame([{"model": row.model, "size": row.size,
                          "ours_embedding_dim": sizes[row.model][row.size]["embedding_dim"],
                          "ours_num_blocks": sizes[row.model][row.size]["num_blocks"]} for row in paper.itertuples()])
    table = paper.merge(ours, on=["model", "size"]).merge(parameters[["model", "size", "ours_m"]], on=["model", "size"])
    table["delta_pct"] = ((table["ours_m"] - table["params_m"]) / table["params_m"] * 100).round(3)
    return table[["model", "size", "embedding_dim", "ours_embedding_dim", "num_blocks", "ours_num_blocks",
                  "params_m", "ours_m", "delta_pct", "peak_lr_15b", "peak_lr_300b"]]


def print_table(table: pd.DataFrame, console: Console, title: str) -> None:
    view = Table(title=title)
    for column in table.columns:
        view.add_column(column, justify="left" if column in ("model", "size") else "right")
    for row in table.itertuples(index=False):
        view.add_row(*("" if pd.isna(value) else str(value) for value in row))
    console.print(view)


def markdown(table: pd.DataFrame) -> str:
    lines = ["# Parameter counts", "", "Ours (built on the meta device) beside the paper's, in millions; GPT-2 "
             "vocabulary padded to 50304, untied heads except GPT-3.", "", table.to_markdown(index=False), "",
             "## Open points and exceptions", ""]
    lines += [f"- **{name} {size}**: {note}" for (name, size), note in OPEN_QUESTIONS.items()]
    return "\n".join(lines) + "\n"


def peak_lr_markdown(table: pd.DataFrame) -> str:
    lines = ["# Table spaj_peaklr: sizes, parameter counts and peak learning rates", "",
             "The paper's dims, counts (M) and peak learning rates (15B- and 300B-token runs) beside our presets' "
             "(built on the meta device; GPT-2 vocabulary padded to 50304). The paper's \"xLSTM\" rows are "
             "xLSTM[1:0]. Where a dim differs, see the open points of params.md.", "",
             "The scaling runs carry these rates, each size as its preset (`model.size`): "
             "configs/paper/temp_sclaw15B.yaml (column peak_lr_15b; xLSTM[7:1] takes the xLSTM rows' rates) and "
             "configs/paper/temp_sclaw300B.yaml (peak_lr_300b); tests/test_scaling_configs.py checks every pair.", "",
             table.astype(object).where(table.notna(), None).to_markdown(index=False, floatfmt="g", missingval="")]
    return "\n".join(lines) + "\n"


def main() -> int:
    console = Console()
    table = parameter_table()
    print_table(table, console, "Parameter counts (M), GPT-2 vocabulary padded to 50304, untied heads")
    for (name, size), note in OPEN_QUESTIONS.items():
        console.print(f"[bold]{name} {size}[/bold]: {note}")
    peak_lr = peak_lr_table(table)
    print_table(peak_lr, console, "Table spaj_peaklr: the paper's sizes and peak learning rates beside our presets")
    for name, text in (("params.csv", table.to_csv(index=False)), ("params.md", markdown(table)),
                       ("spaj_peaklr.csv", peak_lr.to_csv(index=False)), ("spaj_peaklr.md", peak_lr_markdown(peak_lr))):
        write_text_atomic(REPORTS / name, text)
        console.print(f"wrote {REPORTS / name}")
    return 0
