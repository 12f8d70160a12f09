"""xLSTM backbones: the module class of each backbone name (``xlstm`` with explicit sLSTM positions and the paper's
ratios, all an ``XLSTMStack``; ``models.registry`` builds it from its validated config)."""

from torch import nn

from models.xlstm.presets import CONFIGS
from models.xlstm.stack import XLSTMStack

MODULES: dict[str, type[nn.Module]] = {name: XLSTMStack for name in CONFIGS}
