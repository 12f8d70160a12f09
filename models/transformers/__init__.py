"""Transformer baselines: Llama (rotary, SwiGLU, RMSNorm) and GPT-3 (learned positions, GeLU, LayerNorm, tied).

Presets: Table spaj_peaklr (Llama, 125M to 2.7B) and Table spaj15b_model_results (GPT-3, 350M = GPT-3 Medium).
Configs, presets and tied names in ``config`` (torch-free); one block (``block``) and one stack (``stack``) for both,
their config's ``architecture`` picking the parts; builders in ``backbones``.
"""
