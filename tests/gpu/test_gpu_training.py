"""Every model trains on CUDA through the real command, with the paper's precision and compile policy: a finished
run whose validation loss is finite and lower after 30 steps than after 10 (tests/gpu/training_runs.py; the runs
start side by side at the first test of tests/gpu: conftest.started_runs)."""

import math

import pytest

from tests.gpu.training_runs import training_runs

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("model", training_runs(), ids=lambda run: run.name)
def test_the_model_trains_on_cuda_through_the_train_command(model, started_runs):
    finished = started_runs[model.name].result()  # a run ends by RUN_SECONDS after it starts (killed if need be)
    last_line = next((line for line in reversed(finished.output.splitlines()) if line.strip()), "")
    assert finished.returncode == 0, (
        f"train failed after {finished.seconds:.0f} s ({last_line}): "
        f"{' '.join(model.overrides())}\n{finished.output[-4000:]}"
    )
    losses = [loss for _, loss in finished.validation_losses]
    assert len(losses) == 3 and all(math.isfinite(loss) for loss in losses), finished.validation_losses
    assert losses[-1] < losses[0], f"the validation loss did not fall: {finished.validation_losses}"
