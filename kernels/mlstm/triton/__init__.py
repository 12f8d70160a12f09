"""Our chunkwise mLSTM kernels in Triton (forward and backward), backend ``"triton"`` of ``"mlstm.chunkwise"``.

- ``adapter``: the op's signature, fallbacks, registration (imports no triton);
- ``function``: the autograd Function that launches the kernels;
- ``gate_kernels``, ``state_kernels``, ``forward_kernels``, ``backward_kernels``: the kernels;
- ``tiling``: chunk and block sizes.

Design (after TFLA, mlstm_kernels' ``chunkwise--triton_xl_chunk``): chunks of up to 256 steps whose
intra-chunk part runs as tiled matmuls in the parallel form, the states at chunk boundaries from a
recurrence over chunks, the head dims tiled so that DH up to 512 fits. Unlike TFLA: the stabiliser of each
row is the running max of the gates (known before any tile, as in the torch reference, so no online
rescaling), the normaliser is differentiated (as in the reference), and the backward reuses the states and
the L x L score tiles the forward wrote instead of recomputing them.
"""
