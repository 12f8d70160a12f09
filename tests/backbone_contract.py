"""The contract every backbone keeps: (B, S, D) -> (B, S, D), causal, and step() over a sequence equals forward."""

import torch


def _tensors(state) -> list[torch.Tensor]:
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        state = list(state.values())
    if isinstance(state, (list, tuple)):
        return [t for item in state for t in _tensors(item)]
    return []


def assert_step_matches_forward(
    backbone: torch.nn.Module,
    embedding_dim: int,
    *,
    batch: int = 2,
    length: int = 13,
    atol: float = 1e-9,
    constant_memory: bool = True,
    seed: int = 0,
) -> None:
    """Stepping through a float64 sequence gives forward()'s outputs; recurrent states keep their size."""
    generator = torch.Generator().manual_seed(seed)
    backbone = backbone.double().eval()
    x = torch.randn(batch, length, embedding_dim, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        expected = backbone(x)
        assert expected.shape == x.shape
        state = backbone.init_state(batch)
        sizes = [t.numel() for t in _tensors(state)]
        for t in range(length):
            y_t, state = backbone.step(x[:, t], state)
            torch.testing.assert_close(y_t, expected[:, t], rtol=0, atol=atol, msg=lambda m: f"step {t}: {m}")  # noqa: B023 (called in this iteration)
        if constant_memory:
            assert [t.numel() for t in _tensors(state)] == sizes, "recurrent state grew with the sequence"


def assert_causal(
    backbone: torch.nn.Module, embedding_dim: int, *, length: int = 12, position: int = 7, seed: int = 0
) -> None:
    """Changing the input at ``position`` changes no output before it and some output from it on."""
    generator = torch.Generator().manual_seed(seed)
    backbone = backbone.double().eval()
    x = torch.randn(2, length, embedding_dim, generator=generator, dtype=torch.float64)
    changed = x.clone()
    changed[:, position] += torch.randn(2, embedding_dim, generator=generator, dtype=torch.float64)
    with torch.no_grad():
        before, after = backbone(x), backbone(changed)
    torch.testing.assert_close(after[:, :position], before[:, :position], rtol=0, atol=1e-12)
    assert (after[:, position:] - before[:, position:]).abs().max() > 1e-6
