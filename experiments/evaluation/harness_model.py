"""A run-store language model as an LM Evaluation Harness model (``lm_eval.api.model.TemplateLM``), registered as
``xlstm-suite``: log-likelihoods of continuations, rolling log-likelihoods of whole texts and greedy generation,
with our tokenizer (the task registry's tasks.text.Text), batch size 1.

No request is truncated. A sequence of at most the training context is scored in one forward pass; a longer one
in chunks of the training context with the model's state carried over the whole sequence (models.chunked_forward:
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

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs) -> list[tuple[float, bool]]:
        results = []
        for text_pair, context, continuation in requests:
            answer = self.scored(context + continuation, len(continuation))
            if text_pair is not None:
                self.cache_hook.add_partial("loglikelihood", text_pair, answer)
            results.append(answer)
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
