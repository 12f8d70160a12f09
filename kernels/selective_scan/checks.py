"""Input checks of the selective scan: shapes must fit before any compute."""


def check_inputs(x, dt, A, B, C, D, state) -> None:
    """Raise ValueError naming the offending shape unless x, dt are (B, S, DI), A (DI, N), B, C (B, S, N), D (DI,)."""
    if x.dim() != 3 or dt.shape != x.shape:
        raise ValueError(f"x and dt must share one shape (B, S, DI); got x {tuple(x.shape)}, dt {tuple(dt.shape)}")
    batch, seq_len, inner = x.shape
    if seq_len < 1:
        raise ValueError(f"sequence length S must be at least 1; got x {tuple(x.shape)}")
    if A.dim() != 2 or A.shape[0] != inner:
        raise ValueError(f"A must have shape (DI, N) with DI = {inner}; got {tuple(A.shape)}")
    state_dim = A.shape[1]
    if B.shape != (batch, seq_len, state_dim) or C.shape != (batch, seq_len, state_dim):
        raise ValueError(
            f"B and C must have shape (B, S, N) = {(batch, seq_len, state_dim)}; "
            f"got B {tuple(B.shape)}, C {tuple(C.shape)}"
        )
    if D is not None and D.shape != (inner,):
        raise ValueError(f"D must have shape (DI,) = {(inner,)}; got {tuple(D.shape)}")
    if state is not None and state.shape != (batch, inner, state_dim):
        raise ValueError(
            f"initial_state must have shape (B, DI, N) = {(batch, inner, state_dim)}; got {tuple(state.shape)}"
        )


def check_chunk_size(chunk_size) -> None:
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer; got {chunk_size!r}")
