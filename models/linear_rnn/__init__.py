"""Linear-attention and linear-RNN baselines: GLA, HGRN, HGRN2, RetNet (as flash-linear-attention defines
them, the library the paper used) and RWKV-6 (as the official RWKV-LM x060 model).

Parameter counts of ``LanguageModel(backbone, 50304, D)`` (untied head) against the paper:

- HGRN2 (fla defaults, expand_ratio 128) and RWKV-6 (official key dim D, head size 64) reproduce
  Table spaj_peaklr at every size. The table lists D = 2048 / 24 blocks for the 2.7B rows, which
  would repeat the 1.3B counts; D = 2560 / 32 blocks (the other models' 2.7B shape) gives 3021.9M and
  2795.4M exactly, so the presets use it.
- GLA (412M) and HGRN (411M) at D = 1024, 24 blocks reproduce Table spaj15b_model_results.
- RetNet: fla's RetNet defaults at D = 1024, 24 blocks give 417.7M, 3.1% below the paper's 431M; no
  standard RetNet option we know of (fla, torchscale configs) gives 431M, so the preset keeps fla's
  defaults and the count is a reported exception.

Configs and size presets (torch-free) in ``config``, layers and stacks in ``gla``, ``hgrn``, ``hgrn2``, ``retnet``
and ``rwkv6``, builders by name in ``backbones``.
"""
