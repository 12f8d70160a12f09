"""Regular tasks: parity, even pairs, cycle navigation, modular arithmetic without brackets.

Token ids of these four follow the official xLSTM repository's generators (`experiments/data/formal_language`):
parity / even pairs [PAD] a b; cycle navigation [PAD] STAY +1 -1 P0..P4; modular arithmetic
[PAD] + - * = 0..4. The answer is one token right after the prompt (no [ACT]).
"""

from __future__ import annotations

import numpy as np

from tasks.formal_languages.base import (
    PAD,
    FormalLanguageTask,
    assemble,
    constant_piece,
    gather_rows,
    length_mask,
    single_token_piece,
)

MODULUS = 5  # the numbers of every arithmetic task are 0..4 (|V| minus the special tokens, Appendix B.1.1)
DIGITS = tuple(str(value) for value in range(MODULUS))
OPERATORS = ("+", "-", "*")  # operator codes 0, 1, 2 in the array code
PLUS, MINUS, TIMES = range(3)
ARITHMETIC_TOKENS = (PAD, *OPERATORS, "=", *DIGITS)  # shared prefix of all arithmetic vocabularies


def evaluate_modular(tokens: list[str], modulus: int = MODULUS, x: int | None = None) -> int:
    """Reference evaluator: value mod `modulus` of an expression of numbers, `x`, + - *, brackets and unary
    minus, with the usual precedence (unary minus, then *, then + and - from left to right)."""
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise ValueError(f"expression ends early: {' '.join(tokens)}")
        position += 1
        return tokens[position - 1]

    def parse_sum() -> int:
        value = parse_product()
        while peek() in ("+", "-"):
            operator = take()
            operand = parse_product()
            value = value + operand if operator == "+" else value - operand
        return value

    def parse_product() -> int:
        value = parse_factor()
        while peek() == "*":
            take()
            value = value * parse_factor()
        return value

    def parse_factor() -> int:
        token = take()
        if token == "-":
            return -parse_factor()
        if token == "(":
            value = parse_sum()
            if take() != ")":
                raise ValueError(f"unbalanced brackets: {' '.join(tokens)}")
            return value
        if token == "x" and x is not None:
            return x
        if token in DIGITS:
            return int(token)
        raise ValueError(f"unexpected token {token!r} in {' '.join(tokens)}")

    value = parse_sum()
    if position != len(tokens):
        raise ValueError(f"trailing tokens in {' '.join(tokens)}")
    return value % modulus


def _discrete_log_tables(modulus: int) -> tuple[np.ndarray, np.ndarray]:
    """(log, power) of a primitive root g of the prime `modulus`: power[log[v]] = v for v = 1..modulus-1."""
    for root in range(2, modulus):
        powers = [pow(root, exponent, modulus) for exponent in range(modulus - 1)]
        if sorted(powers) == list(range(1, modulus)):
            log = np.zeros(modulus, dtype=np.int64)
            log[powers] = np.arange(modulus - 1)
            return log, np.array(powers, dtype=np.int64)
    raise ValueError(f"modulus {modulus} is not a prime > 2")


def sum_of_products(
    numbers: np.ndarray, operators: np.ndarray, counts: np.ndarray, modulus: int = MODULUS
) -> np.ndarray:
    """Values mod `modulus` of `n0 o0 n1 o1 ... n(c-1)` (c = counts[row]) with * before + and -.

    numbers (N, K) in 0..modulus-1, operators (N, K-1) codes PLUS / MINUS / TIMES. A product of residues
    is computed as 0 if a factor is 0, else g ** (sum of discrete logs), so no loop over positions is needed.
    """
    rows, width = numbers.shape
    log, power = _discrete_log_tables(modulus)
    valid = length_mask(counts, width)  # (N, K)
    first = np.ones((rows, 1), dtype=bool)
    opens_term = np.concatenate([first, operators != TIMES], axis=1)  # (N, K) the number starts a term
    signs = np.concatenate([first.astype(np.int64), np.where(operators == MINUS, -1, 1)], axis=1)  # (N, K)
    term = np.cumsum(opens_term, axis=1) - 1  # (N, K) index of the number's term within its row
    slot = (np.arange(rows)[:, None] * width + term)[valid]  # flat (row, term) of each valid number
    has_zero = np.bincount(slot, weights=(numbers == 0)[valid], minlength=rows * width) > 0
    log_sum = np.bincount(slot, weights=log[numbers][valid], minlength=rows * width).astype(np.int64)
    products = np.where(has_zero, 0, power[log_sum % (modulus - 1)]).reshape(rows, width)  # (N, K) per term
    term_values = signs * gather_rows(products, term)  # (N, K) the value of each number's term, signed
    return (term_values * (opens_term & valid)).sum(axis=1) % modulus


class Parity(FormalLanguageTask):
    """a/b string; answer a if the number of b's is even, else b."""

    name = "parity"
    group = "regular"
    tokens = (PAD, "a", "b")
    random_accuracy = 1 / 2
    min_length = 2

    def answer(self, prompt: list[str]) -> list[str]:
        return ["a" if prompt.count("b") % 2 == 0 else "b"]

    def _sample(self, lengths, rng):
        prompt_lengths = lengths - 1
        letters = rng.integers(1, 3, size=(len(lengths), prompt_lengths.max()))  # (N, P) a=1, b=2
        b_count = ((letters == 2) & length_mask(prompt_lengths, letters.shape[1])).sum(axis=1)  # (N,)
        answers = np.where(b_count % 2 == 0, 1, 2)  # (N,)
        return assemble(lengths.max(), [(letters, prompt_lengths), single_token_piece(answers)], answer_piece=1)


class EvenPairs(FormalLanguageTask):
    """a/b string; answer a if the number of `ab` and `ba` pairs is even (first token == last token), else b."""

    name = "even_pairs"
    group = "regular"
    tokens = (PAD, "a", "b")
    random_accuracy = 1 / 2
    min_length = 2

    def answer(self, prompt: list[str]) -> list[str]:
        changes = sum(left != right for left, right in zip(prompt, prompt[1:]))
        return ["a" if changes % 2 == 0 else "b"]

    def _sample(self, lengths, rng):
        prompt_lengths = lengths - 1
        letters = rng.integers(1, 3, size=(len(lengths), prompt_lengths.max()))  # (N, P)
        last = gather_rows(letters, prompt_lengths[:, None] - 1)[:, 0]  # (N,)
        answers = np.where(letters[:, 0] == last, 1, 2)  # (N,)
        return assemble(lengths.max(), [(letters, prompt_lengths), single_token_piece(answers)], answer_piece=1)


class CycleNavigation(FormalLanguageTask):
    """Moves STAY/+1/-1 from position 0 on a cycle of 5; answer the end position P0..P4."""

    name = "cycle_nav"
    group = "regular"
    tokens = (PAD, "STAY", "+1", "-1", *(f"P{position}" for position in range(5)))
    random_accuracy = 1 / (len(tokens) - 4)
    min_length = 2

    cycle_length = 5
    _steps = np.array([0, 0, 1, -1])  # step of each move id (index 0: [PAD])

    def answer(self, prompt: list[str]) -> list[str]:
        position = sum({"STAY": 0, "+1": 1, "-1": -1}[move] for move in prompt) % self.cycle_length
        return [f"P{position}"]

    def _sample(self, lengths, rng):
        prompt_lengths = lengths - 1
        moves = rng.integers(1, 4, size=(len(lengths), prompt_lengths.max()))  # (N, P)
        steps = self._steps[moves] * length_mask(prompt_lengths, moves.shape[1])  # (N, P)
        answers = self.token_ids["P0"] + steps.sum(axis=1) % self.cycle_length  # (N,)
        return assemble(lengths.max(), [(moves, prompt_lengths), single_token_piece(answers)], answer_piece=1)


class ModularArithmetic(FormalLanguageTask):
    """`n o n o ... n =` with numbers 0..4 and operators + - * (usual precedence); answer the value mod 5.

    A sequence of c numbers has 2c + 1 tokens, so an even requested length ends with one [PAD]
    (Listing 1: "0 - 4 + 0 - 2 = 4 [PAD]").
    """

    name = "mod_arithmetic"
    group = "regular"
    tokens = ARITHMETIC_TOKENS
    random_accuracy = 1 / (len(tokens) - 5)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        if prompt[-1] != "=":
            raise ValueError(f"not an expression followed by '=': {prompt}")
        return [str(evaluate_modular(prompt[:-1]))]

    def _sample(self, lengths, rng):
        rows = len(lengths)
        number_counts = (lengths - 1) // 2  # (N,) numbers per expression
        width = number_counts.max()
        numbers = rng.integers(0, MODULUS, size=(rows, width))  # (N, K)
        operators = rng.integers(0, len(OPERATORS), size=(rows, width - 1))  # (N, K-1)
        values = sum_of_products(numbers, operators, number_counts)  # (N,)

        digit_ids, operator_ids = self.encode(list(DIGITS)), self.encode(list(OPERATORS))
        expression = np.empty((rows, 2 * width - 1), dtype=np.int64)  # (N, 2K-1)
        expression[:, 0::2] = digit_ids[numbers]
        expression[:, 1::2] = operator_ids[operators]
        pieces = [
            (expression, 2 * number_counts - 1),
            constant_piece(self.token_ids["="], rows),
            single_token_piece(digit_ids[values]),
        ]
        return assemble(lengths.max(), pieces, answer_piece=2)
