"""RWKV-5 "Eagle" (Peng et al. 2024): multi-head matrix-valued WKV time mixing and RWKV channel mixing.

Presets: Table spaj_peaklr (untied head, GPT-2 vocabulary padded to 50304), heads of 64, channel mix 4 D.
The table gives 2048 / 24 for the 2.7B model, the same dimensions as 1.3B (1616.0M); its 3194.7M are reached
by 2560 / 32 (the dimensions of the other 2.7B models in the table), which the preset uses.

Config and presets (torch-free) in ``config``, modules in ``block``, the builder by name in ``backbones``.
"""
