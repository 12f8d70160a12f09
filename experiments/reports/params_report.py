"""Parameter counts of every model and size the suite knows, beside the paper's (built on the meta device)."""

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from experiments.atomic import write_text_atomic
from experiments.config.artifacts import known_artifacts, load_artifact
from experiments.config.validation import backbone_options
from experiments.paths import PAPER_NUMBERS, REPORTS
from experiments.reports.paper_numbers import paper_numbers_of, printed_row
from experiments.reports.paper_tables import paper_table
from experiments.run_metrics import count_parameters
from models.catalog import language_model_sizes
from models.flops import SkipMetaFills
from models.registry import build_language_model, build_language_model_from, known_language_models

# Where the paper's description leaves the architecture open, what we chose and what remains open.
OPEN_QUESTIONS = {
    ("xlstm_0_1", "350m"): (
        "Open (-5.8%): Table ablstudies lists xLSTM[0:1] ('Adding Exponential Gating') at 427.3M without its layout. "
        "Ours is the paper's xLSTM[0:1] at the 350M preset: 48 post up-projection sLSTM blocks at E=1024 (4 heads, "
        "gated GeLU MLP of factor 1.3 rounded up to 1344: the sLSTM blocks of xLSTM[7:1], whose 408.4M we match), "
        "402.46M, also the count of the paper's commented-out xLSTM[0:1] row of Table spaj15b_model_results (402M). "
        "No reading of the text we found reaches 427.3M: a block of ours has 6.238M and the embedding and head "
        "103.0M, so 48 blocks would need 6.756M each (+0.518M, half of E^2). The MLP factor 4/3 of the sLSTM block's "
        "figure gives 411.89M (inner 1408, rounded up to 64) or 405.70M (1366, not rounded); the text's path from "
        "the LSTM block (24 blocks of an sLSTM with dense input weights and 4-head recurrence, each with the "
        "non-gated GeLU MLP of factor 4) 430.35M (+0.7%). Only another depth fits: 52 of our blocks give 427.41M "
        "(+0.026%), a depth the paper states nowhere, so the preset keeps 48."
    ),
    ("xlstm_1_0", "350m post up-projection (abl_matrixmemory)"): (
        "The paper names the block only ('mLSTM in a post up-projection block [...] with ReLU^2 activation function "
        "and non-gated feed-forward network'). Our reading (models/xlstm/mlstm_post_layer.py): the mLSTM of Section "
        "2.3 as a Transformer's attention layer, dense q, k, v, output gate and output projection at E, the scalar "
        "gates from the layer input, then the non-gated ReLU^2 MLP of factor 4: 24 blocks give 430.45M (+0.012%); "
        "with the causal convolution 430.57M (+0.04%), without it here. Gates computed from q, k, v as in the pre "
        "up-projection block would give 430.84M (+0.10%); our pre up-projection layer (factors 0.5 to 4) with a "
        "non-gated MLP (factors 1 to 8) reaches no count within 0.1%."
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
            with torch.device("meta"), SkipMetaFills():
                model = build_language_model(name, size)
            rows.append({"model": name, "size": size, "ours_m": round(count_parameters(model) / 1e6, 2)})
    table = pd.DataFrame(rows).merge(paper[["model", "size", "paper_m"]], on=["model", "size"], how="left")
    table["delta_pct"] = ((table["ours_m"] - table["paper_m"]) / table["paper_m"] * 100).round(3)
    return table


def variant_table() -> pd.DataFrame:
    """The model variants of the paper's tables that print one model several times with a parameter count each
    (Table abl_matrixmemory): per printed row an artifact links to its cells (``paper.numbers.rows``), our count of
    the model its paper-scale run trains beside the printed one; ``model`` names the variant as "<model> (<artifact>:
    <the row's naming columns>)"."""
    rows = []
    for name in known_artifacts():
        artifact = load_artifact(name)
        numbers = paper_numbers_of(artifact.paper)
        printed = [(item, printed_row(numbers.table, item["row"])) for item in numbers.rows]
        printed = [(item, row) for item, row in printed if pd.notna(row.get("params_m"))]
        if not printed:
            continue
        runs = artifact.runs("paper")
        for item, row in printed:
            run = next(
                run
                for run in runs
                if run.cell.get("model") == row["model"]
                and all(run.cell.get(key) == value for key, value in item["cell"].items())
            )
            model = run.config.model
            with torch.device("meta"), SkipMetaFills():
                built = build_language_model_from(
                    model.name,
                    run.config.task.vocab_size,
                    bool(model.get("tie_embeddings", False)),
                    embedding_dim=model.embedding_dim,
                    num_blocks=model.num_blocks,
                    **backbone_options(model),
                )
            label = ", ".join(str(value) for value in item["row"].values())
            rows.append(
                {
                    "model": f"{row['model']} ({name}: {label})",
                    "size": row["size"],
                    "ours_m": round(count_parameters(built) / 1e6, 2),
                    "paper_m": row["params_m"],
                }
            )
    table = pd.DataFrame(rows, columns=["model", "size", "ours_m", "paper_m"])
    table["delta_pct"] = ((table["ours_m"] - table["paper_m"]) / table["paper_m"] * 100).round(3)
    return table


def peak_lr_table(parameters: pd.DataFrame) -> pd.DataFrame:
    """Table spaj_peaklr with ours beside it: per model and size the paper's embedding dim, blocks and count, our
    preset's dims and count (``parameters``: parameter_table()) and the paper's peak learning rates (15B, 300B)."""
    paper = paper_table("spaj_peaklr")
    sizes = language_model_sizes()
    ours = pd.DataFrame(
        [
            {
                "model": row.model,
                "size": row.size,
                "ours_embedding_dim": sizes[row.model][row.size]["embedding_dim"],
                "ours_num_blocks": sizes[row.model][row.size]["num_blocks"],
            }
            for row in paper.itertuples()
        ]
    )
    table = paper.merge(ours, on=["model", "size"]).merge(parameters[["model", "size", "ours_m"]], on=["model", "size"])
    table["delta_pct"] = ((table["ours_m"] - table["params_m"]) / table["params_m"] * 100).round(3)
    return table[
        [
            "model",
            "size",
            "embedding_dim",
            "ours_embedding_dim",
            "num_blocks",
            "ours_num_blocks",
            "params_m",
            "ours_m",
            "delta_pct",
            "peak_lr_15b",
            "peak_lr_300b",
        ]
    ]


def print_table(table: pd.DataFrame, console: Console, title: str) -> None:
    view = Table(title=title)
    for column in table.columns:
        view.add_column(column, justify="left" if column in ("model", "size") else "right")
    for row in table.itertuples(index=False):
        view.add_row(*("" if pd.isna(value) else str(value) for value in row))
    console.print(view)


def markdown(table: pd.DataFrame) -> str:
    lines = [
        "# Parameter counts",
        "",
        "Ours (built on the meta device) beside the paper's, in millions; GPT-2 "
        "vocabulary padded to 50304, untied heads except GPT-3. The last rows are the variants of a model that "
        "a table prints several times, each named by the artifact and the printed row, counted from the model "
        "its paper-scale run trains.",
        "",
        table.to_markdown(index=False),
        "",
        "## Open points and exceptions",
        "",
    ]
    lines += [f"- **{name} {size}**: {note}" for (name, size), note in OPEN_QUESTIONS.items()]
    return "\n".join(lines) + "\n"


def peak_lr_markdown(table: pd.DataFrame) -> str:
    lines = [
        "# Table spaj_peaklr: sizes, parameter counts and peak learning rates",
        "",
        "The paper's dims, counts (M) and peak learning rates (15B- and 300B-token runs) beside our presets' "
        '(built on the meta device; GPT-2 vocabulary padded to 50304). The paper\'s "xLSTM" rows are '
        "xLSTM[1:0]. Where a dim differs, see the open points of params.md.",
        "",
        "The scaling runs carry these rates, each size as its preset (`model.size`): "
        "configs/paper/temp_sclaw15B.yaml (column peak_lr_15b; xLSTM[7:1] takes the xLSTM rows' rates) and "
        "configs/paper/temp_sclaw300B.yaml (peak_lr_300b); tests/experiments/config/test_scaling_configs.py checks every pair.",
        "",
        table.astype(object).where(table.notna(), None).to_markdown(index=False, floatfmt="g", missingval=""),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    console = Console()
    table = pd.concat([parameter_table(), variant_table()], ignore_index=True)
    print_table(table, console, "Parameter counts (M), GPT-2 vocabulary padded to 50304, untied heads")
    for (name, size), note in OPEN_QUESTIONS.items():
        console.print(f"[bold]{name} {size}[/bold]: {note}")
    peak_lr = peak_lr_table(table)
    print_table(peak_lr, console, "Table spaj_peaklr: the paper's sizes and peak learning rates beside our presets")
    for name, text in (
        ("params.csv", table.to_csv(index=False)),
        ("params.md", markdown(table)),
        ("spaj_peaklr.csv", peak_lr.to_csv(index=False)),
        ("spaj_peaklr.md", peak_lr_markdown(peak_lr)),
    ):
        write_text_atomic(REPORTS / name, text)
        console.print(f"wrote {REPORTS / name}")
    return 0
