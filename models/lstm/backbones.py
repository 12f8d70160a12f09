"""The LSTM baselines: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.lstm.block import LSTMBlockStack
from models.lstm.residual import ResidualLSTM
from models.lstm.vanilla import VanillaLSTM

MODULES: dict[str, type[nn.Module]] = {"lstm": VanillaLSTM, "lstm_residual": ResidualLSTM, "lstm_block": LSTMBlockStack}
