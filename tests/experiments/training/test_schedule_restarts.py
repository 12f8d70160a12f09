"""Linear warm-up then cosine annealing with R warm restarts (the paper's second LRA scheduler, R = 3): R + 1 equal
cosine cycles after the warm-up, each from the peak to the floor; R = 0 is today's single cosine."""

import math

import pytest
import torch

from experiments.config.configuration import compose_run_config
from experiments.config.validation import validate_run_config
from experiments.training.optimizer import configure_adamw
from experiments.training.schedules import warmup_cosine_factor

WARMUP, MAX_STEPS, FLOOR = 10, 90, 0.1  # 80 steps after the warm-up: 4 cycles of 20 at R = 3


def direct(step: int, restarts: int) -> float:
    """The definition written out: which cycle the step is in, and how far into it."""
    if step < WARMUP:
        return (step + 1) / WARMUP
    if step >= MAX_STEPS:
        return FLOOR
    cycle_length = (MAX_STEPS - WARMUP) / (restarts + 1)
    into_cycle = (step - WARMUP) - cycle_length * math.floor((step - WARMUP) / cycle_length)
    return FLOOR + (1 - FLOOR) * (1 + math.cos(math.pi * into_cycle / cycle_length)) / 2


@pytest.mark.parametrize("step", [0, 9, 10, 15, 29, 30, 41, 50, 69, 70, 89, 90, 200])
def test_restarts_follow_the_direct_computation(step):
    factor = warmup_cosine_factor(step, max_steps=MAX_STEPS, warmup_steps=WARMUP, min_lr_ratio=FLOOR, restarts=3)
    assert factor == pytest.approx(direct(step, restarts=3))


def test_three_restarts_jump_back_to_the_peak_three_times():
    factors = [
        warmup_cosine_factor(step, max_steps=MAX_STEPS, warmup_steps=WARMUP, min_lr_ratio=FLOOR, restarts=3)
        for step in range(WARMUP, MAX_STEPS + 1)
    ]
    rises = [step for step, (before, after) in enumerate(zip(factors, factors[1:]), start=WARMUP + 1) if after > before]
    assert rises == [30, 50, 70]
    assert [factors[step - WARMUP] for step in rises] == pytest.approx([1.0, 1.0, 1.0])
    assert factors[-1] == pytest.approx(FLOOR)


def test_no_restarts_is_the_single_cosine():
    for step in range(0, 120, 7):
        assert (
            warmup_cosine_factor(step, max_steps=MAX_STEPS, warmup_steps=WARMUP, min_lr_ratio=FLOOR)
            == warmup_cosine_factor(step, max_steps=MAX_STEPS, warmup_steps=WARMUP, min_lr_ratio=FLOOR, restarts=0)
            == pytest.approx(direct(step, restarts=0))
        )


def test_after_the_warm_up_it_is_torchs_cosine_annealing_with_warm_restarts():
    """CosineAnnealingWarmRestarts(T_0 = cycle length, T_mult = 1, eta_min = floor) stepped once per step after the
    warm-up gives the same learning rates over the R + 1 cycles (torch's last cycle restarts instead of holding the
    floor, so the comparison ends at max_steps - 1)."""
    peak = 1e-3
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    torch_schedule = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        optimizer, T_0=20, T_mult=1, eta_min=FLOOR * peak
    )
    for step in range(WARMUP, MAX_STEPS):
        ours = peak * warmup_cosine_factor(
            step, max_steps=MAX_STEPS, warmup_steps=WARMUP, min_lr_ratio=FLOOR, restarts=3
        )
        assert optimizer.param_groups[0]["lr"] == pytest.approx(ours), step
        optimizer.step()
        torch_schedule.step()


def test_the_optim_option_reaches_the_lr_scheduler():
    config = compose_run_config(
        ["optim.lr=1e-3", "+optim.restarts=3", "trainer.max_steps=90", "optim.warmup_fraction=0.1111111"]
    )
    validate_run_config(config)
    module = torch.nn.Linear(2, 2)
    scheduler = configure_adamw(module, dict(config.optim), max_steps=90)["lr_scheduler"]["scheduler"]
    factors = [scheduler.lr_lambdas[0](step) for step in range(10, 91)]
    assert factors[20] == pytest.approx(1.0) and factors[19] < 0.2  # the first restart at step 30


def test_negative_restarts_are_refused_by_name():
    config = compose_run_config(["+optim.restarts=-1"])
    with pytest.raises(Exception, match="optim.restarts=-1 must be >= 0"):
        validate_run_config(config)
