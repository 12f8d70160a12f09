"""The RWKV-5 backbone: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.rwkv5.block import RWKV5Stack

MODULES: dict[str, type[nn.Module]] = {"rwkv5": RWKV5Stack}
