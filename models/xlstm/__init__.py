"""xLSTM (Beck et al. 2024): mLSTM and sLSTM layers, residual blocks, xLSTM[a:b] stacks and the LM model.

Configs (torch-free) in ``config`` and ``presets``, modules in ``mlstm_layer``, ``slstm_layer``, ``stack`` and
``language_model``, builders by name in ``backbones``, import of official weights in ``official`` and the official
package's configs of small stacks (the oracle tests' and benchmarks' references) in ``official_configs``.
"""


def __getattr__(name: str):
    """``models.xlstm.from_official``, imported on first use (it imports torch; the package's configs do not)."""
    if name == "from_official":
        from models.xlstm.official import from_official

        return from_official
    raise AttributeError(f"module 'models.xlstm' has no attribute {name!r}")
