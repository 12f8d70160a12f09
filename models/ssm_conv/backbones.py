"""The H3 and Hyena backbones: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.ssm_conv.h3 import H3Stack
from models.ssm_conv.hyena import HyenaStack

MODULES: dict[str, type[nn.Module]] = {"h3": H3Stack, "hyena": HyenaStack}
