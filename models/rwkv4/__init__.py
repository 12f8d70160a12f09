"""RWKV-4 (Peng et al. 2023): time-mix (WKV) and channel-mix blocks with pre-LayerNorm residuals.

Config, presets and tied names in ``config`` (torch-free), the builder in ``backbones``.
"""
