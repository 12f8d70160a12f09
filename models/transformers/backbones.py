"""The Llama and GPT-3 backbones: the module class of each backbone name, one for both (its config's architecture
picks the parts; ``models.registry`` builds it from its validated config)."""

from torch import nn

from models.transformers.stack import TransformerStack

MODULES: dict[str, type[nn.Module]] = {"llama": TransformerStack, "gpt3": TransformerStack}
