"""xLSTM (Beck et al. 2024): mLSTM and sLSTM layers, residual blocks, xLSTM[a:b] stacks and the LM model.

Configs (torch-free) in ``config`` and ``presets``, modules in ``mlstm_layer``, ``slstm_layer``, ``stack`` and
``language_model``, builders by name in ``backbones``, import of official weights in ``official``.
"""
