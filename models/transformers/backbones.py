"""The Llama and GPT-3 backbones: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.transformers.gpt import GPT3Stack
from models.transformers.llama import LlamaStack

MODULES: dict[str, type[nn.Module]] = {"llama": LlamaStack, "gpt3": GPT3Stack}
