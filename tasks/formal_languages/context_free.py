"""Deterministic context-free tasks: modular arithmetic with brackets, solve equation, reverse string, stack
manipulation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.formal_languages.base import (
    ACT,
    PAD,
    FormalLanguageTask,
    SymbolTransduction,
    assemble,
    concatenate,
    constant_piece,
    gather_rows,
    length_mask,
    shuffled_positions,
    single_token_piece,
)
from tasks.formal_languages.regular import ARITHMETIC_TOKENS, DIGITS, MINUS, MODULUS, OPERATORS, PLUS, evaluate_modular


@dataclass
class ExpressionTreeLevel:
    """The nodes at one depth of a batch of expression trees, one array entry per node (M,)."""

    row: np.ndarray  # the sample the node belongs to
    leaf: np.ndarray  # bool: a terminal d, - d, ( d ) or ( - d )
    digit: np.ndarray  # the terminal's digit (leaves)
    negated: np.ndarray  # bool: the terminal has a unary minus (leaves)
    digit_position: np.ndarray  # position of the terminal's digit in its sequence (leaves)
    operator: np.ndarray  # PLUS / MINUS / TIMES (inner nodes)
    left: np.ndarray  # index of the left child in the next level (inner nodes)
    right: np.ndarray  # index of the right child in the next level (inner nodes)


def random_bracket_expressions(
    expression_lengths: np.ndarray, rng: np.random.Generator, token_ids: dict[str, int]
) -> tuple[np.ndarray, list[ExpressionTreeLevel]]:
    """Random bracketed expressions of exactly expression_lengths[n] tokens (Deletang et al.'s grammar).

    length 1: d; 2: - d; 3: ( d ); 4: ( - d ); >= 5: ( left op right ), the left length uniform in
    1..length-4, op uniform in + - *, digits uniform in 0..4. Built breadth first, one loop step per tree
    depth. Returns token ids (N, max length), zero-padded, and the trees level by level, root level first.
    """
    rows = len(expression_lengths)
    digit_ids = np.array([token_ids[digit] for digit in DIGITS])
    operator_ids = np.array([token_ids[operator] for operator in OPERATORS])
    tokens = np.zeros((rows, expression_lengths.max()), dtype=np.int64)  # (N, E)
    row, offset, length = np.arange(rows), np.zeros(rows, dtype=np.int64), expression_lengths.astype(np.int64)
    levels = []
    while row.size:
        count = row.size
        leaf = length <= 4
        inner = ~leaf
        bracketed = length >= 3
        negated = leaf & (length % 2 == 0)
        digit = rng.integers(0, MODULUS, size=count)
        digit_position = offset + bracketed + negated
        left_length = rng.integers(1, np.maximum(length - 3, 2))  # 1..length-4 (used by inner nodes)
        operator = rng.integers(0, len(OPERATORS), size=count)

        tokens[row[bracketed], offset[bracketed]] = token_ids["("]
        tokens[row[bracketed], (offset + length - 1)[bracketed]] = token_ids[")"]
        tokens[row[negated], (digit_position - 1)[negated]] = token_ids["-"]
        tokens[row[leaf], digit_position[leaf]] = digit_ids[digit[leaf]]
        tokens[row[inner], (offset + 1 + left_length)[inner]] = operator_ids[operator[inner]]

        inner_index = np.cumsum(inner) - 1  # (M,) rank of an inner node among the inner nodes
        levels.append(
            ExpressionTreeLevel(
                row, leaf, digit, negated, digit_position, operator, left=inner_index, right=inner.sum() + inner_index
            )
        )
        row = np.concatenate([row[inner], row[inner]])
        offset = np.concatenate([offset[inner] + 1, (offset + 2 + left_length)[inner]])
        length = np.concatenate([left_length[inner], (length - 3 - left_length)[inner]])
    return tokens, levels


def evaluate_affine(levels: list[ExpressionTreeLevel], x_positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each expression's value as `coefficient * x + constant` (mod 5), per row (N,).

    The digit at x_positions[row] is the unknown x (-1: the row has no unknown, coefficient 0). As x occurs
    once, a product never multiplies two terms in x, so the value stays affine in x.
    """
    below_coefficient = below_constant = np.zeros(0, dtype=np.int64)
    for level in reversed(levels):
        is_x = level.leaf & (level.digit_position == x_positions[level.row])
        sign = np.where(level.negated, -1, 1)
        coefficient = np.where(is_x, sign, 0)  # (M,)
        constant = np.where(level.leaf & ~is_x, sign * level.digit, 0)  # (M,)

        inner = ~level.leaf
        left_coefficient, left_constant = below_coefficient[level.left[inner]], below_constant[level.left[inner]]
        right_coefficient, right_constant = below_coefficient[level.right[inner]], below_constant[level.right[inner]]
        operator = level.operator[inner]
        is_plus, is_minus = operator == PLUS, operator == MINUS
        coefficient[inner] = np.select(
            [is_plus, is_minus],
            [left_coefficient + right_coefficient, left_coefficient - right_coefficient],
            default=left_coefficient * right_constant + left_constant * right_coefficient,
        )
        constant[inner] = np.select(
            [is_plus, is_minus],
            [left_constant + right_constant, left_constant - right_constant],
            default=left_constant * right_constant,
        )
        below_coefficient, below_constant = coefficient % MODULUS, constant % MODULUS
    return below_coefficient, below_constant  # the root level holds row n at index n


class ModularArithmeticBrackets(FormalLanguageTask):
    """`expression =` with brackets, + - *, unary minus and numbers 0..4; answer the value mod 5.

    Expressions follow Deletang et al.'s grammar (see `random_bracket_expressions`), which produces every
    length, so sequences have exactly the requested length (expression + "=" + answer).
    """

    name = "mod_arithmetic_brackets"
    group = "deterministic_context_free"
    tokens = (*ARITHMETIC_TOKENS, "(", ")")
    random_accuracy = 1 / (len(tokens) - 7)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        if prompt[-1] != "=":
            raise ValueError(f"not an expression followed by '=': {prompt}")
        return [str(evaluate_modular(prompt[:-1]))]

    def _sample(self, lengths, rng):
        rows = len(lengths)
        expression_lengths = lengths - 2
        expressions, levels = random_bracket_expressions(expression_lengths, rng, self.token_ids)
        _, values = evaluate_affine(levels, np.full(rows, -1))
        pieces = [
            (expressions, expression_lengths),
            constant_piece(self.token_ids["="], rows),
            single_token_piece(self.encode(list(DIGITS))[values]),
        ]
        return assemble(lengths.max(), pieces, answer_piece=2)


class SolveEquation(FormalLanguageTask):
    """`expression = v [ACT]` where one digit of a bracketed expression is replaced by x; answer x (mod 5).

    As in Deletang et al., the expression is a random `mod_arithmetic_brackets` expression, x replaces one of
    its digits (uniformly chosen) and v is the expression's value. The paper lists * among the operators;
    with * an equation can hold for every x (e.g. `x * 0`), so such samples are redrawn: every equation has
    exactly one solution (the modulus 5 is prime).
    """

    name = "solve_equation"
    group = "deterministic_context_free"
    tokens = (*ARITHMETIC_TOKENS, "(", ")", "x", ACT)
    random_accuracy = 1 / (len(tokens) - 9)
    min_length = 5

    def answer(self, prompt: list[str]) -> list[str]:
        if (
            len(prompt) < 4
            or prompt[-3] != "="
            or prompt[-2] not in DIGITS
            or prompt[-1] != ACT
            or prompt.count("x") != 1
        ):
            raise ValueError(f"not an equation `expression with one x = value {ACT}`: {prompt}")
        expression, value = prompt[:-3], int(prompt[-2])
        solutions = [x for x in range(MODULUS) if evaluate_modular(expression, x=x) == value]
        if len(solutions) != 1:
            raise ValueError(f"equation has solutions {solutions}, not exactly one: {prompt}")
        return [str(solutions[0])]

    def _sample(self, lengths, rng):
        rows = len(lengths)
        expression_lengths = lengths - 4
        expressions, solutions, values = self._equations(expression_lengths, rng)
        digit_ids = self.encode(list(DIGITS))
        pieces = [
            (expressions, expression_lengths),
            constant_piece(self.token_ids["="], rows),
            single_token_piece(digit_ids[values]),
            constant_piece(self.token_ids[ACT], rows),
            single_token_piece(digit_ids[solutions]),
        ]
        return assemble(lengths.max(), pieces, answer_piece=4)

    def _equations(
        self, expression_lengths: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Expressions with x (N, E), the digit x replaced (N,) and the value (N,); redraws non-unique rows."""
        rows = len(expression_lengths)
        expressions = np.zeros((rows, expression_lengths.max()), dtype=np.int64)
        solutions, values = np.zeros(rows, dtype=np.int64), np.zeros(rows, dtype=np.int64)
        pending = np.arange(rows)  # rows still without an equation with one solution
        while pending.size:
            tokens, levels = random_bracket_expressions(expression_lengths[pending], rng, self.token_ids)
            is_digit = (tokens >= self.token_ids[DIGITS[0]]) & (tokens <= self.token_ids[DIGITS[-1]])
            x_positions = np.argmax(np.where(is_digit, rng.random(tokens.shape), -1.0), axis=1)  # (M,)
            chosen = np.arange(len(pending))
            x_digits = tokens[chosen, x_positions] - self.token_ids[DIGITS[0]]
            coefficient, constant = evaluate_affine(levels, x_positions)
            tokens[chosen, x_positions] = self.token_ids["x"]

            unique = coefficient != 0
            done = pending[unique]
            expressions[done, : tokens.shape[1]] = tokens[unique]
            solutions[done] = x_digits[unique]
            values[done] = (coefficient * x_digits + constant)[unique] % MODULUS
            pending = pending[~unique]
        return expressions, solutions, values


class ReverseString(SymbolTransduction):
    """`w [ACT]` with w over "1".."10"; answer w reversed (Listing 1: 2 4 8 6 2 [ACT] 2 6 8 4 2)."""

    name = "reverse_string"
    group = "deterministic_context_free"

    def rearrange(self, symbols: list[str]) -> list[str]:
        return symbols[::-1]

    def source_positions(self, counts, width):
        return counts[:, None] - 1 - np.arange(width)[None, :]


class StackManipulation(FormalLanguageTask):
    """`initial stack, operations [ACT]`; answer the final stack.

    The initial stack is ST1..ST4 symbols listed bottom to top, the operations are POP and PS1..PS4 (push
    ST1..ST4), the answer is the final stack bottom to top (the only order consistent with Listing 1:
    ST1 ST1 ST3 POP POP PS3 PS3 [ACT] ST1 ST3 ST3). Generated samples never pop an empty stack and end with a
    non-empty stack (the reference `answer` ignores a POP on an empty stack, as Deletang et al.). Every
    symbol ever on the stack is in the prompt once and, unless popped, in the answer once, while every POP
    removes one, so a sample with K stack symbols has exactly 2K + 1 tokens: an even requested length ends
    with one [PAD].
    """

    name = "stack_manipulation"
    group = "deterministic_context_free"
    tokens = (PAD, ACT, "POP", *(f"ST{symbol}" for symbol in range(1, 5)), *(f"PS{symbol}" for symbol in range(1, 5)))
    random_accuracy = 1 / ((len(tokens) - 3) // 2)
    min_length = 3

    def answer(self, prompt: list[str]) -> list[str]:
        if prompt[-1] != ACT:
            raise ValueError(f"prompt must end with {ACT}: {prompt}")
        initial_size = next(index for index, token in enumerate(prompt) if not token.startswith("ST"))
        stack = list(prompt[:initial_size])
        for operation in prompt[initial_size:-1]:
            if operation == "POP":
                if stack:
                    stack.pop()
            elif operation.startswith("PS"):
                stack.append("ST" + operation[2:])
            else:
                raise ValueError(f"unexpected operation {operation!r} in {prompt}")
        return stack

    def _sample(self, lengths, rng):
        rows = len(lengths)
        symbol_counts = (lengths - 1) // 2  # (N,) K: symbols ever on the stack
        initial_sizes = rng.integers(1, symbol_counts + 1)  # (N,) 1..K
        first_symbol = self.token_ids["ST1"]
        initial = rng.integers(first_symbol, first_symbol + 4, size=(rows, initial_sizes.max()))  # (N, S)
        operations, operation_counts = self._operations(initial_sizes, symbol_counts - initial_sizes, rng)

        history, _, history_lengths = concatenate(
            int((initial_sizes + operation_counts).max()), [(initial, initial_sizes), (operations, operation_counts)]
        )
        final_stack, final_sizes = self._final_stack(history, history_lengths)
        pieces = [
            (initial, initial_sizes),
            (operations, operation_counts),
            constant_piece(self.token_ids[ACT], rows),
            (final_stack, final_sizes),
        ]
        return assemble(lengths.max(), pieces, answer_piece=3)

    def _operations(
        self, initial_sizes: np.ndarray, push_counts: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Operation ids (N, M) and counts (N,): all pushes, in random order with up to K pops, minus the pops
        that would hit an empty stack and, if the stack would end empty, the last pop."""
        rows = len(initial_sizes)
        pop_attempts = rng.integers(0, initial_sizes + push_counts + 1)  # (N,) 0..K
        attempt_counts = push_counts + pop_attempts
        width = max(int(attempt_counts.max()), 1)
        is_push = np.arange(width)[None, :] < push_counts[:, None]  # (N, M) pushes first, then pops
        is_push = np.take_along_axis(is_push, shuffled_positions(rng, attempt_counts, width), axis=1)
        is_pop = ~is_push & length_mask(attempt_counts, width)

        steps = is_push.astype(np.int64) - is_pop  # (N, M)
        level = initial_sizes[:, None] + np.cumsum(steps, axis=1)  # (N, M) stack size if no pop were skipped
        floor = np.minimum(np.minimum.accumulate(level, axis=1), 0)  # (N, M) depth below empty reached so far
        size = level - floor  # (N, M) stack size when pops on an empty stack are skipped
        size_before = np.concatenate([initial_sizes[:, None], size[:, :-1]], axis=1)  # (N, M)
        keep = is_push | (is_pop & (size_before > 0))  # (N, M)

        ends_empty = initial_sizes + is_push.sum(axis=1) - (is_pop & keep).sum(axis=1) == 0  # (N,)
        last_pop = width - 1 - np.argmax((is_pop & keep)[:, ::-1], axis=1)  # (N,)
        keep[np.flatnonzero(ends_empty), last_pop[ends_empty]] = False

        first_push = self.token_ids["PS1"]
        operation_ids = np.where(
            is_push, rng.integers(first_push, first_push + 4, size=(rows, width)), self.token_ids["POP"]
        )  # (N, M)
        kept_first = np.argsort(~keep, axis=1, kind="stable")  # (N, M) kept operations in their order
        return np.take_along_axis(operation_ids, kept_first, axis=1), keep.sum(axis=1)

    def _final_stack(self, history: np.ndarray, history_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Final stack ids (N, H), bottom to top, and sizes (N,) of valid histories (initial stack + operations).

        The symbol placed at step t survives iff the stack never again gets lower than its level.
        """
        valid = length_mask(history_lengths, history.shape[1])  # (N, H)
        places = valid & (history != self.token_ids["POP"])  # (N, H)
        level = np.cumsum(places.astype(np.int64) - (valid & ~places), axis=1)  # (N, H) stack size after step t
        level_ahead = np.where(valid, level, history.shape[1] + 1)  # (N, H) padding never lowers the minimum
        lowest_after = np.minimum.accumulate(level_ahead[:, ::-1], axis=1)[:, ::-1]  # (N, H) min over s >= t
        survives = places & (lowest_after >= level)  # (N, H)

        stack_symbol = np.arange(len(self.tokens))  # token id -> the stack symbol it places
        stack_symbol[self.token_ids["PS1"] : self.token_ids["PS4"] + 1] = np.arange(
            self.token_ids["ST1"], self.token_ids["ST4"] + 1
        )
        survivors_first = np.argsort(~survives, axis=1, kind="stable")  # (N, H)
        return gather_rows(stack_symbol[history], survivors_first), survives.sum(axis=1)
