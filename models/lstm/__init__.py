"""LSTM baselines of the xLSTM paper: the vanilla multi-layer LSTM, its residual version, and LSTM (Block).

Configs (torch-free) in ``models.lstm.config``, modules in ``vanilla``, ``residual`` and ``block``, builders by
name in ``backbones``.
"""
