"""Bad values are rejected before anything runs: every key of a run config is typed and bounded, a key that no code
reads is an error naming the closest valid keys, and every problem is reported at once."""

import sys

import pytest

from experiments.config.config_schema import section_problems
from experiments.config.configuration import ConfigError, compose_run_config
from experiments.config.run_schema import ACCELERATORS, PRECISIONS, STRATEGIES, OptimConfig
from experiments.config.validation import validate_run_config
from tests.repository_copy import copy_repository, run_in, tree_state

# (overrides, the problems the message must name: one line each)
BAD_VALUES = [
    (["optim.lr="], ["optim.lr='' must be a finite number"]),
    (["optim.lr=-1"], ["optim.lr=-1 must be > 0"]),
    (["optim.lr=0"], ["optim.lr=0 must be > 0"]),
    (["optim.lr=nan"], ["optim.lr=nan must be a finite number"]),
    (["trainer.max_steps=abc"], ["trainer.max_steps='abc' must be an integer"]),
    (["trainer.max_steps=2.5"], ["trainer.max_steps=2.5 must be an integer"]),
    (["trainer.batch_size=abc"], ["trainer.batch_size='abc' must be an integer"]),
    (["trainer.batch_size=0"], ["trainer.batch_size=0 must be >= 1"]),
    (["trainer.val_every_steps=-5"], ["trainer.val_every_steps=-5 must be >= 1"]),
    (["trainer.num_threads=0"], ["trainer.num_threads=0 must be >= 1"]),
    (["trainer.checkpoint=maybe"], ["trainer.checkpoint='maybe' must be true or false"]),
    (
        ["trainer.logger=mlflow"],
        ["trainer.logger='mlflow' is not valid; valid choices: ['csv', 'tensorboard', 'wandb']"],
    ),
    (["trainer.precision=bf16"], ["trainer.precision='bf16' is not valid; valid choices: ['transformer-engine'"]),
    (["trainer.strategy=dpp"], ["trainer.strategy='dpp' is not valid; valid choices: ['auto', 'ddp'"]),
    (["trainer.devices=0"], ["trainer.devices=0 must be a count >= 1"]),
    (["trainer.gradient_clip_val=-1"], ["trainer.gradient_clip_val=-1 must be >= 0"]),
    (["optim.warmup_fraction=1.5"], ["optim.warmup_fraction=1.5 must be <= 1"]),
    (["optim.weight_decay=-0.1"], ["optim.weight_decay=-0.1 must be >= 0"]),
    (["optim.betas=[0.9]"], ["optim.betas=[0.9] must be two numbers in [0, 1)"]),
    (["optim.betas=[0.9,1.5]"], ["optim.betas=[0.9, 1.5] must be <= 1"]),
    (["optim.min_lr=1e-2", "optim.lr=1e-3"], ["optim.min_lr=0.01 must not exceed lr=0.001"]),
    (["optim.lrr=1e-3"], ["unknown key optim.lrr; did you mean optim.lr?"]),
    (["+optim.lrr=1e-3"], ["unknown key optim.lrr; did you mean optim.lr?"]),
    (["+trainer.max_step=10"], ["unknown key trainer.max_step; did you mean trainer.max_steps?"]),
    (
        ["+learning_rate=1e-3"],
        ["unknown key learning_rate (valid keys at the top level: artifact, debug, evaluate, model"],
    ),
    (["model.embedding_dim=abc"], ["model.embedding_dim='abc' must be an integer"]),
    (["model.num_blocks=0"], ["model.num_blocks=0 must be >= 1"]),
    (["seed=-1"], ["seed=-1 must be >= 0"]),
    (["seed=one"], ["seed='one' must be an integer"]),
    (["scale=huge"], ["scale='huge' must be one of ['smoke', 'mini', 'paper', 'adhoc'] or null"]),
    (["task.val_samples=0"], ["task.val_samples=0 must be >= 1"]),
    (["task.data_seed=-1"], ["task.data_seed=-1 must be >= 0"]),
    (
        ["task.eval_min_length=100", "task.eval_max_length=50"],
        ["task.eval_min_length=100 and eval_max_length=50 must satisfy 2 <= eval_min_length <= eval_max_length"],
    ),
    (["task.train_max_length=1"], ["task.train_max_length=1 is below parity's shortest sequence (2)"]),
    (["+task.train_min_length=3"], ["unknown key task.train_min_length; did you mean task.train_max_length"]),
    (["+debug.fail_after_step=3"], ["unknown key debug.fail_after_step; did you mean debug.fail_after_steps?"]),
    # several bad values: one line each, all at once
    (
        [
            "optim.lr=-1",
            "trainer.max_steps=abc",
            "optim.lrr=1",
            "trainer.batch_size=0",
            "task.val_samples=-3",
            "seed=-1",
        ],
        [
            "seed=-1 must be >= 0",
            "unknown key optim.lrr",
            "optim.lr=-1 must be > 0",
            "trainer.max_steps='abc' must be an integer",
            "trainer.batch_size=0 must be >= 1",
            "task.val_samples=-3 must be >= 1",
        ],
    ),
]


def rejection(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as caught:
        validate_run_config(compose_run_config(["model=xlstm_0_1", "task=parity", *overrides]))
    return str(caught.value)


@pytest.mark.parametrize("overrides, problems", BAD_VALUES, ids=[" ".join(case[0]) for case in BAD_VALUES])
def test_every_bad_value_is_named_once(overrides, problems):
    message = rejection(overrides)
    for problem in problems:
        assert problem in message
    lines = message.splitlines()
    assert len(lines) == (1 if len(problems) == 1 else len(problems) + 1)  # "N bad values:" heads a list


def test_the_default_config_and_the_paper_settings_pass():
    validate_run_config(compose_run_config([]))
    validate_run_config(
        compose_run_config(
            [
                "trainer.precision=bf16-mixed",
                "trainer.devices=auto",
                "trainer.strategy=ddp",
                "trainer.num_threads=null",
                "trainer.gradient_clip_val=null",
                "model.options.slstm.num_heads=2",
            ]
        )
    )


def test_a_model_option_is_checked_by_the_backbone_config():
    assert "divisible by slstm.num_heads=3" in rejection(["model.options.slstm.num_heads=3"])
    assert "unknown xlstm_0_1 option(s) ['depth']" in rejection(["+model.options.depth=3"])


def test_bounds_apply_to_every_item_of_a_list():
    problems = section_problems(
        OptimConfig,
        {"lr": 1e-3, "betas": [-0.1, 0.9], "eps": 1e-8, "weight_decay": 0.1, "warmup_fraction": 0.1, "min_lr": 1e-5},
        "optim",
    )
    assert problems == ["optim.betas=[-0.1, 0.9] must be >= 0"]


def test_missing_keys_are_named():
    assert section_problems(OptimConfig, {"lr": 1e-3}, "optim") == [
        f"optim.{name} is missing" for name in ("betas", "eps", "weight_decay")
    ]


def test_the_schedule_takes_one_warm_up_and_one_floor():
    """warmup_steps or warmup_fraction, min_lr or min_lr_ratio: exactly one of each pair."""
    base = {"lr": 1e-3, "betas": [0.9, 0.95], "eps": 1e-5, "weight_decay": 0.1}
    assert section_problems(OptimConfig, base | {"warmup_steps": 750, "min_lr_ratio": 0.1}, "optim") == []
    assert section_problems(
        OptimConfig, base | {"warmup_steps": 750, "warmup_fraction": 0.1, "min_lr": 0}, "optim"
    ) == ["optim.warmup_steps=750 and warmup_fraction=0.1: set exactly one of the two (the other null or absent)"]
    assert section_problems(OptimConfig, base | {"warmup_fraction": 0.1}, "optim") == [
        "optim.min_lr=None and min_lr_ratio=None: set exactly one of the two (the other null or absent)"
    ]


def test_lightning_choices_are_lightnings():
    """The torch-free copies of Lightning's precision, accelerator and strategy names stay equal to Lightning's."""
    import typing

    from lightning.fabric.connector import _PRECISION_INPUT_STR
    from lightning.pytorch.accelerators import AcceleratorRegistry
    from lightning.pytorch.strategies import StrategyRegistry

    assert list(PRECISIONS) == list(typing.get_args(_PRECISION_INPUT_STR))
    assert set(ACCELERATORS) == {"auto", "gpu", *AcceleratorRegistry.available_accelerators()}
    assert set(STRATEGIES) == {"auto", *StrategyRegistry.available_strategies()}


# --- the command line: exit code 2, the message, nothing written --------------------------------------------------

COMMANDS = [
    ("train model=xlstm_0_1 task=parity optim.lr=", "optim.lr='' must be a finite number"),
    ("train model=xlstm_0_1 task=parity optim.lr=-1", "optim.lr=-1 must be > 0"),
    ("train model=xlstm_0_1 task=parity trainer.max_steps=abc", "trainer.max_steps='abc' must be an integer"),
    ("train model=xlstm_0_1 task=parity optim.lrr=1e-3", "did you mean optim.lr?"),
    ("train model=xlstm_0_1 task=parity +optim.lrr=1e-3", "did you mean optim.lr?"),
    ("sweep formal-main --scale smoke trainer.batch_size=abc", "trainer.batch_size='abc' must be an integer"),
    ("sweep formal-main --scale mini optim.lr=-1 trainer.max_steps=0", "2 bad values"),
    ("report formal-main --scale smoke trainer.max_steps=abc", "trainer.max_steps='abc' must be an integer"),
]


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return copy_repository(tmp_path_factory.mktemp("repository"))


@pytest.mark.parametrize("command, message", COMMANDS, ids=[command for command, _ in COMMANDS])
def test_the_command_line_rejects_bad_values_and_writes_nothing(repository, command, message):
    before = tree_state(repository / "results")
    finished = run_in(repository, f"{sys.executable} -m experiments.cli {command}")
    print(f"{command}: exit {finished.returncode} in {finished.seconds:.2f} s: {finished.output.strip()}")
    assert finished.returncode == 2
    assert message in finished.output
    assert "Traceback" not in finished.output
    assert tree_state(repository / "results") == before
