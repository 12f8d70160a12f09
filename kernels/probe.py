"""Probe of optional kernel backends: compile and run once on a tiny input in a child process, cache the verdict.

A Triton or CUDA kernel compiles on its first call, and a compiler can abort the whole process (Triton 3.6's LLVM
asserts on mlstm_kernels' TFLA kernels, measured on an H200) or hang. So before a backend registered with
``probed=True`` first runs for a (stack, device, dtype, shape class), a child process (``python -m kernels.probe``)
runs it on its op's tiny ``ProbeCase`` input, forward and backward, against the op's torch backend. The verdict
(passed, or why not: the signal that ended the child and its last line, the exception, the error against torch, a
time-out) is cached on disk, keyed by the versions of torch, Triton and the backend's packages, the sources of the
backend's folder, the device name, the dtype and the shape class; concurrent processes (the ranks of one node)
wait for one probe under a file lock.

A failed probe is retried under each of the backend's ``workarounds`` (environment settings such as
``DISABLE_LLVM_OPT=1``); one that passes is set in this process's environment before the backend first runs, and
said in one line. ``auto`` skips a backend that fails, saying so in one line per process; a backend asked for by
name raises ``BackendProbeFailed``.

Environment: ``XLSTM_SUITE_KERNEL_PROBE`` = ``on`` (default), ``rerun`` (probe again, once per process, ignoring the verdicts on
disk), ``off`` (no probes:
trust every backend); ``XLSTM_SUITE_PROBE_CACHE`` (default ``~/.cache/xlstm-suite/kernel_probes``);
``XLSTM_SUITE_PROBE_TIMEOUT`` (seconds per child, default 600).
"""

import argparse
import contextlib
import fcntl
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernels import backends
from kernels.backends import Backend

MODE_VARIABLE = "XLSTM_SUITE_KERNEL_PROBE"
CACHE_VARIABLE = "XLSTM_SUITE_PROBE_CACHE"
TIMEOUT_VARIABLE = "XLSTM_SUITE_PROBE_TIMEOUT"
MODES = ("on", "rerun", "off")
DEFAULT_TIMEOUT_SECONDS = 600
ALWAYS_VERSIONED = ("torch", "triton")
# the largest error of the probed backend's value and gradients against torch's, relative to the largest |torch|
TOLERANCE = {torch.float32: 1e-2, torch.float16: 3e-2, torch.bfloat16: 8e-2, torch.float64: 1e-6}


class BackendProbeFailed(RuntimeError):
    """A backend asked for by name failed its probe on this stack."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str  # why it failed, or "" when it passed
    environment: dict[str, str]  # the workaround it needs ({} for none)
    cache_file: str


_verdicts: dict[str, Verdict] = {}  # this process's verdicts by key
_announced: set[str] = set()


def mode() -> str:
    setting = os.environ.get(MODE_VARIABLE, "on")
    if setting not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={setting!r}; valid choices: {list(MODES)}")
    return setting


def cache_folder() -> Path:
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "xlstm-suite" / "kernel_probes")


def _timeout_seconds() -> float:
    setting = os.environ.get(TIMEOUT_VARIABLE, str(DEFAULT_TIMEOUT_SECONDS))
    try:
        seconds = float(setting)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"{TIMEOUT_VARIABLE}={setting!r}; valid: a positive number of seconds")
    return seconds


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _sources_digest(module: str) -> str:
    """A digest of the Python files beside the backend's module: a change of our kernel or its reference re-probes."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a script's __main__
        spec = None
    if spec is None or spec.origin is None:
        return "unknown"
    digest = hashlib.sha256()
    for path in sorted(Path(spec.origin).parent.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} {platform.machine()}"


def _call_signature(args: tuple, kwargs: dict) -> tuple[torch.device, torch.dtype]:
    """The device and dtype of a call: those of its first floating-point tensor argument."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.device, value.dtype
    raise ValueError("a probed kernel call needs a floating-point tensor argument")


def probe_request(
    op: str, backend: Backend, device: torch.device, dtype: torch.dtype, shape_class: tuple[tuple[str, int], ...]
) -> dict[str, Any]:
    """What a probe runs and what its verdict depends on (the cache key)."""
    return {
        "op": op,
        "backend": backend.name,
        "modules": [backend.module, backends.backend(op, "torch").module],
        "device": str(device),
        "device_name": device_name(device),
        "dtype": str(dtype).removeprefix("torch."),
        "shape_class": dict(shape_class),
        "versions": {name: _version(name) for name in (*ALWAYS_VERSIONED, *backend.packages)},
        "sources": _sources_digest(backend.module),
        "python": platform.python_version(),
    }


def _key(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:20]


def _run_child(request: dict[str, Any], environment: dict[str, str]) -> tuple[bool, str]:
    """Run the probe in a child process under ``environment``: (passed, reason)."""
    child_environment = {
        **os.environ,
        **environment,
        MODE_VARIABLE: "off",
        "PYTHONPATH": os.pathsep.join(filter(None, sys.path)),
    }
    timeout = _timeout_seconds()
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "kernels.probe", json.dumps(request)],
            capture_output=True,
            text=True,
            env=child_environment,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, f"no result within {timeout:g} s (compiling or hung; {TIMEOUT_VARIABLE} sets the limit)"
    last_error_line = next((line.strip() for line in reversed(completed.stderr.splitlines()) if line.strip()), "")
    if completed.returncode < 0:
        name = signal.Signals(-completed.returncode).name
        return False, f"the probe process was killed by {name}" + (f": {last_error_line}" if last_error_line else "")
    outcome = next((line for line in reversed(completed.stdout.splitlines()) if line.startswith("{")), None)
    if outcome is None:
        return False, f"the probe process exited with code {completed.returncode}" + (
            f": {last_error_line}" if last_error_line else ""
        )
    result = json.loads(outcome)
    return result["passed"], result["reason"]


def _probe(request: dict[str, Any], backend: Backend) -> tuple[bool, str, dict[str, str]]:
    """(passed, reason of the plain failure, the workaround environment it passed under)."""
    passed, reason = _run_child(request, {})
    if passed:
        return True, "", {}
    for workaround in backend.workarounds:
        environment = dict(workaround)
        if _run_child(request, environment)[0]:
            return True, reason, environment
    return False, reason, {}


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def verdict(
    op: str, backend: Backend, device: torch.device, dtype: torch.dtype, shape_class: tuple[tuple[str, int], ...]
) -> Verdict:
    """The backend's verdict for this call class: from this process, the disk cache, or a new probe."""
    request = probe_request(op, backend, device, dtype, shape_class)
    key = _key(request)
    if key in _verdicts:
        return _verdicts[key]
    path = cache_folder() / f"{op}-{backend.name}-{key}.json"
    with _locked(path):
        cached = None if mode() == "rerun" or not path.exists() else json.loads(path.read_text())
        if cached is None:
            passed, reason, environment = _probe(request, backend)
            cached = {"request": request, "passed": passed, "reason": reason, "environment": environment}
            temporary = path.with_suffix(f".tmp-{os.getpid()}")
            temporary.write_text(json.dumps(cached, indent=1, sort_keys=True))
            temporary.replace(path)
    result = Verdict(cached["passed"], cached["reason"], cached["environment"], str(path))
    _verdicts[key] = result
    return result


def _describe(op: str, backend: Backend, dtype: torch.dtype, shape_class, device: torch.device) -> str:
    sizes = ", ".join(f"{name} {value}" for name, value in shape_class)
    return (
        f"kernel backend {backend.name!r} of {op} ({str(dtype).removeprefix('torch.')}{', ' + sizes if sizes else ''}, "
        f"{device_name(device)})"
    )


def _retry_hint(result: Verdict) -> str:
    return f"retry: {MODE_VARIABLE}=rerun, or delete {result.cache_file}"


def _usable(
    op: str, backend: Backend, device: torch.device, dtype: torch.dtype, shape_class: tuple[tuple[str, int], ...]
) -> tuple[bool, Verdict | None, str]:
    """Whether ``backend`` may run calls of this class, its verdict, and the class's description; a workaround it
    needs is set in this process's environment."""
    if mode() == "off":
        return True, None, ""
    result = verdict(op, backend, device, dtype, shape_class)
    described = _describe(op, backend, dtype, shape_class, device)
    if result.passed and result.environment:
        settings = " ".join(f"{name}={value}" for name, value in result.environment.items())
        if any(os.environ.get(name) != value for name, value in result.environment.items()):
            os.environ.update(result.environment)
            print(
                f"xlstm-suite: {described} needs {settings} on this stack ({result.reason}); set for this process",
                file=sys.stderr,
            )
    return result.passed, result, described


# A verdict is a constant of its call class: under torch.compile the choice is made once, at tracing, and the graph
# runs the chosen kernel without a break (the probe itself never runs inside a graph).
@torch.compiler.assume_constant_result
def _first_passing_name(
    op: str, names: tuple[str, ...], device: str, dtype: torch.dtype, shape_class: tuple[tuple[str, int], ...]
) -> str:
    for name in names:
        candidate = backends.backend(op, name)
        if not candidate.probed:
            return name
        passed, result, described = _usable(op, candidate, torch.device(device), dtype, shape_class)
        if passed:
            return name
        if result.cache_file not in _announced:
            _announced.add(result.cache_file)
            print(
                f"xlstm-suite: {described} failed its probe ({result.reason}); using the next backend; "
                f"{_retry_hint(result)}",
                file=sys.stderr,
            )
    raise RuntimeError(f"no backend of {op} passed its probe: {list(names)}")


def _call_class(op: str, args: tuple, kwargs: dict) -> tuple[str, torch.dtype, tuple[tuple[str, int], ...]]:
    device, dtype = _call_signature(args, kwargs)
    return str(device), dtype, backends.probe_case(op).shape_class(*args, **kwargs)


def first_passing(op: str, candidates: list[Backend], args: tuple, kwargs: dict):
    """The function of the first of ``candidates`` (priority order) that may run this call."""
    names = tuple(candidate.name for candidate in candidates)
    return backends.backend(op, _first_passing_name(op, names, *_call_class(op, args, kwargs))).function


@torch.compiler.assume_constant_result
def _require(op: str, name: str, device: str, dtype: torch.dtype, shape_class: tuple[tuple[str, int], ...]) -> bool:
    passed, result, described = _usable(op, backends.backend(op, name), torch.device(device), dtype, shape_class)
    if not passed:
        raise BackendProbeFailed(
            f"{described} failed its probe ({result.reason}); use backend='auto' (skips it) or "
            f"'torch'; {_retry_hint(result)}"
        )
    return True


def require_passed(op: str, backend: Backend, args: tuple, kwargs: dict):
    """The backend's function, or BackendProbeFailed naming why its probe failed."""
    _require(op, backend.name, *_call_class(op, args, kwargs))
    return backend.function


def _errors(
    result: Any, reference: Any, inputs: list[torch.Tensor], reference_inputs: list[torch.Tensor], loss
) -> float:
    """The largest error of ``result``'s loss and the loss's input gradients against the reference's, each relative
    to the reference's largest magnitude."""
    value, reference_value = loss(result).float(), loss(reference).float()
    pairs = [(value, reference_value)]
    differentiable = [index for index, tensor in enumerate(reference_inputs) if tensor.requires_grad]
    if differentiable:
        gradients = torch.autograd.grad(value, [inputs[index] for index in differentiable], allow_unused=True)
        reference_gradients = torch.autograd.grad(
            reference_value, [reference_inputs[index] for index in differentiable], allow_unused=True
        )
        pairs += [(g, r) for g, r in zip(gradients, reference_gradients) if r is not None]
    worst = 0.0
    for actual, expected in pairs:
        if actual is None or not torch.isfinite(actual).all():
            return float("inf")
        actual, expected = actual.double(), expected.double()
        worst = max(worst, ((actual - expected).abs().max() / expected.abs().max().clamp_min(1e-12)).item())
    return worst


def run_probe(request: dict[str, Any]) -> tuple[bool, str]:
    """In the child: the backend against the torch backend on the op's tiny input, forward and backward."""
    for module in request["modules"]:
        importlib.import_module(module)
    op = request["op"]
    device, dtype = torch.device(request["device"]), getattr(torch, request["dtype"])
    args, kwargs = backends.probe_case(op).inputs(request["shape_class"], device, dtype)
    reference_args = [
        a.detach().float().requires_grad_(a.requires_grad)
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in args
    ]
    result = backends.backend(op, request["backend"]).function(*args, **kwargs)
    reference = backends.backend(op, "torch").function(*reference_args, **kwargs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    reference_tensors = [a for a in reference_args if isinstance(a, torch.Tensor)]
    error = _errors(result, reference, tensors, reference_tensors, backends.probe_case(op).loss)
    tolerance = TOLERANCE.get(dtype, 1e-2)
    if error <= tolerance:
        return True, ""
    return (
        False,
        f"its value or gradients differ from the torch backend's by {error:.3g} (relative; tolerance {tolerance:g})",
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Probe one kernel backend (run by kernels.probe itself, in a child).")
    parser.add_argument("request", help="the probe request as JSON")
    request = json.loads(parser.parse_args(argv).request)
    try:
        passed, reason = run_probe(request)
    except Exception as error:  # any failure of the kernel under test is the verdict, not a crash of the probe
        first_line = (str(error).strip().splitlines() or [""])[0][:300]
        passed, reason = False, f"{type(error).__name__}: {first_line}"
    print(json.dumps({"passed": passed, "reason": reason}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
