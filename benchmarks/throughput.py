"""Training-step throughput of every backbone in the registry, same small config, on this machine.

    python -m benchmarks.throughput [--repeats N] [--models a b ...]

All models: embedding 128, 2 blocks, context 256, batch 16, vocabulary 8192, float32, AdamW; medians of
interleaved rounds. Printed as tokens/s and as a ratio to xLSTM[1:0] measured in the same run.
"""

import argparse

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from benchmarks.model_benchmarks import training_step
from benchmarks.timing import interleaved_medians
from experiments.atomic import write_text_atomic
from experiments.display import model_name
from experiments.paths import REPORTS
from models.language_model import LanguageModel
from models.registry import build_backbone, known_backbones

EMBEDDING, BLOCKS, CONTEXT, BATCH, VOCAB = 128, 2, 256, 16, 8192
REFERENCE = "xlstm_1_0"


def language_model(name: str) -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(build_backbone(name, embedding_dim=EMBEDDING, num_blocks=BLOCKS), VOCAB, EMBEDDING)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    # xlstm (explicit positions) and xlstm_7_1 (needs >= 4 blocks) have no 2-block form of their own
    parser.add_argument(
        "--models", nargs="*", default=[n for n in known_backbones() if n not in ("xlstm", "xlstm_7_1")]
    )
    arguments = parser.parse_args(argv)
    unknown = sorted(set(arguments.models) - set(known_backbones()))
    if unknown:
        parser.error(f"unknown models {unknown}; valid choices: {known_backbones()}")
    names = sorted(set(arguments.models) | {REFERENCE})
    tokens = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=torch.Generator().manual_seed(0))
    steps = {name: training_step(language_model(name), tokens) for name in names}
    seconds = interleaved_medians(steps, arguments.repeats)
    rows = [
        {
            "model": model_name(name),
            "ms per step": round(seconds[name] * 1e3, 1),
            "tokens/s": round(BATCH * CONTEXT / seconds[name]),
            f"vs {model_name(REFERENCE)}": round(seconds[REFERENCE] / seconds[name], 2),
        }
        for name in sorted(names, key=seconds.get)
    ]
    table = pd.DataFrame(rows)
    console = Console(width=120)
    view = Table(
        title=f"Training step, E={EMBEDDING}, {BLOCKS} blocks, context {CONTEXT}, batch {BATCH}, "
        f"vocabulary {VOCAB}, {torch.get_num_threads()} threads (medians of {arguments.repeats})"
    )
    for column in table.columns:
        view.add_column(column, justify="left" if column == "model" else "right")
    for row in table.itertuples(index=False):
        view.add_row(*map(str, row))
    console.print(view)
    destination = REPORTS / "throughput.csv"
    write_text_atomic(destination, table.to_csv(index=False))
    console.print(f"wrote {destination}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
