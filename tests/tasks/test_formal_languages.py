"""Formal-language tasks (Appendix B.1.1): Listing 1, independent brute-force solvers, vocabularies, lengths,
seeding, speed and the DataModule.

The solvers below are written from the task descriptions only; they never call the tasks' code.
"""

import math
import time
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import torch

from tasks.formal_languages import FORMAL_LANGUAGE_TASKS, IGNORE_INDEX, get_task
from tasks.formal_languages.data import FormalLanguageDataModule, TrainingBatches, make_examples
from tasks.spec import TaskSpec

# Listing 1 of the paper, red (answer) tokens in <angle brackets>.
LISTING_1 = {
    "bucket_sort": "1 4 8 6 1 <1> <1> <4> <6> <8>",
    "cycle_nav": "STAY +1 -1 +1 STAY +1 +1 +1 -1 <P3>",
    "even_pairs": "a b b a a b a b a <a>",
    "majority": "1 7 6 4 3 8 1 7 2 <1>",
    "majority_count": "1 7 6 4 4 8 1 7 2 <2>",
    "missing_duplicate": "4 8 6 2 5 4 8 6 2 [MIS] <5>",
    "mod_arithmetic": "0 - 4 + 0 - 2 = <4> [PAD]",
    "mod_arithmetic_brackets": "( ( ( 2 ) * - 2 ) - ( - 4 - 2 ) ) = <2>",
    "odds_first": "2 7 3 2 6 9 [ACT] <2> <3> <6> <7> <2> <9>",
    "parity": "a b b a a b a <b>",
    "repetition": "2 4 8 6 2 [ACT] <2> <4> <8> <6> <2>",
    "reverse_string": "2 4 8 6 2 [ACT] <2> <6> <8> <4> <2>",
    "stack_manipulation": "ST1 ST1 ST3 POP POP PS3 PS3 [ACT] <ST1> <ST3> <ST3>",
    "set": "8 6 6 3 5 4 5 3 [ACT] <8> <6> <3> <5> <4>",
    "solve_equation": "( ( ( 2 + 0 ) + - x ) - ( 1 ) ) = 2 [ACT] <2>",
}
# The listed solve-equation answer 2 does not solve its equation: ((2+0)+-x)-(1) = 1-x = 2 (mod 5) gives x = 4.
LISTING_1_ERRATA = {"solve_equation": ["4"]}

# Paper, Appendix B.1.1: |V| and s_rand.
PAPER_VOCAB_AND_RANDOM = {
    "bucket_sort": (11, Fraction(1, 10)),
    "cycle_nav": (9, Fraction(1, 5)),
    "even_pairs": (3, Fraction(1, 2)),
    "majority": (64, Fraction(1, 63)),
    "majority_count": (64, Fraction(1, 63)),
    "missing_duplicate": (11, Fraction(1, 9)),
    "mod_arithmetic": (10, Fraction(1, 5)),
    "mod_arithmetic_brackets": (12, Fraction(1, 5)),
    "odds_first": (12, Fraction(1, 10)),
    "parity": (3, Fraction(1, 2)),
    "repetition": (12, Fraction(1, 10)),
    "reverse_string": (12, Fraction(1, 10)),
    "stack_manipulation": (11, Fraction(1, 4)),
    "set": (128, Fraction(1, 126)),
    "solve_equation": (14, Fraction(1, 5)),
}
GROUP_OF = {
    "regular": ["cycle_nav", "even_pairs", "mod_arithmetic", "parity"],
    "deterministic_context_free": ["mod_arithmetic_brackets", "reverse_string", "solve_equation", "stack_manipulation"],
    "context_sensitive": ["bucket_sort", "missing_duplicate", "odds_first", "repetition", "set"],
    "counting": ["majority", "majority_count"],
}
# How the total length relates to the requested length L: "exact", or only for odd / even L (else L - 1).
LENGTH_RULE = {
    "parity": "exact",
    "even_pairs": "exact",
    "cycle_nav": "exact",
    "majority": "exact",
    "majority_count": "exact",
    "mod_arithmetic_brackets": "exact",
    "solve_equation": "exact",
    "set": "exact",
    "mod_arithmetic": "odd",
    "missing_duplicate": "odd",
    "odds_first": "odd",
    "repetition": "odd",
    "reverse_string": "odd",
    "stack_manipulation": "odd",
    "bucket_sort": "even",
}
ALL_TASKS = sorted(FORMAL_LANGUAGE_TASKS)


def split_listing(example: str) -> tuple[list[str], list[str]]:
    """(prompt, red tokens) of a Listing 1 sequence; trailing [PAD] dropped."""
    tokens = [token for token in example.split() if token != "[PAD]"]
    red = [token.strip("<>") for token in tokens if token.startswith("<")]
    return tokens[: len(tokens) - len(red)], red


# ---------------------------------------------------------------------------------------------------------
# Independent brute-force solvers: each checks the prompt is a valid instance and returns the answer tokens.

DIGITS = [str(value) for value in range(5)]


def symbols(count):
    return {str(number) for number in range(1, count + 1)}


def split_act(prompt):
    assert prompt[-1] == "[ACT]" and "[ACT]" not in prompt[:-1], prompt
    return prompt[:-1]


def modular_eval(expression_tokens, x=None):
    text = "".join(expression_tokens)
    if x is not None:
        text = text.replace("x", str(x))
    return eval(text) % 5  # noqa: S307 (our own generated digits and operators)


def solve_parity(prompt):
    assert prompt and set(prompt) <= {"a", "b"}
    odd = False
    for token in prompt:
        odd ^= token == "b"
    return ["b" if odd else "a"]


def solve_even_pairs(prompt):
    assert prompt and set(prompt) <= {"a", "b"}
    text = "".join(prompt)
    return ["a" if (text.count("ab") + text.count("ba")) % 2 == 0 else "b"]


def solve_cycle_nav(prompt):
    position = 0
    for move in prompt:
        position = (position + {"STAY": 0, "+1": 1, "-1": -1}[move]) % 5
    return [f"P{position}"]


def solve_mod_arithmetic(prompt):
    expression = prompt[:-1]
    assert prompt[-1] == "=" and len(expression) % 2 == 1
    assert all(token in DIGITS for token in expression[0::2]) and all(op in "+-*" for op in expression[1::2])
    return [str(modular_eval(expression))]


def solve_mod_arithmetic_brackets(prompt):
    expression = prompt[:-1]
    assert prompt[-1] == "=" and set(expression) <= set(DIGITS) | set("+-*()")
    return [str(modular_eval(expression))]


def solve_solve_equation(prompt):
    expression, equals, value, act = prompt[:-3], prompt[-3], prompt[-2], prompt[-1]
    assert (equals, act) == ("=", "[ACT]") and value in DIGITS and expression.count("x") == 1
    assert set(expression) <= set(DIGITS) | set("+-*()x")
    solutions = [x for x in range(5) if modular_eval(expression, x) == int(value)]
    assert len(solutions) == 1, (prompt, solutions)
    return [str(solutions[0])]


def solve_stack_manipulation(prompt):
    body = split_act(prompt)
    initial_size = 0
    while initial_size < len(body) and body[initial_size] in {"ST1", "ST2", "ST3", "ST4"}:
        initial_size += 1
    assert initial_size >= 1
    stack = list(body[:initial_size])  # bottom to top
    for operation in body[initial_size:]:
        if operation == "POP":
            assert stack, "the generator never pops an empty stack"
            stack.pop()
        else:
            assert operation in {"PS1", "PS2", "PS3", "PS4"}
            stack.append(operation.replace("PS", "ST"))
    assert stack, "the generator never ends with an empty stack"
    return stack


def solve_bucket_sort(prompt):
    assert prompt and set(prompt) <= symbols(10)
    return [str(number) for number in sorted(int(token) for token in prompt)]


def solve_missing_duplicate(prompt):
    half = len(prompt) // 2
    original, copy = prompt[:half], prompt[half:]
    assert len(prompt) == 2 * half and set(original) <= symbols(9) and copy.count("[MIS]") == 1
    missing = [a for a, b in zip(original, copy) if b == "[MIS]"]
    assert all(a == b for a, b in zip(original, copy) if b != "[MIS]")
    return missing


def solve_odds_first(prompt):
    body = split_act(prompt)
    assert set(body) <= symbols(10)
    return [body[i] for i in range(0, len(body), 2)] + [body[i] for i in range(1, len(body), 2)]


def solve_repetition(prompt):
    body = split_act(prompt)
    assert set(body) <= symbols(10)
    return body


def solve_reverse_string(prompt):
    body = split_act(prompt)
    assert set(body) <= symbols(10)
    return [body[len(body) - 1 - i] for i in range(len(body))]


def solve_set(prompt):
    body = split_act(prompt)
    assert set(body) <= symbols(126)
    seen, ordered = set(), []
    for token in body:
        if token not in seen:
            seen.add(token)
            ordered.append(token)
    return ordered


def solve_majority(prompt):
    assert set(prompt) <= symbols(63)
    return [sorted(Counter(prompt).items(), key=lambda item: (-item[1], int(item[0])))[0][0]]


def solve_majority_count(prompt):
    assert set(prompt) <= symbols(63)
    return [str(min(Counter(prompt).most_common(1)[0][1], 63))]


BRUTE_FORCE = {name: globals()[f"solve_{name}"] for name in PAPER_VOCAB_AND_RANDOM}


def split_sample(task, sequence, answer_mask):
    """(prompt tokens, answer tokens) of a generated row; asserts the layout prompt, answer, padding."""
    tokens = task.decode(sequence)
    answer_positions = np.flatnonzero(answer_mask)
    assert answer_positions.size > 0
    start, end = answer_positions[0], answer_positions[-1] + 1
    assert (answer_positions == np.arange(start, end)).all(), "answer tokens are contiguous"
    assert "[PAD]" not in tokens[:end], "no padding inside prompt or answer"
    assert (sequence[end:] == 0).all(), "only padding after the answer"
    return tokens[:start], tokens[start:end]


def mixed_lengths(task, rng):
    """A few hundred lengths: the shortest, 40, 41, 255, 256 and random ones."""
    low = task.min_length
    return np.concatenate(
        [
            np.full(4, low),
            np.full(4, low + 1),
            np.full(20, 40),
            np.full(10, 41),
            np.full(10, 255),
            np.full(10, 256),
            rng.integers(low, 257, size=150),
        ]
    )


# ---------------------------------------------------------------------------------------------------------
# 1. Listing 1


@pytest.mark.parametrize("name", ALL_TASKS)
def test_reference_answer_reproduces_listing_1(name):
    prompt, red = split_listing(LISTING_1[name])
    expected = LISTING_1_ERRATA.get(name, red)
    assert get_task(name).answer(prompt) == expected
    assert BRUTE_FORCE[name](prompt) == expected


def test_listing_1_solve_equation_answer_is_an_erratum():
    prompt, red = split_listing(LISTING_1["solve_equation"])
    expression, value = prompt[:-3], int(prompt[-2])
    assert modular_eval(expression, x=int(red[0])) != value  # the listed x = 2 gives 4, not 2
    assert [x for x in range(5) if modular_eval(expression, x) == value] == [4]


# ---------------------------------------------------------------------------------------------------------
# 2. Generated samples: valid instances whose answers agree with the brute-force solvers


@pytest.mark.parametrize("name", ALL_TASKS)
def test_generated_answers_match_brute_force(name):
    task = get_task(name)
    rng = np.random.default_rng(1234)
    lengths = mixed_lengths(task, rng)
    sequences, answer_mask = task.sample(lengths, rng)
    for sequence, mask in zip(sequences, answer_mask):
        prompt, answer = split_sample(task, sequence, mask)
        assert answer == BRUTE_FORCE[name](prompt), " ".join(prompt)
        assert answer == task.answer(prompt)


# ---------------------------------------------------------------------------------------------------------
# 3. Vocabularies, s_rand, groups, ids, lengths, masks


@pytest.mark.parametrize("name", ALL_TASKS)
def test_vocabulary_and_random_accuracy_match_the_paper(name):
    task = get_task(name)
    vocab_size, random_accuracy = PAPER_VOCAB_AND_RANDOM[name]
    assert task.tokens[0] == "[PAD]" and len(set(task.tokens)) == len(task.tokens) == vocab_size
    assert task.random_accuracy == pytest.approx(float(random_accuracy), rel=1e-12)
    assert task.spec == TaskSpec(
        name=name,
        input_kind="tokens",
        input_size=vocab_size,
        num_classes=vocab_size,
        random_accuracy=task.random_accuracy,
        group=task.group,
    )
    assert name in GROUP_OF[task.group]


def test_registry_has_the_15_tasks_and_rejects_unknown_names():
    assert sorted(FORMAL_LANGUAGE_TASKS) == sorted(PAPER_VOCAB_AND_RANDOM)
    assert sorted(sum(GROUP_OF.values(), [])) == ALL_TASKS
    with pytest.raises(ValueError, match=r"unknown task 'parity_check'; valid choices: \[.*'parity'"):
        get_task("parity_check")


@pytest.mark.parametrize("name", ALL_TASKS)
def test_ids_lengths_and_answer_mask(name):
    task = get_task(name)
    rng = np.random.default_rng(7)
    lengths = mixed_lengths(task, rng)
    sequences, answer_mask = task.sample(lengths, rng)
    assert sequences.dtype == np.int64 and answer_mask.dtype == bool
    assert sequences.shape == answer_mask.shape == (len(lengths), lengths.max())
    assert sequences.min() >= 0 and sequences.max() < len(task.tokens)
    total = (sequences != 0).sum(axis=1)  # [PAD] only pads the end (checked in split_sample)
    rule = LENGTH_RULE[name]
    expected = lengths if rule == "exact" else lengths - ((lengths % 2 == 0) == (rule == "odd"))
    np.testing.assert_array_equal(total, expected)
    assert (sequences[answer_mask] != 0).all()
    assert answer_mask.sum(axis=1).min() >= 1


@pytest.mark.parametrize("name", ALL_TASKS)
def test_make_examples_pads_inputs_at_the_answer_and_ignores_other_targets(name):
    task = get_task(name)
    lengths = np.array([task.min_length, 17, 40])
    sequences, answer_mask = task.sample(lengths, np.random.default_rng(3))
    inputs, targets = make_examples(task, lengths, np.random.default_rng(3))
    assert inputs.dtype == targets.dtype == torch.int64 and inputs.shape == targets.shape == (3, 40)
    mask = torch.from_numpy(answer_mask)
    assert (inputs[mask] == 0).all() and (inputs[~mask] == torch.from_numpy(sequences)[~mask]).all()
    assert (targets[~mask] == IGNORE_INDEX).all() and (targets[mask] == torch.from_numpy(sequences)[mask]).all()


@pytest.mark.parametrize("name", ["parity", "set", "solve_equation"])
def test_too_short_lengths_are_rejected(name):
    task = get_task(name)
    with pytest.raises(ValueError, match=f"length {task.min_length - 1} is too short.*>= {task.min_length}"):
        task.sample(np.array([40, task.min_length - 1]), np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------------------
# 4. Seeding


def differ(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape != b.shape or not torch.equal(a, b)


def test_training_batches_are_a_function_of_seed_and_index():
    task = get_task("mod_arithmetic_brackets")
    first, again = TrainingBatches(task, 32, 40, data_seed=5), TrainingBatches(task, 32, 40, data_seed=5)
    for index in (0, 3):
        for a, b in zip(first.batch(index), again.batch(index)):
            assert torch.equal(a, b)
    assert differ(first.batch(0)[0], first.batch(1)[0])
    assert differ(first.batch(0)[0], TrainingBatches(task, 32, 40, data_seed=6).batch(0)[0])
    streamed = iter(first)
    for index in range(3):
        assert torch.equal(next(streamed)[0], first.batch(index)[0])


def test_validation_and_test_sets_are_fixed_and_differ():
    def evaluation_inputs(module, which):
        return [inputs for inputs, _ in getattr(module, f"{which}_dataloader")()]

    make = lambda: FormalLanguageDataModule("cycle_nav", batch_size=16, val_samples=64, test_samples=64)  # noqa: E731
    module, again = make(), make()
    validation, test = evaluation_inputs(module, "val"), evaluation_inputs(module, "test")
    assert all(torch.equal(a, b) for a, b in zip(validation, evaluation_inputs(again, "val")))
    assert all(torch.equal(a, b) for a, b in zip(test, evaluation_inputs(again, "test")))
    assert any(differ(a, b) for a, b in zip(validation, test))


# ---------------------------------------------------------------------------------------------------------
# 5. Speed and answer distributions

UNIFORM_ANSWERS = {
    "parity": 2,
    "even_pairs": 2,
    "cycle_nav": 5,
    "mod_arithmetic": 5,
    "solve_equation": 5,
    "missing_duplicate": 9,
}
MIN_DISTINCT_ANSWERS = {
    "mod_arithmetic_brackets": 5,
    "majority": 30,
    "majority_count": 5,
    "bucket_sort": 10,
    "odds_first": 10,
    "repetition": 10,
    "reverse_string": 10,
    "stack_manipulation": 4,
    "set": 120,
}


@pytest.mark.parametrize("name", ALL_TASKS)
def test_generation_is_fast_and_answers_are_not_constant(name):
    task = get_task(name)
    rng = np.random.default_rng(0)
    lengths = rng.integers(task.min_length, 257, size=4096)
    start = time.perf_counter()
    sequences, answer_mask = task.sample(lengths, rng)
    elapsed = time.perf_counter() - start
    print(f"{name}: 4096 samples, lengths {task.min_length}..256, {1000 * elapsed:.0f} ms")
    counts = Counter(sequences[answer_mask].tolist())  # over all answer tokens
    if name in UNIFORM_ANSWERS:
        classes = UNIFORM_ANSWERS[name]
        assert len(counts) == classes
        assert all(abs(count / len(lengths) - 1 / classes) < 0.25 / classes for count in counts.values()), counts
    else:
        assert len(counts) >= MIN_DISTINCT_ANSWERS[name], counts
        assert max(counts.values()) < 0.5 * sum(counts.values()), counts


# ---------------------------------------------------------------------------------------------------------
# 6. DataModule


def test_datamodule_batches():
    module = FormalLanguageDataModule(
        "stack_manipulation", batch_size=8, val_samples=20, test_samples=12, eval_batch_size=6
    )
    assert module.spec == get_task("stack_manipulation").spec
    inputs, targets = next(iter(module.train_dataloader()))
    assert inputs.shape == targets.shape and inputs.shape[0] == 8 and inputs.shape[1] <= 40
    scored = targets != IGNORE_INDEX
    assert scored.any(dim=1).all() and (inputs[scored] == 0).all() and (targets[scored] > 0).all()

    validation = list(module.val_dataloader())
    assert [batch[0].shape[0] for batch in validation] == [6, 6, 6, 2]
    widths = [batch[0].shape[1] for batch in validation]
    assert widths == sorted(widths) and 40 <= widths[0] and widths[-1] <= 256
    for inputs, targets in validation:
        assert (targets != IGNORE_INDEX).any(dim=1).all()
        assert ((inputs != 0) | (targets != IGNORE_INDEX)).any(dim=0)[-1], "each batch is cut to its longest"
    assert sum(batch[0].shape[0] for batch in module.test_dataloader()) == 12
    assert math.ceil(20 / 6) == len(validation)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(task_name="parity_check"), r"unknown task 'parity_check'; valid choices"),
        (dict(train_max_length=2), r"train_max_length=2 .* >= the shortest solve_equation sequence \(5\)"),
        (dict(eval_min_length=4), r"eval_min_length=4 .* >= the shortest solve_equation sequence \(5\)"),
        (dict(eval_min_length=100, eval_max_length=50), r"eval_max_length=50 .* >= eval_min_length \(100\)"),
        (dict(batch_size=0), r"batch_size=0 .* >= 1"),
        (dict(val_samples=0), r"val_samples=0 .* >= 1"),
    ],
)
def test_datamodule_rejects_bad_arguments(arguments, message):
    arguments = {"task_name": "solve_equation", "batch_size": 4, **arguments}
    with pytest.raises(ValueError, match=message):
        FormalLanguageDataModule(**arguments)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_TASKS)
def test_many_generated_answers_match_brute_force(name):
    task = get_task(name)
    rng = np.random.default_rng(99)
    lengths = rng.integers(task.min_length, 257, size=3000)
    sequences, answer_mask = task.sample(lengths, rng)
    for sequence, mask in zip(sequences, answer_mask):
        prompt, answer = split_sample(task, sequence, mask)
        assert answer == BRUTE_FORCE[name](prompt), " ".join(prompt)
