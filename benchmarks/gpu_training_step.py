"""One language model's training step, timed: the measurement a GPU benchmark runs in a child process.

    python -m benchmarks.gpu_training_step '{"model": "llama", "size": "125m", "batch": 16, "context": 2048}'

prints one JSON line (benchmarks.gpu_children runs it). The step is the paper's recipe for the model
(models.catalog.training_policy) on one device: next-token cross-entropy on random tokens, backward, fused AdamW;
bfloat16 autocast with float32 weights for the models that train with it, and for those that do not (HGRN, GLA,
HGRN2, RWKV-5/6: "automatic mixed precision training did not work") bfloat16 weights, which stand in for FSDP's
bfloat16 parameter dtype (FSDP also keeps float32 master weights: our peak memory is lower than the recipe's by their
size). Eager: torch.compile is left out (it takes minutes per model on the first step, more than a lent GPU's budget).

``warmup`` untimed steps (kernels compile, the probe of each optional backend runs, AdamW allocates its state), then
``steps`` timed steps: the median's tokens/s and the peak memory allocated during them. A batch that does not fit is
retried as half as many sequences per micro-batch with twice the gradient accumulation (the same tokens per step),
down to one sequence.
"""

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from benchmarks.gpu_children import OK, run_child
from models.catalog import training_policy
from models.registry import build_language_model
from models.xlstm.presets import GPT2_VOCAB_PADDED


@dataclass(frozen=True)
class StepSetting:
    model: str
    size: str
    batch: int
    context: int
    warmup: int = 1
    steps: int = 3

    def describe(self) -> str:
        return f"{self.model} {self.size}, B={self.batch} S={self.context}"


def micro_batches(batch: int) -> list[int]:
    """The micro-batches to try, halving while they divide the batch: 16 -> [16, 8, 4, 2, 1], 12 -> [12, 6, 3]."""
    sizes = [batch]
    while sizes[-1] % 2 == 0:
        sizes.append(sizes[-1] // 2)
    return sizes


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def training_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, tokens: torch.Tensor, micro_batch: int, autocast: bool
) -> Callable[[], float]:
    """A no-argument callable: one optimizer step over ``tokens`` (B, S + 1) in micro-batches; returns the loss."""
    parts = tokens.split(micro_batch)

    def step() -> float:
        total = torch.zeros((), device=tokens.device)
        for part in parts:
            with torch.autocast(tokens.device.type, dtype=torch.bfloat16, enabled=autocast):
                logits = model(part[:, :-1])  # (b, S, V)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), part[:, 1:].flatten()) / len(parts)
            loss.backward()
            total += loss.detach()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return total.item()

    return step


def timed_steps(
    step: Callable[[], float],
    setting: StepSetting,
    device: torch.device,
    clock: Callable[[], float] = time.perf_counter,
) -> dict:
    """Run ``setting.warmup`` then ``setting.steps`` steps: median seconds, peak memory of the timed steps, last
    loss."""
    for _ in range(setting.warmup):
        step()
    _synchronize(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    seconds = []
    for _ in range(setting.steps):
        started = clock()
        loss = step()  # .item() synchronises
        seconds.append(clock() - started)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {"step_seconds": statistics.median(seconds), "peak_memory_bytes": peak, "loss": loss}


def measure(
    setting: StepSetting,
    device: torch.device,
    build: Callable[[str, str], nn.Module] = build_language_model,
    vocab_size: int = GPT2_VOCAB_PADDED,
) -> dict:
    """The step of ``setting`` on ``device``: {"status": "ok", "micro_batch", "step_seconds", "tokens_per_second",
    "peak_memory_bytes", "loss", "precision"}, or {"status": "out of memory at micro-batch 1", "precision"}.
    ``build`` (name, size) -> the model: the paper's language model at that preset."""
    autocast = training_policy(setting.model).autocast
    torch.manual_seed(0)
    model = build(setting.model, setting.size).to(device)
    if not autocast:
        model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    tokens = torch.randint(
        0, vocab_size, (setting.batch, setting.context + 1), generator=torch.Generator().manual_seed(0)
    ).to(device)
    precision = "bf16 autocast, float32 weights" if autocast else "bf16 weights (FSDP's parameter dtype)"
    for micro_batch in micro_batches(setting.batch):
        try:
            timing = timed_steps(training_step(model, optimizer, tokens, micro_batch, autocast), setting, device)
        except torch.cuda.OutOfMemoryError:
            timing = None
        if timing is not None:
            return {
                "status": OK,
                "micro_batch": micro_batch,
                "precision": precision,
                "tokens_per_second": setting.batch * setting.context / timing["step_seconds"],
                **timing,
            }
        optimizer.zero_grad(set_to_none=True)  # the failed attempt's gradients, freed before the next
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return {"status": f"out of memory at micro-batch {micro_batches(setting.batch)[-1]}", "precision": precision}


def measure_in_child(setting: StepSetting, timeout_seconds: float) -> dict:
    """``measure`` on the GPU in a child process (benchmarks.gpu_children): its result or {"status": why not}."""
    return run_child(["-m", "benchmarks.gpu_training_step", json.dumps(asdict(setting))], timeout_seconds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setting", help="the StepSetting as JSON")
    setting = StepSetting(**json.loads(parser.parse_args(argv).setting))
    print(json.dumps(measure(setting, torch.device("cuda"))))  # a non-finite loss as NaN, which json reads back
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
