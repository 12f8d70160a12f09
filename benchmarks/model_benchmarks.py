"""Whole models: a training step against the official xLSTM and a same-size Llama, and recurrent generation.

Our models are imported from freshly initialised official ones (``from_official``), so both compute the same
function with the same weights.
"""

import statistics
import time

import torch
from torch import nn

from benchmarks.comparison import Comparison
from benchmarks.memory import LiveTensorBytes
from benchmarks.timing import interleaved_medians
from models.generation import greedy_generate
from models.xlstm.official import from_official
from models.xlstm.official_configs import official_config

BATCH, CONTEXT, EMBEDDING, VOCAB, HEADS = 16, 256, 128, 8192, 4
RATIOS = ("xlstm_1_0", "xlstm_0_1", "xlstm_1_1")
OFFICIAL_TARGETS = {"xlstm_1_0": 1.3, "xlstm_0_1": 2.0}  # speed-up over the official training step
MIB = 2**20


def official_and_ours(ratio: str, context_length: int):
    """An initialised official xLSTM LM (E=128, 2 blocks, 4 heads, vocabulary 8192) and ours with its weights."""
    from xlstm import xLSTMLMModel  # the official package is an optional (test) dependency

    torch.manual_seed(0)
    official = xLSTMLMModel(
        official_config(ratio, embedding_dim=EMBEDDING, context_length=context_length, vocab_size=VOCAB)
    )
    official.reset_parameters()
    return official, from_official(official)


class LogitsOf(nn.Module):
    """A transformers causal LM as tokens (B, S) -> logits (B, S, V)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=tokens).logits


def non_embedding_parameters(model: nn.Module) -> int:
    return sum(
        p.numel()
        for name, p in model.named_parameters()
        if "embedding" not in name and "lm_head" not in name and "embed_tokens" not in name
    )


def same_size_llama(reference: nn.Module) -> nn.Module:
    """transformers' Llama with our E, blocks, heads and vocabulary, its MLP width chosen (multiple of 64) so
    that its non-embedding parameters come closest to ``reference``'s."""
    from transformers import LlamaConfig, LlamaForCausalLM

    def build(intermediate_size: int) -> nn.Module:
        torch.manual_seed(0)
        config = LlamaConfig(
            vocab_size=VOCAB,
            hidden_size=EMBEDDING,
            intermediate_size=intermediate_size,
            num_hidden_layers=2,
            num_attention_heads=HEADS,
            num_key_value_heads=HEADS,
            max_position_embeddings=CONTEXT,
            tie_word_embeddings=False,
            attn_implementation="sdpa",
        )
        return LogitsOf(LlamaForCausalLM(config))

    target = non_embedding_parameters(reference)
    widths = range(64, 16 * EMBEDDING, 64)
    best = min(widths, key=lambda width: abs(non_embedding_parameters(build(width)) - target))
    return build(best)


def training_step(model: nn.Module, tokens: torch.Tensor):
    """A no-argument callable: next-token cross-entropy on ``tokens`` (B, S + 1), backward, AdamW step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def run():
        logits = model(tokens[:, :-1])  # (B, S, V)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return run


def training_comparisons(repeats: int) -> list[Comparison]:
    tokens = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=torch.Generator().manual_seed(0))
    shape = f"B={BATCH} S={CONTEXT} E={EMBEDDING} 2 blocks"
    rows, tokens_per_second = [], {}
    for ratio in RATIOS:
        official, ours = official_and_ours(ratio, CONTEXT)
        candidates = {"ours": training_step(ours, tokens), "official": training_step(official, tokens)}
        if ratio == "xlstm_1_0":
            candidates["llama"] = training_step(same_size_llama(ours), tokens)
        rate = {name: BATCH * CONTEXT / seconds for name, seconds in interleaved_medians(candidates, repeats).items()}
        tokens_per_second[ratio] = rate["ours"]
        rows.append(
            Comparison(
                f"training step {ratio}",
                shape,
                "tokens/s",
                rate["ours"],
                "official xlstm",
                rate["official"],
                OFFICIAL_TARGETS.get(ratio),
            )
        )
        if "llama" in rate:
            rows.append(
                Comparison(
                    f"training step {ratio}",
                    shape,
                    "tokens/s",
                    rate["ours"],
                    "same-size Llama (transformers)",
                    rate["llama"],
                    1.0,
                )
            )
    rows.append(
        Comparison(
            "training step sLSTM-only vs mLSTM-only",
            shape,
            "tokens/s",
            tokens_per_second["xlstm_0_1"],
            "our xlstm_1_0",
            tokens_per_second["xlstm_1_0"],
            0.5,
        )
    )
    return rows


def official_generate(official: nn.Module, num_tokens: int):
    def run():
        with torch.inference_mode():
            token, state = torch.zeros(1, 1, dtype=torch.long), None
            for _ in range(num_tokens):
                logits, state = official.step(token, state)  # (1, 1, V)
                token = logits[:, -1].argmax(-1, keepdim=True)  # (1, 1)

    return run


def ours_generate(model: nn.Module, num_tokens: int, compile_step: bool):
    prompt = torch.zeros(1, 1, dtype=torch.long)
    return lambda: greedy_generate(model, prompt, num_tokens - 1, compile_step=compile_step)


def token_times(model: nn.Module, num_tokens: int) -> list[float]:
    """Seconds of each generated token (compiled step)."""
    stamps = [time.perf_counter()]
    greedy_generate(
        model,
        torch.zeros(1, 1, dtype=torch.long),
        num_tokens,
        compile_step=True,
        on_token=lambda index: stamps.append(time.perf_counter()),
    )
    return [later - earlier for earlier, later in zip(stamps, stamps[1:])]


def generation_peak_mib(model: nn.Module, num_tokens: int) -> float:
    with LiveTensorBytes() as memory:
        greedy_generate(model, torch.zeros(1, 1, dtype=torch.long), num_tokens)
    return memory.peak / MIB


def generation_comparisons(num_tokens: int, repeats: int) -> list[Comparison]:
    """Batch 1 greedy generation of ``num_tokens`` tokens: ms per token, flatness over position, memory."""
    rows = []
    window = max(num_tokens // 8, 1)
    for ratio in RATIOS:
        official, ours = official_and_ours(ratio, num_tokens)
        candidates = {
            "official": official_generate(official, num_tokens),
            "ours eager": ours_generate(ours, num_tokens, compile_step=False),
            "ours compiled": ours_generate(ours, num_tokens, compile_step=True),
        }
        times = {name: seconds / num_tokens * 1e3 for name, seconds in interleaved_medians(candidates, repeats).items()}
        shape = f"{num_tokens} tokens, batch 1"
        rows.append(
            Comparison(
                f"generation {ratio} (compiled step)",
                shape,
                "ms/token",
                times["ours compiled"],
                "official step",
                times["official"],
                2.0,
            )
        )
        rows.append(
            Comparison(
                f"generation {ratio} (eager step)",
                shape,
                "ms/token",
                times["ours eager"],
                "official step",
                times["official"],
            )
        )
        per_token = token_times(ours, num_tokens)  # medians per window: one slow token is the machine, not the state
        rows.append(
            Comparison(
                f"generation {ratio} flatness",
                f"last {window} vs first {window} tokens",
                "ms/token",
                statistics.median(per_token[-window:]) * 1e3,
                f"our first {window} tokens",
                statistics.median(per_token[:window]) * 1e3,
                0.9,
            )
        )
        rows.append(
            Comparison(
                f"generation {ratio} peak memory",
                f"{num_tokens} vs {window} tokens",
                "MiB",
                generation_peak_mib(ours, num_tokens),
                f"ours, {window} tokens",
                generation_peak_mib(ours, window),
                0.95,
            )
        )
    return rows
