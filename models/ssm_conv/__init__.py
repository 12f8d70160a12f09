"""Long-convolution sequence models: H3 (Fu et al. 2023) and Hyena (Poli et al. 2023), in GPT-style blocks.

Presets (Table spaj15b_model_results, 350M class; untied head, GPT-2 vocabulary padded to 50304), D = 1024 and
24 blocks with a 4D GeLU MLP as the H3 reference's 355M language model:
- ``h3``: the reference H3 layer (d_state 64, head_dim 1): 413.3M against the paper's 420M (-1.6 %), an
  exception kept rather than fudged. (d_state 128 would give 421.1M, but 64 is the reference's setting; the H3
  paper's two attention layers would only remove SSM parameters.)
- ``hyena``: order 3 (the reference operator takes any order >= 2) with safari's Pile filter settings (emb_dim 33,
  w 14, l_max 2048): 436.0M against 435M (+0.2 %); with the default filter (emb_dim 3) 434.5M. The default order 2
  gives 409.1M (-6 %). Order 3 is a setting of Hyena's own operator that reaches the paper's count at these
  dimensions, so we take it to be what was trained; this is an inference, the xLSTM paper does not say.

Configs, presets and tied names in ``config`` (torch-free), builders in ``backbones``.
"""
