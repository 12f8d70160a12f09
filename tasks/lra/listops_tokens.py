"""The ListOps vocabulary and tokeniser (Nangia & Bowman 2018 as the LRA release writes it, Tay et al. 2021).

A release source reads like ``( ( ( [MAX 2 ) 9 ) ] )``: parentheses show the tree the generator built and carry no
token. The LRA pipeline drops them and splits on whitespace (lra_benchmarks/listops/input_pipeline.py, as
state-spaces/s4's ``listops_tokenizer`` restates it), which leaves the operators ``[MIN [MAX [MED [SM``, the digits
0-9 and the closing bracket ``]``. Token ids start at 1: 0 is padding.
"""

from __future__ import annotations

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
DIGITS = tuple(str(digit) for digit in range(10))
CLOSE = "]"
TOKENS = DIGITS + OPERATORS + (CLOSE,)
TOKEN_IDS = {token: index + 1 for index, token in enumerate(TOKENS)}  # 0 is padding
VOCABULARY_SIZE = len(TOKENS) + 1
DIGIT_IDS = range(TOKEN_IDS["0"], TOKEN_IDS["9"] + 1)  # digit d has id d + 1
OPERATOR_IDS = tuple(TOKEN_IDS[operator] for operator in OPERATORS)
CLOSE_ID = TOKEN_IDS[CLOSE]


def split_source(source: str) -> list[str]:
    """The tokens of a release source: parentheses removed, split on whitespace."""
    return source.replace("(", " ").replace(")", " ").split()


def token_text(token_id: int) -> str:
    return TOKENS[token_id - 1]
