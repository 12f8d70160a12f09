"""AdamW with linear warm-up and cosine decay (with ``restarts``: warm restarts), the one optimiser of every run (formal languages: Appendix B.1.1;
language modelling: Appendix B.2)."""

import torch
from lightning import LightningModule

from experiments.training.schedules import warmup_cosine_factor
from models.optim_groups import weight_decay_groups


def schedule_steps(optim: dict, max_steps: int) -> tuple[int, int, float]:
    """(warm-up steps, decay steps, floor as a fraction of the peak) of an optim config: ``warmup_steps`` or
    ``warmup_fraction`` of max_steps; the cosine ends at ``decay_steps`` (the paper's 15B runs decay over 30k steps and
    stop at 28170) or at max_steps; the floor is ``min_lr_ratio`` of the peak (the paper's LM: 10%) or ``min_lr``."""
    warmup = optim.get("warmup_steps")
    warmup = max(1, warmup if warmup is not None else round(optim["warmup_fraction"] * max_steps))
    decay = optim.get("decay_steps") or max_steps
    ratio = optim.get("min_lr_ratio")
    return warmup, decay, ratio if ratio is not None else optim["min_lr"] / optim["lr"]


def configure_adamw(module: LightningModule, optim: dict, max_steps: int) -> dict:
    """Lightning's configure_optimizers result: AdamW over the module's weight-decay groups (embeddings, norms and
    biases excluded) and a per-step LambdaLR schedule."""
    optimizer = torch.optim.AdamW(
        weight_decay_groups(module, optim["weight_decay"]),
        lr=optim["lr"],
        betas=tuple(optim["betas"]),
        eps=optim["eps"],
    )
    warmup, decay, floor = schedule_steps(optim, max_steps)

    def factor(step: int) -> float:
        return warmup_cosine_factor(
            step, max_steps=decay, warmup_steps=warmup, min_lr_ratio=floor, restarts=optim.get("restarts") or 0
        )

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}
