"""The lmeval evaluation kind: the LM Evaluation Harness run offline on the stand-in tasks (tasks.lm.lmeval_sample,
in the harness's own format) with the suite's harness model, its scores checked against a direct computation with
our model; requests longer than the training context scored without truncation; table lmeval's columns from the
harness's metrics; planning of the lmeval artifact and bad settings named before compute; smoke end to end."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.config.artifacts import load_artifact
from experiments.sweeps.sweep import run_sweep
from models.registry import build_language_model_from, known_language_models
from tasks.lm.tokenizer import MODEL_VOCABULARY, encoding
from tests.evaluation_probe import load_error

lm_eval = pytest.importorskip("lm_eval", reason="the optional extra lmeval (pip install -e '.[lmeval]')")

from experiments.evaluation import harness_model  # noqa: E402  (needs lm_eval)
from experiments.evaluation.harness_model import SuiteLanguageModel  # noqa: E402
from experiments.evaluation.lmeval_scores import best_metrics, table_columns  # noqa: E402
from tasks.lm.lmeval_sample import CHOICE_QUESTIONS, CLOZE_PASSAGES, SAMPLE_TASKS, lmeval_sample  # noqa: E402

TRAINING = "temp_sclaw300B"
END_OF_TEXT = 50256


def tiny_model(name: str = "xlstm_1_0", **options) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_language_model_from(name, MODEL_VOCABULARY, embedding_dim=16, num_blocks=2, **options).eval()


def direct_log_likelihood(model, context: str, continuation: str) -> tuple[float, bool]:
    """log p(continuation | context) from one forward pass over the whole sequence: the tokens of context +
    continuation after the context's own tokens, each predicted from all tokens before it."""
    text = encoding()
    context_tokens = text.encode_ordinary(context)
    tokens = torch.tensor(text.encode_ordinary(context + continuation))
    with torch.no_grad():
        log_probs = torch.log_softmax(model(tokens[None, :-1])[0].double(), -1)  # (S, V)
    positions = torch.arange(len(context_tokens) - 1, len(tokens) - 1)
    targets = tokens[len(context_tokens) :]
    greedy = bool((log_probs[positions].argmax(-1) == targets).all())
    return float(log_probs[positions, targets].sum()), greedy


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    """The harness on the stand-in tasks with an xLSTM[1:0] whose training context (4) is shorter than every
    request: every request is scored through step with carried state."""
    from lm_eval.tasks import TaskManager

    model = tiny_model()
    harness = SuiteLanguageModel(model, "gpt2", context_length=4)
    manager = TaskManager(include_path=str(lmeval_sample(tmp_path_factory.mktemp("tasks"))), include_defaults=False)
    results = lm_eval.simple_evaluate(
        model=harness, tasks=list(SAMPLE_TASKS), task_manager=manager, bootstrap_iters=0, log_samples=True
    )
    return model, results


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_the_harness_multiple_choice_accuracy_is_the_argmax_of_our_summed_continuation_log_probs(harness_run):
    model, results = harness_run
    correct, correct_norm = [], []
    for question in CHOICE_QUESTIONS:
        likelihoods = np.array(
            [direct_log_likelihood(model, question["question"], " " + choice)[0] for choice in question["choices"]]
        )
        lengths = np.array([len(choice) for choice in question["choices"]], dtype=float)
        correct.append(np.argmax(likelihoods) == question["label"])
        correct_norm.append(np.argmax(likelihoods / lengths) == question["label"])
    scores = results["results"]["sample_choice"]
    assert scores["acc,none"] == pytest.approx(np.mean(correct))
    assert scores["acc_norm,none"] == pytest.approx(np.mean(correct_norm))
    for sample in results["samples"]["sample_choice"]:  # and each choice's log-likelihood itself
        question = CHOICE_QUESTIONS[sample["doc_id"]]
        for (_context, continuation), [(likelihood, _)] in zip(sample["arguments"], sample["resps"]):
            assert likelihood == pytest.approx(
                direct_log_likelihood(model, question["question"], continuation)[0], abs=1e-4
            )


def test_the_harness_cloze_perplexity_and_accuracy_are_ours(harness_run):
    model, results = harness_run
    scored = []
    for passage in CLOZE_PASSAGES:  # LAMBADA's form: the passage's last word given the words before it
        context, word = passage["text"].rsplit(" ", 1)
        scored.append(direct_log_likelihood(model, context, " " + word))
    scores = results["results"]["sample_cloze"]
    assert scores["perplexity,none"] == pytest.approx(math.exp(-np.mean([each[0] for each in scored])), rel=1e-4)
    assert scores["acc,none"] == pytest.approx(np.mean([each[1] for each in scored]))


@pytest.mark.parametrize("name", ["xlstm_1_0", "mamba", "llama"])
def test_a_request_longer_than_the_training_context_is_scored_whole(name):
    """xLSTM and Mamba step with their recurrent state, Llama with its KV cache: the same as one forward pass over
    the whole request, nothing truncated."""
    model = tiny_model(name)
    harness = SuiteLanguageModel(model, "gpt2", context_length=8)
    context = "Shall I compare thee to a summer's day? Thou art more lovely and more temperate:"
    continuation = " Rough winds do shake the darling buds of May"
    assert len(encoding().encode_ordinary(context + continuation)) > 3 * 8
    ((likelihood, greedy),) = harness._loglikelihood_tokens(
        [(None, encoding().encode_ordinary(context), encoding().encode_ordinary(continuation))]
    )
    expected, expected_greedy = direct_log_likelihood(model, context, continuation)
    assert likelihood == pytest.approx(expected, abs=1e-4) and greedy == expected_greedy
    assert likelihood < 0


def test_each_precision_scores_its_own_way_and_leaves_the_loaded_model_as_it_was():
    model = tiny_model()
    tokens = encoding().encode_ordinary("Shall I compare thee to a summer's day? Thou art more lovely")
    scores = {}
    for precision in ("32-true", "bf16-true", "bf16-mixed"):
        harness = SuiteLanguageModel(model, "gpt2", context_length=8, precision=precision)
        assert next(harness.model.parameters()).dtype == (torch.bfloat16 if precision == "bf16-true" else torch.float32)
        scores[precision] = harness._loglikelihood_tokens([(None, tokens[:4], tokens[4:])])[0][0]
    assert next(model.parameters()).dtype == torch.float32
    assert scores["32-true"] == pytest.approx(direct_log_likelihood(model, *split_text(tokens, 4))[0], abs=1e-4)
    assert scores["bf16-true"] != scores["32-true"] and scores["bf16-mixed"] != scores["32-true"]
    assert scores["bf16-true"] == pytest.approx(scores["32-true"], rel=0.05)  # rounding, not another model


def split_text(tokens: list[int], context: int) -> tuple[str, str]:
    return encoding().decode(tokens[:context]), encoding().decode(tokens[context:])


def test_rolling_log_likelihood_scores_every_token_after_the_end_of_text_token():
    from lm_eval.api.instance import Instance

    model = tiny_model()
    text = "So long as men can breathe or eyes can see, so long lives this, and this gives life to thee."
    request = Instance("loglikelihood_rolling", doc={}, arguments=(text,), idx=0)
    (rolling,) = SuiteLanguageModel(model, "gpt2", context_length=6).loglikelihood_rolling([request])
    tokens = torch.tensor([END_OF_TEXT] + encoding().encode_ordinary(text))
    with torch.no_grad():
        log_probs = torch.log_softmax(model(tokens[None, :-1])[0].double(), -1)  # (S, V)
    assert rolling == pytest.approx(float(log_probs[torch.arange(len(tokens) - 1), tokens[1:]].sum()), abs=1e-4)


def test_attention_beyond_its_positions_is_an_error_naming_the_length():
    model = tiny_model("gpt3", max_context_length=8)
    harness = SuiteLanguageModel(model, "gpt2", context_length=8)
    tokens = list(range(1, 13))
    with pytest.raises(ValueError, match="sequence length 9 exceeds gpt3.max_context_length=8"):
        harness._loglikelihood_tokens([(None, tokens[:6], tokens[6:])])


def test_generation_is_greedy_and_stops_at_the_stop_string():
    from lm_eval.api.instance import Instance

    from models.generation import greedy_generate

    model = tiny_model()
    context = "Shall I compare thee"
    prompt = torch.tensor([encoding().encode_ordinary(context)])
    reference = encoding().decode(greedy_generate(model, prompt, 6)[0, prompt.shape[1] :].tolist())
    harness = SuiteLanguageModel(model, "gpt2", context_length=4)
    request = Instance("generate_until", doc={}, arguments=(context, {"until": [], "max_gen_toks": 6}), idx=0)
    assert harness.generate_until([request]) == [reference]
    stop = reference[len(reference) // 2 :]
    request = Instance("generate_until", doc={}, arguments=(context, {"until": [stop], "max_gen_toks": 6}), idx=0)
    assert harness.generate_until([request]) == [reference[: reference.index(stop)]]


def test_table_columns_keep_each_metrics_best_precision_and_average_the_six_accuracies():
    by_precision = {
        "32-true": {
            "lambada_openai/perplexity": 7.5,
            "lambada_openai/acc": 0.57,
            "hellaswag/acc_norm": 0.60,
            "hellaswag/acc": 0.99,
            "piqa/acc": 0.74,
            "arc_easy/acc": 0.64,
            "arc_challenge/acc_norm": 0.32,
            "winogrande/acc": 0.60,
        },
        "bf16-mixed": {
            "lambada_openai/perplexity": 6.86,
            "lambada_openai/acc": 0.5783,
            "hellaswag/acc_norm": 0.6091,
            "hellaswag/acc": 0.1,
            "piqa/acc": 0.7459,
            "arc_easy/acc": 0.6431,
            "arc_challenge/acc_norm": 0.3259,
            "winogrande/acc": 0.6062,
        },
    }
    higher = {"lambada_openai": {"perplexity": False, "acc": True}}
    columns = table_columns(best_metrics(by_precision, higher))
    # xLSTM[1:0] 1.3B's row of the table: 6.86, 57.83, 60.91, 74.59, 64.31, 32.59, 60.62, average 58.48
    assert columns == pytest.approx(
        {
            "lambada_ppl": 6.86,
            "lambada_acc": 57.83,
            "hellaswag_acc": 60.91,
            "piqa_acc": 74.59,
            "arc_easy_acc": 64.31,
            "arc_challenge_acc": 32.59,
            "winogrande_acc": 60.62,
            "average_acc": 58.475,
        }
    )
    paper = pd.read_csv("results/paper/tables/lmeval.csv")
    accuracies = ["lambada_acc", "hellaswag_acc", "piqa_acc", "arc_easy_acc", "arc_challenge_acc", "winogrande_acc"]
    assert (paper[accuracies].mean(axis=1) - paper["average_acc"]).abs().max() < 0.006  # the table's Average


def test_each_training_run_is_evaluated_once_with_the_papers_tasks_and_precisions():
    training = {run.run_id for run in load_artifact(TRAINING).runs("paper")}
    runs = load_artifact("lmeval").runs("paper")
    assert sorted(run.trained_by.run_id for run in runs) == sorted(training)
    settings = runs[0].config.evaluate.settings
    assert list(settings.tasks) == ["lambada_openai", "hellaswag", "piqa", "arc_easy", "arc_challenge", "winogrande"]
    assert list(settings.precisions) == ["32-true", "bf16-true", "bf16-mixed"] and settings.limit is None
    assert runs[0].config.evaluate.kind == "lmeval"


def test_the_report_puts_the_papers_average_accuracy_beside_each_paper_cell():
    from experiments.reports.paper_numbers import with_paper_numbers

    cells = pd.DataFrame({"model": ["xlstm_1_0", "llama", "mamba"], "model.size": ["1.3b", "125m", "760m"]})
    paper = with_paper_numbers(cells, load_artifact("lmeval").paper, ["model", "model.size"])
    assert paper.tolist() == [58.48, 41.78, 53.86]  # Table lmeval's Average column


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            "{precisions: [fp16]}",
            "evaluates.settings.precisions=['fp16'] must be a list of one of ['32-true', 'bf16-true', 'bf16-mixed']",
        ),
        ("{limit: 0}", "evaluates.settings.limit=0 must be >= 1"),
        ("{tasks: []}", "evaluates.settings.tasks=[] names no task"),
        ("{tasks: [piqa, piqa]}", "evaluates.settings.tasks=['piqa', 'piqa'] names a value twice"),
        ("{task: [piqa]}", "unknown key evaluates.settings.task; did you mean evaluates.settings.tasks"),
    ],
)
def test_a_bad_setting_is_named_when_the_artifact_loads(artifact_folder, settings, message):
    assert message in load_error(artifact_folder, "lmeval", settings, "lmeval/average_acc")


def test_a_task_the_harness_does_not_know_is_named_before_any_compute(tmp_path):
    from experiments.config.evaluation_kinds import LmevalSettings
    from experiments.evaluation.lmeval_run import harness_tasks

    with pytest.raises(
        ValueError,
        match=r"\['sample_choise'\] are not tasks of the LM Evaluation Harness .*"
        r"'sample_choice'",
    ):
        harness_tasks(LmevalSettings(tasks=["sample_choise"], task_dir=str(lmeval_sample(tmp_path))))
    with pytest.raises(ValueError, match="task_dir='/no/such/folder' is not a folder"):
        harness_tasks(LmevalSettings(task_dir="/no/such/folder"))


def test_tasks_all_in_the_task_folder_need_not_the_harness_s_own_index(tmp_path):
    from experiments.config.evaluation_kinds import LmevalSettings
    from experiments.evaluation.lmeval_run import harness_tasks

    manager = harness_tasks(LmevalSettings(tasks=list(SAMPLE_TASKS), task_dir=str(lmeval_sample(tmp_path))))
    assert set(SAMPLE_TASKS) <= set(manager.all_tasks) and "hellaswag" not in manager.all_tasks


@pytest.mark.slow  # trains the four smoke runs of temp_sclaw300B, then runs the harness on the stand-in tasks
def test_smoke_scale_trains_evaluates_and_reports(tmp_path):
    from experiments.reports.report import write_report

    root, reports = tmp_path / "runs", tmp_path / "reports"
    assert run_sweep(TRAINING, "smoke", jobs=1, root=root) == 0
    assert run_sweep("lmeval", "smoke", jobs=1, root=root) == 0
    for run in load_artifact("lmeval").runs("smoke"):
        folder = root / "smoke" / "lmeval" / run.run_id
        metrics = json.loads((folder / "result.json").read_text())["metrics"]
        assert metrics["train/steps"] == 0
        assert metrics["lmeval/ppl_slimpajama_300b"] == metrics["trained/val/perplexity"]
        assert 0 <= metrics["lmeval/best/sample_choice/acc"] <= 1
        precisions = json.loads((folder / "lmeval.json").read_text())
        assert sorted(precisions) == ["32-true", "bf16-mixed"]
        assert metrics["lmeval/best/sample_cloze/perplexity"] == min(
            values["sample_cloze/perplexity"] for values in precisions.values()
        )
    outcome = write_report("lmeval", "smoke", root, reports)
    assert outcome.status == "written"
    table = pd.read_csv(reports / "smoke" / "lmeval.csv")
    assert len(table) == 4 and table["ours"].notna().all()
    assert (table["piqa_acc ours"] == table["ours"]).all()  # the stand-ins in the paper's columns of their form
    columns = ["ppl_slimpajama_300b", "lambada_ppl", "lambada_acc", "piqa_acc", "hellaswag_acc"]
    assert all(table[f"{column} ours"].notna().all() for column in columns)
    section = (reports / "smoke" / "lmeval.md").read_text().split("## The paper's columns and ours")[1]
    assert all(f" {column} ours " in section and f" {column} paper " in section for column in columns)

    # the registered model by name, from the training run's directory, scores as the evaluation run did
    from lm_eval.tasks import TaskManager

    from experiments.sweeps.training_runs import training_directory

    run = load_artifact("lmeval").runs("smoke")[0]
    trained = training_directory(run.config.evaluate, root)
    by_name = lm_eval.simple_evaluate(
        model="xlstm-suite",
        model_args=f"run={trained}",
        tasks=["sample_cloze"],
        task_manager=TaskManager(include_path=str(lmeval_sample())),
        bootstrap_iters=0,
        log_samples=False,
    )
    evaluated = json.loads((root / "smoke" / "lmeval" / run.run_id / "lmeval.json").read_text())["32-true"]
    assert by_name["results"]["sample_cloze"]["perplexity,none"] == pytest.approx(
        evaluated["sample_cloze/perplexity"], rel=1e-6
    )


# every language model, at the smallest options its checks accept
BATCHED_MODELS = {name: {} for name in known_language_models()} | {
    "xlstm_7_1": {"num_blocks": 4},
    "rwkv5": {"embedding_dim": 64},
    "rwkv6": {"embedding_dim": 64},
    "hgrn2": {"embedding_dim": 128},
}


LMEVAL_MODELS = ("llama", "mamba", "rwkv4", "xlstm_1_0", "xlstm_7_1")  # temp_sclaw300B's, which lmeval scores


@pytest.mark.parametrize(
    "name",
    [
        name if name in LMEVAL_MODELS else pytest.param(name, marks=pytest.mark.slow)  # the others: make test-slow
        for name in sorted(BATCHED_MODELS)
    ],
)
def test_requests_scored_together_score_as_each_alone_in_one_forward_pass(name, monkeypatch):
    """Right-padded in one batch, and in batches of a few (TOKENS_PER_BATCH small), each request's log-likelihood
    and greedy flag are those of its own forward pass: the padding after a request changes nothing before it."""
    options = {"embedding_dim": 16, "num_blocks": 2} | BATCHED_MODELS[name]
    torch.manual_seed(0)
    model = build_language_model_from(name, MODEL_VOCABULARY, **options).eval()
    text = encoding()
    pairs = [
        ("Shall I compare thee", " to a summer's day?"),
        ("Thou art more lovely and more temperate: rough winds do shake", " the darling buds"),
        ("And summer's", " lease"),
        ("Sometime too hot the eye of heaven shines, and often is his gold complexion", " dimmed"),
    ]
    requests = [(None, text.encode_ordinary(context), text.encode_ordinary(more)) for context, more in pairs]
    expected = [direct_log_likelihood(model, context, more) for context, more in pairs]
    harness = SuiteLanguageModel(model, "gpt2", context_length=32)
    for tokens_per_batch in (4096, 40):  # all four in one pass; two or three passes of unequal batches
        monkeypatch.setattr(harness_model, "TOKENS_PER_BATCH", tokens_per_batch)
        scored = harness._loglikelihood_tokens(requests)
        assert [likelihood for likelihood, _ in scored] == pytest.approx([each[0] for each in expected], abs=1e-4)
        assert [greedy for _, greedy in scored] == [each[1] for each in expected]
