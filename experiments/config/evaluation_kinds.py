"""Evaluation kinds by name: what an evaluation run does with a finished training run's checkpoint.

An evaluating artifact names a kind (``evaluates.kind``) and its settings (``evaluates.settings``); each of its runs
is a training run's config extended by the ``evaluate`` section, which holds the kind and its settings with every
default filled in (experiments.config.artifacts). A kind is its settings' schema (a dataclass, checked like every
other section, without torch). The registry of kinds lives here, not in experiments/evaluation, because a config is
checked before any compute and config imports nothing above it; each kind's run function (``run(config, run_dir) ->
metrics``, in experiments/evaluation), which the sweep runs instead of training, is named by experiments.run_kinds.

Without a kind, an evaluating artifact evaluates the checkpoint on its own task settings (its grid replaces the
training cell's values, e.g. a longer context) with the task's validation and test metrics
(experiments.training.train.run_evaluation).
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from experiments.config.bounds import BATCH, EVALUATED_TOKENS, LENGTH, MAX_MEMORY_MIB, SAMPLES
from experiments.config.config_schema import section_problems
from tasks.registry import TEXT

PALOMA = TEXT.paloma


@dataclass
class PalomaSettings:
    """PALOMA as the paper scores it (Appendix "Details on PALOMA"): documents cut into windows of ``window`` tokens
    (its 2048, the models' training context), "evaluated in bfloat16 Mixed Precision" (``precision``), every token
    of a document scored once (tasks.text.Paloma.windows). The paper does not say which split it scores: ``val`` here,
    the split PALOMA's own evaluation code scores (OLMo-Eval's task set ``paloma_hf_release_val``).

    ``location``: a local clone of the hub repository (``<source>/<split>/*.jsonl.gz``), the hub id, or ``sample``:
    a few sonnets per source in PALOMA's layout (tasks.text.Paloma.sample_location), the smoke scale's offline
    stand-in.
    ``sources``: the hub configs scored (a table's columns need theirs). ``tokens_per_batch``: input positions per
    forward pass (speed and memory only)."""

    location: str = PALOMA.hub_id
    split: Literal[PALOMA.splits] = "val"
    sources: list[str] = field(default_factory=lambda: list(PALOMA.sources))
    window: int = field(default=2048, metadata=LENGTH)
    tokens_per_batch: int = field(default=16384, metadata=EVALUATED_TOKENS)
    precision: Literal["bf16-mixed", "32-true"] = "bf16-mixed"

    def problems(self) -> list[str]:
        problems = [
            f"sources: {source!r} is not a PALOMA source; valid choices: {list(PALOMA.sources)}"
            for source in self.sources
            if source not in PALOMA.sources
        ]
        if not self.sources:
            problems.append(f"sources=[] names no source; valid choices: {list(PALOMA.sources)}")
        if self.tokens_per_batch < self.window:
            problems.append(
                f"tokens_per_batch={self.tokens_per_batch} must hold one window of window={self.window} tokens"
            )
        return problems

    def evaluated_tokens(self, task: dict) -> None:
        """Unknown before the sources are read (the compute estimate says so)."""
        return None


PRECISIONS = ("32-true", "bf16-true", "bf16-mixed")  # full float32, full bfloat16, bfloat16 autocast on float32
DOWNSTREAM_TASKS = ("lambada_openai", "hellaswag", "piqa", "arc_easy", "arc_challenge", "winogrande")


@dataclass
class LmevalSettings:
    """Downstream tasks through EleutherAI's LM Evaluation Harness as the paper runs them (Appendix "Details on
    Downstream Evaluation"): its six tasks (``tasks``, the harness's task names), each model evaluated "in full
    float32, full bfloat16 and bfloat16 Mixed Precision with weights in float32" (``precisions``), the best value of
    each column kept. ``limit``: at most this many documents per task (the smoke scale; null: all). ``task_dir``: a
    folder of task YAMLs added to the harness's own (offline stand-ins; null: none)."""

    tasks: list[str] = field(default_factory=lambda: list(DOWNSTREAM_TASKS))
    precisions: list[Literal[PRECISIONS]] = field(default_factory=lambda: list(PRECISIONS))
    limit: int | None = field(default=None, metadata=SAMPLES)
    task_dir: str | None = None

    def problems(self) -> list[str]:
        problems = []
        if not self.tasks:
            problems.append(f"tasks=[] names no task; the paper's: {list(DOWNSTREAM_TASKS)}")
        if not self.precisions:
            problems.append(f"precisions=[] names no precision; valid choices: {list(PRECISIONS)}")
        for name, values in (("tasks", self.tasks), ("precisions", self.precisions)):
            if len(set(values)) < len(values):
                problems.append(f"{name}={values} names a value twice")
        return problems

    def evaluated_tokens(self, task: dict) -> None:
        """Unknown before the harness reads its tasks' documents (the compute estimate says so)."""
        return None


@dataclass
class ContextExtrapolationSettings:
    """Figure spaj300B_seq_extrapolation (perplexity per length, its table at 16k): a language model trained at one
    context length scored on validation sequences of a longer one ("Models are trained with context length 2048
    and then tested for context lengths up to 16384"), the run's own ``task.context_length`` (an evaluating
    artifact's grid sets it, one run per length).
    The first ``tokens`` validation tokens of the training run's corpus, the same at every length, cut into
    ``tokens / length`` sequences of that length, ``batch_size`` per pass: their token perplexity (so that the
    lengths differ in the context each token is scored with, not in the text) and the peak memory of scoring them.
    Models whose state does not grow with the tokens seen (recurrent: xLSTM, Mamba, RWKV) run chunk by chunk of
    ``chunk`` tokens with the state carried, so their memory stays flat in the length; a Transformer runs the whole
    sequence in one pass (the paper's Llama, no position interpolation), its memory growing with it. ``precision``
    as PalomaSettings'."""

    chunk: int = field(default=2048, metadata=LENGTH)
    tokens: int = field(default=16 * 16384, metadata=EVALUATED_TOKENS)
    batch_size: int = field(default=1, metadata=BATCH)
    precision: Literal["bf16-mixed", "32-true"] = "bf16-mixed"

    def sequences(self, context_length: int) -> int:
        return self.tokens // context_length

    def task_problems(self, task: dict) -> list[str]:
        if self.tokens % task["context_length"]:
            return [
                f"evaluates.settings.tokens={self.tokens} must be a multiple of task.context_length="
                f"{task['context_length']}: every length scores the same tokens, in tokens / context_length "
                "sequences"
            ]
        return []

    def evaluated_tokens(self, task: dict) -> int:
        return self.tokens


GENERATION_PRECISIONS = ("32-true", "bf16-true")  # the weights and the state in float32 or in bfloat16


@dataclass
class GenerationTimeSettings:
    """Figure inference_time_generation (left): the time to generate ``length`` tokens greedily after a prefill of
    ``prefill`` tokens ("all of the models are tested at batch size 1 and pre-fill 16"), ``batch_size`` sequences at
    once, one token per step through the model's recurrent step; a Transformer with a static key-value cache of the
    positions it needs ("including a static key-value cache for the Llama model"). The weights are the ``precision``'s
    (bf16-true: the model in bfloat16). An artifact's grid sets ``length`` (``evaluate.settings.length``), one run
    per length. Before the timed generation, ``warmup`` tokens are generated once (allocator, caches, kernels)."""

    length: int = field(default=2048, metadata=LENGTH)
    prefill: int = field(default=16, metadata=LENGTH)
    batch_size: int = field(default=1, metadata=BATCH)
    warmup: int = field(default=16, metadata=LENGTH)
    precision: Literal[GENERATION_PRECISIONS] = "32-true"

    def evaluated_tokens(self, task: dict) -> int:
        return self.batch_size * (self.prefill + self.warmup + self.length)


@dataclass
class DecodingThroughputSettings:
    """Figure inference_time_decoding_throughput (right): generated tokens per second at a ``batch_size`` (an
    artifact's grid sets it), each sequence ``length`` tokens after a prefill of ``prefill``, as
    GenerationTimeSettings generates them. ``memory_limit_mib``: the memory the model may use, its weights, state
    and activations (null: the GPU's memory; required on a CPU): a batch whose measured peak (the prefill and the
    first decoding steps, when a static cache and a recurrent state already hold all they ever will) exceeds it is
    recorded as out of memory, its throughput not measured; on a GPU an allocation that fails is recorded so too."""

    batch_size: int = field(default=1, metadata=BATCH)
    length: int = field(default=2048, metadata=LENGTH)
    prefill: int = field(default=16, metadata=LENGTH)
    warmup: int = field(default=4, metadata=LENGTH)
    memory_limit_mib: float | None = field(default=None, metadata={"at_least": 1, "at_most": MAX_MEMORY_MIB})
    precision: Literal[GENERATION_PRECISIONS] = "32-true"

    def evaluated_tokens(self, task: dict) -> int:
        """The most a run generates (one over its memory limit generates none)."""
        return self.batch_size * (self.prefill + self.warmup + self.length)


@dataclass(frozen=True)
class EvaluationKind:
    settings: type  # a dataclass whose every field has a default; the run function: experiments.run_kinds
    # it measures what the weights do not change (time, memory): evaluates.checkpoint may be ``initial``, the model
    # at its initial weights, whose training run need not have run
    initial_weights: bool = False


EVALUATION_KINDS = {
    "paloma": EvaluationKind(PalomaSettings),
    "lmeval": EvaluationKind(LmevalSettings),
    "context_extrapolation": EvaluationKind(ContextExtrapolationSettings),
    "generation_time": EvaluationKind(GenerationTimeSettings, initial_weights=True),
    "decoding_throughput": EvaluationKind(DecodingThroughputSettings, initial_weights=True),
}


def settings_problems(kind: object, settings: object, prefix: str) -> list[str]:
    """Why ``kind`` is not a kind or ``settings`` not its settings (one message per bad value); [] when sound."""
    if kind not in EVALUATION_KINDS:
        return [f"{prefix}.kind={kind!r} is not valid; valid choices: {sorted(EVALUATION_KINDS)}"]
    return section_problems(
        EVALUATION_KINDS[kind].settings, settings if settings is not None else {}, f"{prefix}.settings"
    )


def resolved_settings(kind: str, settings: dict | None) -> dict:
    """The kind's settings with every default filled in (checked first: ValueError naming each bad value)."""
    problems = settings_problems(kind, settings, "evaluates")
    if problems:
        raise ValueError("\n".join(problems))
    return dataclasses.asdict(EVALUATION_KINDS[kind].settings(**(settings or {})))


def section_settings(evaluate: dict):
    """The settings object of an ``evaluate`` section's kind."""
    return EVALUATION_KINDS[evaluate["kind"]].settings(**(evaluate.get("settings") or {}))


def task_problems(evaluate: dict, task: dict) -> list[str]:
    """Why a kind's settings do not fit one run's task (e.g. its context length); [] for kinds that check none."""
    settings = section_settings(evaluate)
    return settings.task_problems(task) if hasattr(settings, "task_problems") else []


def evaluated_tokens(evaluate: dict, task: dict) -> int | None:
    """The tokens an evaluation run of a kind runs through the model (None: not known before its data is read)."""
    return section_settings(evaluate).evaluated_tokens(task)
