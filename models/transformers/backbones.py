"""The Llama and GPT-3 backbones by name: builders from the validated configs of ``models.transformers.config``."""

from typing import Callable

from torch import nn

from models.transformers.config import CONFIGS
from models.transformers.gpt import GPT3Stack
from models.transformers.llama import LlamaStack


def build_llama(embedding_dim: int = 128, num_blocks: int = 2, **options) -> LlamaStack:
    return LlamaStack(CONFIGS["llama"](embedding_dim, num_blocks, **options))


def build_gpt3(embedding_dim: int = 128, num_blocks: int = 2, **options) -> GPT3Stack:
    return GPT3Stack(CONFIGS["gpt3"](embedding_dim, num_blocks, **options))


BACKBONES: dict[str, Callable[..., nn.Module]] = {"llama": build_llama, "gpt3": build_gpt3}
