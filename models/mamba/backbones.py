"""The Mamba backbone: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.mamba.block import MambaBackbone

MODULES: dict[str, type[nn.Module]] = {"mamba": MambaBackbone}
