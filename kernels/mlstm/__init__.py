"""mLSTM kernels: parallel, chunkwise and recurrent forms of the mLSTM cell.

Ops ``"mlstm.parallel"``, ``"mlstm.chunkwise"``, ``"mlstm.recurrent"`` and ``"mlstm.step"`` in
``kernels.backends``.

All forms compute the same h~ and final state; with no initial state the recurrence starts from
C = n = 0 and m = -inf.
"""

from kernels.mlstm import mlstm_kernels_backend, probe_cases  # noqa: F401  (register the optional backend, the probes)
from kernels.mlstm.chunkwise import chunkwise
from kernels.mlstm.gates import MLSTMState
from kernels.mlstm.parallel import parallel
from kernels.mlstm.recurrent import recurrent, step
from kernels.mlstm.triton import adapter as triton_adapter  # noqa: F401  (registers our Triton backend)

__all__ = ["MLSTMState", "chunkwise", "parallel", "recurrent", "step"]
