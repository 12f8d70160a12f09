"""The harness's offline stand-in of the mini scale (tasks.lm.lmeval_offline): prose paragraphs of the offline
corpus's test part made into LAMBADA-form and HellaSwag-form items, the same for every model, in task files that the
LM Evaluation Harness reads."""

import numpy as np
import pytest
import yaml

from experiments.paths import REPOSITORY_ROOT
from tasks.lm import lmeval_offline
from tasks.lm.lmeval_offline import (
    CHOICES,
    CONTEXT_WORDS,
    ENDING_WORDS,
    OFFLINE_TASKS,
    PASSAGE_WORDS,
    choice_items,
    cloze_items,
    paragraphs,
)
from tasks.registry import TEXT

PROSE = " ".join(["Some plain words of prose."] * 10)  # 50 words


def prose(count: int, words: int = 80) -> list[list[str]]:
    return [[f"p{index}w{position}" if position else "Start" for position in range(words)] for index in range(count)]


def test_only_long_paragraphs_of_plain_words_are_kept():
    code = "\n".join(f"    x_{i} = call_{i}(arg[{i}]) + {i}" for i in range(40))
    short = "A short paragraph of plain words."
    text = f"{PROSE}\n\n{code}\n\n{short}\n\n   \n{PROSE} Ending."
    kept = list(paragraphs([text]))
    assert [len(words) for words in kept] == [50, 51]
    assert kept[1][-1] == "Ending."


def test_a_cloze_passage_ends_in_its_target_word_without_punctuation():
    words = [*("alpha beta gamma delta".split() * 20), "afterwards."]
    numbers = [*("alpha beta".split() * 30), "42."]  # no word of letters to predict: no item
    [item] = cloze_items([words, numbers], np.random.default_rng(0))
    passage = item["text"].split(" ")
    assert passage[-1] == "afterwards" and len(passage) == PASSAGE_WORDS
    assert passage[:-1] == words[-PASSAGE_WORDS:-1]


def test_a_choice_item_holds_its_true_ending_at_its_label_among_other_paragraphs_endings():
    paragraphs_ = prose(10)
    items = choice_items(paragraphs_, np.random.default_rng(0))
    assert len(items) == 10
    for item in items:
        index = int(item["question"].split()[1].split("w")[0].removeprefix("p"))
        words = paragraphs_[index]
        assert item["question"] == " ".join(words[:CONTEXT_WORDS])
        assert item["choices"][item["label"]] == " ".join(words[CONTEXT_WORDS : CONTEXT_WORDS + ENDING_WORDS])
        assert len(set(item["choices"])) == CHOICES
    assert len({item["label"] for item in items}) > 1  # the true ending is not always first


def test_the_items_are_the_same_for_the_same_seed():
    paragraphs_ = prose(30)
    first = choice_items(paragraphs_, np.random.default_rng(0))
    assert choice_items(paragraphs_, np.random.default_rng(0)) == first
    assert choice_items(paragraphs_, np.random.default_rng(1)) != first


def test_the_items_come_from_the_test_part_that_training_never_reads(monkeypatch):
    task = yaml.safe_load((REPOSITORY_ROOT / "configs" / "task" / "offline_docs.yaml").read_text())
    assert lmeval_offline.HOLDOUT_FRACTION == task["holdout_fraction"]
    assert lmeval_offline.CORPUS == task["corpus"] and lmeval_offline.SPLIT == task["train_split"]
    read = []

    class Part:
        def __init__(self, *arguments):
            read.append(arguments)

        def document_batches(self):
            yield ["\n\n".join([PROSE + " finally."] * 8)]

    monkeypatch.setattr(lmeval_offline, "PartSource", Part)
    items = lmeval_offline.offline_items()
    assert read == [(task["corpus"], task["train_split"], "text", task["holdout_fraction"], ("test",))]
    assert [item["text"].split(" ")[-1] for item in items["offline_cloze"]] == ["finally"] * 8


def test_the_harness_reads_the_tasks_and_a_changed_corpus_gets_a_folder_of_its_own(monkeypatch, tmp_path):
    pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager

    monkeypatch.setattr(lmeval_offline, "cache_folder", lambda: tmp_path)
    monkeypatch.setattr(lmeval_offline, "corpus_fingerprint", lambda corpus, split: {"files": 1})
    made = []
    records = {
        "offline_cloze": [{"text": "the passage ends in a word"}],
        "offline_choice": [{"question": "a context", "choices": ["true end", "other end"], "label": 0}],
    }
    monkeypatch.setattr(lmeval_offline, "offline_items", lambda: made.append(1) or records)
    folder = lmeval_offline.lmeval_offline()
    assert lmeval_offline.lmeval_offline() == folder and made == [1]  # written once, read back after
    manager = TaskManager(include_path=str(folder), include_defaults=False)
    assert set(OFFLINE_TASKS) <= set(manager.all_tasks)
    monkeypatch.setattr(lmeval_offline, "corpus_fingerprint", lambda corpus, split: {"files": 2})
    assert lmeval_offline.lmeval_offline() != folder


def test_the_lmeval_kind_names_it_offline():
    assert TEXT.harness_stand_ins["offline"] is lmeval_offline.lmeval_offline
