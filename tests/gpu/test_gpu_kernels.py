"""Every backend of every op that has optional GPU backends, against the op's torch backend on CUDA, in bfloat16 and
float32: the value of the op's probe loss and its gradients for every input (kernels/*/probe_cases.py).

Each backend runs as the suite runs it: asked for by name, it runs only after its probe passed in a child process
(kernels.probe), so a backend whose compiler aborts, hangs or errs on this stack is skipped with the probe's reason
instead of taking pytest down. The probes of all selected tests run side by side first (``verdicts``).

Shapes: the shape classes (the sizes that decide which kernel code is compiled: head dims, state sizes) of the
paper's 125M and 350M layers (REALISTIC_CLASSES, read from models.catalog's presets), each at the probe case's own
length and at the paper's context, 2048 steps.

Bound: the relative error against the torch backend in float32 (kernels.probe's measure: the largest error of the
loss and of each gradient, relative to the reference's largest magnitude) is within the probe's tolerance for the
dtype, or within twice the error of the torch backend itself in that dtype (over 2048 steps both grow alike).
"""

import importlib
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import kernels.linear_attention  # noqa: F401  (these four register their ops' backends and probe cases)
import kernels.mlstm  # noqa: F401
import kernels.selective_scan  # noqa: F401
import kernels.slstm  # noqa: F401
from kernels import backends, probe
from kernels.probe import BackendProbeFailed

pytestmark = pytest.mark.gpu

CUDA = torch.device("cuda")
DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}
PAPER_CONTEXT = 2048
# Shape classes of the layers of the 125M and 350M language models (models.catalog.language_model_sizes, as the
# layers call the ops): mLSTM head dims 1536 / 4 and 2048 / 4 heads, sLSTM 768 / 4 and 1024 / 4, Mamba's state 16,
# GLA 350M (4 heads, keys 512, values 1024) and HGRN2 125M (6 heads of 128) on the gla op, RetNet 350M (8 heads, keys
# 1024, values 2048, fixed decays), RWKV-6 heads of 64.
REALISTIC_CLASSES = {
    "mlstm.chunkwise": [{"head_dim": 384, "chunk_size": 64}, {"head_dim": 512, "chunk_size": 64}],
    "mlstm.step": [{"head_dim": 384}, {"head_dim": 512}],
    "slstm.scan": [{"head_dim": 192}, {"head_dim": 256}],
    "selective_scan": [{"state_dim": 16}],
    "gla": [{"key_dim": 128, "value_dim": 256}, {"key_dim": 128, "value_dim": 128}],
    "retention": [{"key_dim": 128, "value_dim": 256, "per_step_decay": 0}],
    "hgrn": [{}],
    "rwkv6": [{"key_dim": 64, "value_dim": 64}],
}
PARALLEL_PROBES = 16  # a hung probe waits out its time-out (and its retry under a workaround) beside the others


def kernels_under_test() -> list[str]:
    """ "op backend" for every backend of the ops with probe cases but the torch reference itself; of backends that
    are one function under two names (the compiled sLSTM scan), the one auto picks on CUDA."""
    kernels = []
    for op in sorted(REALISTIC_CLASSES):
        seen = set()
        for backend in sorted(
            (backends.backend(op, name) for name in backends.backends_of(op)),
            key=lambda backend: -backend.priority - 1000 * backend.is_available(CUDA),
        ):
            if backend.name != "torch" and backend.function not in seen:
                seen.add(backend.function)
                kernels.append(f"{op} {backend.name}")
    return kernels


def calls(kernel: str, dtype: torch.dtype) -> list[tuple]:
    op, name = kernel.split()
    return [(op, name, dtype, tuple(shape_class.items())) for shape_class in REALISTIC_CLASSES[op]]


@pytest.fixture(scope="module")
def verdicts(request) -> None:
    """Probe every selected test's probed backend for each of its shape classes, side by side (child processes;
    the verdicts are cached on disk and in kernels.probe, where the tests' calls find them)."""
    wanted = set()
    for item in request.session.items:
        parameters = getattr(getattr(item, "callspec", None), "params", {})
        if item.module.__name__ == request.module.__name__ and "kernel" in parameters:
            wanted.update(calls(parameters["kernel"], DTYPES[parameters["dtype"]]))
    probed = [
        (op, backends.backend(op, name), dtype, shape_class)
        for op, name, dtype, shape_class in wanted
        if backends.backend(op, name).probed and backends.backend(op, name).is_available(CUDA)
    ]
    if probe.mode() != "off":
        with ThreadPoolExecutor(PARALLEL_PROBES) as pool:
            list(pool.map(lambda call: probe.verdict(call[0], call[1], CUDA, call[2], call[3]), probed))


def lengths(op: str) -> list[int | None]:
    """The steps the op's probe case draws (its module's PROBE_STEPS): its own, then the paper's context; None for
    the step op, one step."""
    module = importlib.import_module(backends.probe_case(op).inputs.__module__)
    return [module.PROBE_STEPS, PAPER_CONTEXT] if hasattr(module, "PROBE_STEPS") and op != "mlstm.step" else [None]


def relative_error(op: str, function, args, kwargs, loss) -> float:
    """The largest error of ``loss`` of function(args) and of its gradients for the differentiable arguments against
    those of the torch backend in float32, relative to the reference's largest magnitude (kernels.probe's measure)."""
    reference_args = float32_copies(args)
    value = loss(function(*args, **kwargs)).double()
    reference = loss(backends.backend(op, "torch").function(*reference_args, **kwargs)).double()
    differentiable = [
        index for index, arg in enumerate(reference_args) if isinstance(arg, torch.Tensor) and arg.requires_grad
    ]
    pairs = [(value, reference)]
    if differentiable:
        gradients = torch.autograd.grad(value, [args[index] for index in differentiable], allow_unused=True)
        reference_gradients = torch.autograd.grad(reference, [reference_args[index] for index in differentiable])
        pairs += list(zip(gradients, reference_gradients))
    worst = 0.0
    for actual, expected in pairs:
        if actual is None or not torch.isfinite(actual).all():
            return float("inf")
        scale = expected.double().abs().max().clamp_min(1e-12)
        worst = max(worst, ((actual.double() - expected.double()).abs().max() / scale).item())
    return worst


def float32_copies(args) -> list:
    return [
        arg.detach().float().requires_grad_(arg.requires_grad)
        if isinstance(arg, torch.Tensor) and arg.is_floating_point()
        else arg
        for arg in args
    ]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("kernel", kernels_under_test())
def test_the_backend_matches_the_torch_backend_on_cuda(kernel, dtype, verdicts, monkeypatch):
    op, name = kernel.split()
    if not backends.backend(op, name).is_available(CUDA):
        pytest.skip(f"backend {name!r} of {op} is not available on CUDA here (it needs a package not installed)")
    case = backends.probe_case(op)
    module, steps_to_run = importlib.import_module(case.inputs.__module__), lengths(op)
    for _, _, torch_dtype, shape_class in calls(kernel, DTYPES[dtype]):
        for steps in steps_to_run:
            if steps is not None:
                monkeypatch.setattr(module, "PROBE_STEPS", steps)
            args, kwargs = case.inputs(dict(shape_class), CUDA, torch_dtype)
            try:
                ours = relative_error(op, backends.resolve(op, name, CUDA), list(args), kwargs, case.loss)
            except BackendProbeFailed as failed:
                pytest.skip(str(failed))
            torch_error = relative_error(op, backends.backend(op, "torch").function, list(args), kwargs, case.loss)
            bound = max(probe.TOLERANCE[torch_dtype], 2 * torch_error)
            where = f"{dict(shape_class)}, {steps or 1} steps"
            assert ours <= bound, f"{kernel} {dtype} at {where}: error {ours:.3g}, torch backend's {torch_error:.3g}"
