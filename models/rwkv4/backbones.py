"""The RWKV-4 backbone: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.rwkv4.block import RWKV4Backbone

MODULES: dict[str, type[nn.Module]] = {"rwkv4": RWKV4Backbone}
