"""One benchmark result: ours against a peer measured in the same run, as a ratio where > 1 means ours is better.

Time and memory rows (units ms, ms/token, MiB) have ratio = peer / ours; rate rows (tokens/s, GFLOP/s) have
ratio = ours / peer. A row with a target says whether the ratio reaches it.
"""

from dataclasses import asdict, dataclass

LOWER_IS_BETTER = {"ms", "ms/token", "MiB"}
HIGHER_IS_BETTER = {"tokens/s", "GFLOP/s"}


@dataclass
class Comparison:
    benchmark: str
    shape: str
    unit: str
    ours: float
    peer_name: str
    peer: float
    target: float | None = None  # the ratio to reach, if the issue sets one

    def __post_init__(self):
        if self.unit not in LOWER_IS_BETTER | HIGHER_IS_BETTER:
            raise ValueError(f"unknown unit {self.unit!r}; valid choices: {sorted(LOWER_IS_BETTER | HIGHER_IS_BETTER)}")

    @property
    def ratio(self) -> float:
        return self.peer / self.ours if self.unit in LOWER_IS_BETTER else self.ours / self.peer

    def as_row(self) -> dict:
        row = asdict(self)
        row["ours"], row["peer"] = _rounded(self.ours), _rounded(self.peer)
        row["ratio"] = round(self.ratio, 2)
        row["met"] = "" if self.target is None else ("yes" if self.ratio >= self.target else "NO")
        return row


def _rounded(value: float) -> float:
    return round(value, 2) if abs(value) < 100 else round(value)
