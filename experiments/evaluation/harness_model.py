"""A run-store language model as an LM Evaluation Harness model (``lm_eval.api.model.TemplateLM``), registered as
``xlstm-suite``: log-likelihoods of continuations, rolling log-likelihoods of whole texts and greedy generation,
with our tokenizer (the task registry's tasks.text.Text).

No request is truncated. Requests of at most the training context are scored together, up to TOKENS_PER_BATCH
input positions per forward pass, each right-padded to the longest of its batch: every model is causal, so a
position's logits do not see the padding after it (one at a time, a multiple-choice task of 2,500 requests took more
than 20 minutes here for an E-192 xLSTM on CPU). A longer request is scored alone, in chunks of the training context with the model's state carried over the whole sequence (models.chunked_forward:
xLSTM and Mamba run a chunk in one pass, the others step through it; every backbone has ``init_state``/``step``: a recurrent model's constant-size state, an attention model's KV cache, so attention
scores the full length where its positions reach, and GPT-3's learned positions raise an error naming the length
where they do not). Generation always steps.

Precision: ``32-true`` as loaded, ``bf16-true`` a bfloat16 copy of the weights, ``bf16-mixed`` autocast to
bfloat16 with float32 weights (experiments.evaluation.trained_models.precision_context). Log-probabilities are
taken in float32 from the logits.

By name, once this module is imported: ``lm_eval.simple_evaluate(model="xlstm-suite", model_args="run=<training
run dir>,precision=bf16-mixed", ...)`` loads the run's last checkpoint.
"""

import copy
from pathlib import Path

import torch
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from omegaconf import OmegaConf
from torch import nn

from experiments.evaluation.trained_models import language_model_tokenizer, precision_context, trained_language_model
from models.chunked_forward import chunked_logits
from tasks.registry import TEXT

MAX_GENERATED_TOKENS = 256  # the harness's own default for generate_until
TOKENS_PER_BATCH = 4096  # input positions per forward pass of requests scored together (speed and memory only)
PADDING_TOKEN = 0  # any id: a causal model's logits before it do not see it


def token_log_probs(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, context_length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs, targets (S,) -> (log-probability of each target (S,) float32, whether it is the argmax (S,) bool).

    Within ``context_length`` one forward pass; beyond it chunks of ``context_length`` tokens with the state carried
    from chunk to chunk (models.chunked_forward: a parallel pass per chunk where the model has one, else its step)."""
    with torch.no_grad():
        if inputs.shape[0] <= context_length:
            logits = model(inputs[None])[0]  # (S, V)
        else:
            logits = torch.cat(list(chunked_logits(model, inputs[None], context_length)), dim=1)[0]  # (S, V)
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (S, V)
    return log_probs.gather(-1, targets[:, None])[:, 0], logits.argmax(-1) == targets


@register_model("xlstm-suite")
class SuiteLanguageModel(TemplateLM):
    def __init__(self, model: nn.Module, tokenizer_name: str, context_length: int, precision: str = "32-true"):
        super().__init__()
        self.device_ = next(model.parameters()).device
        self.model = copy.deepcopy(model).to(torch.bfloat16) if precision == "bf16-true" else model
        self.precision = precision
        self.tokenizer_choice = tokenizer_name
        self.encoding = TEXT.encoding(tokenizer_name)
        self.context_length = context_length

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None) -> "SuiteLanguageModel":
        """``run=<finished training run's directory>[,precision=<32-true|bf16-true|bf16-mixed>]``: its last
        checkpoint, its config's tokenizer and training context."""
        from lm_eval.utils import simple_parse_args_string

        from experiments.sweeps.training_runs import evaluated_checkpoints

        arguments = simple_parse_args_string(arg_string)
        if "run" not in arguments:
            raise ValueError(f"the xlstm-suite harness model needs run=<training run directory>; got {arg_string!r}")
        run = Path(arguments["run"])
        config = OmegaConf.load(run / "config.yaml")
        model, _ = trained_language_model(config, evaluated_checkpoints(run, "last")[0])
        return cls(
            model, language_model_tokenizer(config), config.task.context_length, arguments.get("precision", "32-true")
        )

    @property
    def eot_token_id(self) -> int:
        return TEXT.tokenizer(self.tokenizer_choice).end_of_text

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs) -> list[int]:
        return self.encoding.encode_ordinary(string)

    def tok_decode(self, tokens: list[int]) -> str:
        return self.encoding.decode(tokens)

    def scored(self, tokens: list[int], continuation_length: int) -> tuple[float, bool]:
        """The summed log-probability of the last ``continuation_length`` tokens given the ones before, and whether
        each is the greedy choice."""
        sequence = torch.as_tensor(tokens, device=self.device_)  # (N,)
        with precision_context(self.precision, self.device_):
            log_probs, greedy = token_log_probs(self.model, sequence[:-1], sequence[1:], self.context_length)
        return float(log_probs[-continuation_length:].sum()), bool(greedy[-continuation_length:].all())

    def scored_together(self, sequences: list[list[int]], continuation_lengths: list[int]) -> list[tuple[float, bool]]:
        """scored for sequences of at most context_length + 1 tokens, in one forward pass: inputs right-padded to
        the longest."""
        width = max(len(tokens) for tokens in sequences) - 1
        inputs = torch.full((len(sequences), width), PADDING_TOKEN, dtype=torch.long)  # (B, S)
        targets = torch.full((len(sequences), width), PADDING_TOKEN, dtype=torch.long)  # (B, S)
        for row, tokens in enumerate(sequences):
            inputs[row, : len(tokens) - 1] = torch.as_tensor(tokens[:-1])
            targets[row, : len(tokens) - 1] = torch.as_tensor(tokens[1:])
        inputs, targets = inputs.to(self.device_), targets.to(self.device_)
        with torch.no_grad(), precision_context(self.precision, self.device_):
            logits = self.model(inputs)  # (B, S, V)
        log_probs = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets[..., None])[..., 0]  # (B, S)
        greedy = logits.argmax(-1) == targets  # (B, S)
        answers = []
        for row, (tokens, length) in enumerate(zip(sequences, continuation_lengths, strict=True)):
            end = len(tokens) - 1
            answers.append(
                (float(log_probs[row, end - length : end].sum()), bool(greedy[row, end - length : end].all()))
            )
        return answers

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs) -> list[tuple[float, bool]]:
        sequences = [context + continuation for _, context, continuation in requests]
        lengths = [len(continuation) for _, _, continuation in requests]
        results: list[tuple[float, bool] | None] = [None] * len(requests)
        fitting = sorted(
            (index for index, tokens in enumerate(sequences) if len(tokens) - 1 <= self.context_length),
            key=lambda index: -len(sequences[index]),
        )
        for index in set(range(len(requests))) - set(fitting):
            results[index] = self.scored(sequences[index], lengths[index])
        start = 0
        while start < len(fitting):  # longest first: each batch as many as fit TOKENS_PER_BATCH at its longest
            rows = max(1, TOKENS_PER_BATCH // len(sequences[fitting[start]]))
            batch = fitting[start : start + rows]
            answers = self.scored_together([sequences[index] for index in batch], [lengths[index] for index in batch])
            for index, answer in zip(batch, answers, strict=True):
                results[index] = answer
            start += len(batch)
        for (text_pair, _, _), answer in zip(requests, results, strict=True):
            if text_pair is not None:
                self.cache_hook.add_partial("loglikelihood", text_pair, answer)
        return results

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        """Each text's whole log-likelihood, its first token conditioned on the end-of-text token."""
        results = []
        for request in requests:
            (text,) = request.args
            tokens = self.tok_encode(text)
            results.append(self.scored([self.eot_token_id] + tokens, len(tokens))[0] if tokens else 0.0)
        return results

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """Greedy continuations, each cut before the first of its stop strings (``until``) or the end-of-text."""
        return [self.generated(*request.args) for request in requests]

    def generated(self, context: str, options: dict) -> str:
        if options.get("do_sample") or options.get("temperature", 0) > 0:
            raise ValueError(f"the xlstm-suite harness model generates greedily; got sampling options {options}")
        stops = options.get("until") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        prompt = self.tok_encode(context) or [self.eot_token_id]
        new_tokens: list[int] = []
        with torch.no_grad(), precision_context(self.precision, self.device_):
            state = self.model.init_state(1)
            for token in prompt:
                logits, state = self.model.step(torch.tensor([token], device=self.device_), state)  # (1, V)
            for _ in range(options.get("max_gen_toks", MAX_GENERATED_TOKENS)):
                token = int(logits[0].argmax())
                if token == self.eot_token_id:
                    break
                new_tokens.append(token)
                text = self.tok_decode(new_tokens)
                if any(stop in text for stop in stops):
                    break
                logits, state = self.model.step(torch.tensor([token], device=self.device_), state)
        text = self.tok_decode(new_tokens)
        cut = min((text.index(stop) for stop in stops if stop in text), default=len(text))
        return text[:cut]
