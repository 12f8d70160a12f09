"""xLSTM (Beck et al. 2024): mLSTM and sLSTM layers, residual blocks, xLSTM[a:b] stacks and the LM model."""

from models.xlstm.config import (
    FeedForwardConfig,
    MLSTMLayerConfig,
    SLSTMLayerConfig,
    XLSTMLanguageModelConfig,
    XLSTMStackConfig,
)
from models.xlstm.language_model import XLSTMLanguageModel
from models.xlstm.official import from_official
from models.xlstm.presets import RATIOS, SIZES, language_model_config, stack_config
from models.xlstm.stack import XLSTMBlock, XLSTMStack

__all__ = [
    "FeedForwardConfig",
    "MLSTMLayerConfig",
    "SLSTMLayerConfig",
    "XLSTMLanguageModelConfig",
    "XLSTMStackConfig",
    "XLSTMLanguageModel",
    "XLSTMBlock",
    "XLSTMStack",
    "from_official",
    "RATIOS",
    "SIZES",
    "language_model_config",
    "stack_config",
]
