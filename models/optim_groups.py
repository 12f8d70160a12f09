"""Weight-decay parameter groups, the same rule for every backbone."""

from torch import nn


def _is_norm(module: nn.Module) -> bool:
    return "Norm" in type(module).__name__  # nn.LayerNorm, nn.GroupNorm, RMSNorm, HeadwiseNorm, ...


def weight_decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW parameter groups: a parameter named ``weight`` (or ``weight_*``, as nn.LSTM's ``weight_ih_l0``) decays
    unless it belongs to a norm or an embedding.
    Biases, gate-bias vectors, learnable skips, the sLSTM recurrent kernel, norms and embeddings do not decay
    (as in the official trainer); a head tied to the embedding counts as the embedding."""
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decayed = {
        id(param)
        for module in model.modules()
        if not isinstance(module, nn.Embedding) and not _is_norm(module)
        for name, param in module.named_parameters(recurse=False)
        if (name == "weight" or name.startswith("weight_")) and id(param) not in embeddings
    }
    params = [p for p in model.parameters() if p.requires_grad]  # tied weights appear once
    return [
        {"params": [p for p in params if id(p) in decayed], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0},
    ]
