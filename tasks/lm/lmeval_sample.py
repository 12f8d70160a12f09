"""A tiny offline stand-in for the LM Evaluation Harness's downstream tasks, in the harness's own task format: a
folder of task YAMLs and their JSON-lines data. ``sample_choice`` is multiple choice as PIQA or ARC are (a question,
two or three choices, the label's index; acc and acc_norm); ``sample_cloze`` is LAMBADA's form (a passage whose last
word is the target; acc: the greedy tokens are the word, and perplexity). The smoke scale's lmeval evaluation reads
it (``task_dir: sample``); it is written on first use into the data cache folder (the YAMLs name their data by
absolute path, so they are written where they are read)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tasks.data_cache import DEFAULT_FOLDER, cache_folder
from tasks.lm.whole_file import write_whole

SAMPLE_TASK_DIR = "sample"  # the ``task_dir`` setting that names this stand-in
SAMPLE_TASKS = ("sample_choice", "sample_cloze")
CHOICE_QUESTIONS = [
    {"question": "Shall I compare thee to a summer's", "choices": ["day", "tax return", "carburettor"], "label": 0},
    {
        "question": "The rose looks fair, but fairer we it deem for that sweet",
        "choices": ["odour", "spreadsheet"],
        "label": 0,
    },
    {"question": "When in disgrace with fortune and men's", "choices": ["printers", "eyes"], "label": 1},
]
CLOZE_PASSAGES = [
    {"text": "So long as men can breathe or eyes can see, so long lives this, and this gives life to thee"},
    {"text": "Let me not to the marriage of true minds admit impediments. Love is not love"},
]

CHOICE_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - {{metric: acc, aggregation: mean, higher_is_better: true}}
  - {{metric: acc_norm, aggregation: mean, higher_is_better: true}}
"""
CLOZE_YAML = """task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: loglikelihood
doc_to_text: "{{{{text.split(' ')[:-1]|join(' ')}}}}"
doc_to_target: "{{{{' ' + text.split(' ')[-1]}}}}"
metric_list:
  - {{metric: perplexity, aggregation: perplexity, higher_is_better: false}}
  - {{metric: acc, aggregation: mean, higher_is_better: true}}
"""


def write_tasks(root: Path, tasks: dict[str, tuple[str, Callable[[], list[dict]]]]) -> Path:
    """``root`` (resolved) with each task's data (``<name>.jsonl``) and YAML (``<name>.yaml``, from its template),
    written where missing; ``tasks``: name -> (template, its records, made only where its data is missing)."""
    root = root.resolve()
    for name, (template, records) in tasks.items():
        data, task = root / f"{name}.jsonl", root / f"{name}.yaml"
        if not data.exists():
            write_whole(data, "".join(json.dumps(record, sort_keys=True) + "\n" for record in records()).encode())
        if not task.exists():
            write_whole(task, template.format(task=name, data=data).encode())
    return root


def lmeval_sample(folder: Path | None = None) -> Path:
    """The stand-in's task folder, written first where it is missing."""
    return write_tasks(
        Path(folder or (cache_folder() or DEFAULT_FOLDER) / "lmeval-sample"),
        {
            "sample_choice": (CHOICE_YAML, lambda: CHOICE_QUESTIONS),
            "sample_cloze": (CLOZE_YAML, lambda: CLOZE_PASSAGES),
        },
    )
