"""The linear-RNN baselines: the module class of each backbone name
(``models.registry`` builds it from its validated config)."""

from torch import nn

from models.linear_rnn.gla import GLAStack
from models.linear_rnn.hgrn import HGRNStack
from models.linear_rnn.hgrn2 import HGRN2Stack
from models.linear_rnn.retnet import RetNetStack
from models.linear_rnn.rwkv6 import RWKV6Stack

MODULES: dict[str, type[nn.Module]] = {
    "gla": GLAStack,
    "hgrn": HGRNStack,
    "hgrn2": HGRN2Stack,
    "retnet": RetNetStack,
    "rwkv6": RWKV6Stack,
}
