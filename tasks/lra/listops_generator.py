"""ListOps samples drawn the way the LRA release drew them (google-research/long-range-arena,
lra_benchmarks/data/listops.py), with numpy's seeded generator.

The recipe: a node at depth d (the root has depth 1) is an operator with probability VALUE_P = 0.25 while
d < max_depth, else a digit uniform in 0-9; an operator is uniform among MIN, MAX, MED, SM and has a number of
arguments uniform in [2, max_args], each a node at depth d + 1. A tree is written in prefix order, operator, its
arguments, ``]``; its length counts those tokens (the release's parentheses are no tokens). Trees are drawn until
``samples`` distinct ones have a length in [min_length, max_length]. The release: max_depth 10, max_args 10,
500 < length < 2000 (here min_length 501, max_length 1999), 96,000 / 2,000 / 2,000 samples.

Values: MIN, MAX; MED is ``int(np.median(arguments))`` (the mean of the two middle values, rounded down, for an even
count); SM is the sum modulo 10. The generator evaluates each operator as it closes; the tests check the labels
with an evaluator of their own over the tokens.

A tree that can no longer end within max_length is abandoned as soon as that is certain (its tokens plus one ``]``
per open operator exceed max_length): the release would reject it too, and the long tail of huge trees costs
nothing. Generation is a Python loop over tokens (a tree is a recursion, not an array operation): 0.58 s per 1,000
release-length samples on one CPU core (measured, 10,000 in 5.8 s), so the release's 96,000 training samples take
about a minute and the sets are kept in the data cache.
"""

from __future__ import annotations

import numpy as np

from tasks.lra.listops_config import generation_problems
from tasks.lra.listops_tokens import CLOSE_ID, OPERATOR_IDS
from tasks.lra.sets import RaggedTokens, TokenSequenceSet

VALUE_P = 0.25
UNIFORMS_PER_DRAW = 65536  # uniforms fetched from the generator at once; part of the data's definition
MAX_REPEATS = 10_000  # draws in a row that repeat a taken tree before the recipe counts as exhausted


class UniformStream:
    """Uniforms in [0, 1) from ``rng``, fetched in blocks (a Python float per call costs a fraction of numpy's)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.block, self.index = rng, [], 0

    def next(self) -> float:
        if self.index == len(self.block):
            self.block, self.index = self.rng.random(UNIFORMS_PER_DRAW).tolist(), 0
        self.index += 1
        return self.block[self.index - 1]


def operator_value(operator: int, arguments: list[int]) -> int:
    if operator == OPERATOR_IDS[0]:
        return min(arguments)
    if operator == OPERATOR_IDS[1]:
        return max(arguments)
    if operator == OPERATOR_IDS[2]:
        ordered = sorted(arguments)
        return (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) // 2
    return sum(arguments) % 10


def draw_tree(uniforms: UniformStream, max_depth: int, max_args: int, max_length: int) -> tuple[list[int], int] | None:
    """One tree's token ids (prefix order) and value, or None when it grows past max_length."""
    tokens: list[int] = []
    open_operators: list[list] = []  # [operator id, arguments still to draw, argument values] per open operator
    while True:
        depth = len(open_operators) + 1
        if depth < max_depth and uniforms.next() <= VALUE_P:
            operator = OPERATOR_IDS[int(uniforms.next() * len(OPERATOR_IDS))]
            tokens.append(operator)
            open_operators.append([operator, 2 + int(uniforms.next() * (max_args - 1)), []])
            continue
        value = int(uniforms.next() * 10)
        tokens.append(value + 1)  # digit d has token id d + 1
        while open_operators:  # the value is an argument of the innermost open operator; close what is complete
            innermost = open_operators[-1]
            innermost[1] -= 1
            innermost[2].append(value)
            if innermost[1] > 0:
                break
            open_operators.pop()
            tokens.append(CLOSE_ID)
            value = operator_value(innermost[0], innermost[2])
        if not open_operators:
            return tokens, value
        if len(tokens) + len(open_operators) > max_length:
            return None


def generate(
    samples: int,
    rng: np.random.Generator,
    max_depth: int = 10,
    max_args: int = 10,
    min_length: int = 501,
    max_length: int = 1999,
    excluded: frozenset[bytes] = frozenset(),
) -> TokenSequenceSet:
    """``samples`` distinct ListOps samples drawn from ``rng``, none of them in ``excluded`` (token ids as uint8
    bytes: another split's samples, as the release draws its splits from one set of distinct trees); ValueError
    naming every bad value before drawing, or when the recipe has too few distinct trees left."""
    problems = generation_problems(max_depth, max_args, min_length, max_length)
    if samples < 1:
        problems.append(f"samples={samples} must be >= 1")
    if problems:
        raise ValueError("; ".join(problems))
    uniforms = UniformStream(rng)
    seen: set[bytes] = set()
    sequences, labels = [], []
    repeats = 0  # draws in a row that gave a tree already taken
    while len(sequences) < samples:
        drawn = draw_tree(uniforms, max_depth, max_args, max_length)
        if drawn is None or len(drawn[0]) < min_length:
            continue
        tokens = np.array(drawn[0], dtype=np.uint8)
        if tokens.tobytes() in seen or tokens.tobytes() in excluded:
            repeats += 1
            if repeats == MAX_REPEATS:
                raise ValueError(
                    f"the recipe (max_depth={max_depth}, max_args={max_args}, lengths {min_length} to "
                    f"{max_length}) gave {len(sequences)} distinct samples and then {MAX_REPEATS} "
                    f"repeats in a row; valid: fewer samples than {samples} or a wider recipe"
                )
            continue
        repeats = 0
        seen.add(tokens.tobytes())
        sequences.append(tokens)
        labels.append(drawn[1])
    return TokenSequenceSet(RaggedTokens.from_sequences(sequences, dtype=np.uint8), np.array(labels, dtype=np.int64))
