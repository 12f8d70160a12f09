"""Mamba (Gu & Dao 2023): selective state-space blocks with pre-RMSNorm residuals.

Config, presets and tied names in ``config`` (torch-free), the builder in ``backbones``.
"""
