"""The paper's training recipe on Lightning's distributed engine: a global batch split over processes and
accumulation steps trains the same weights as one process, every task family's data gives each rank its slice of the
same global batch, and precision, FSDP and torch.compile follow the paper per model (experiments.training.
distribution, models.catalog.training_policy)."""

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf

from experiments.config.configuration import ConfigError, compose_run_config
from experiments.config.validation import validate_run_config
from experiments.training.distribution import (
    batch_split,
    cluster_plugins,
    compile_network,
    compiles,
    distributed_trainer_arguments,
    precision_and_strategy,
)
from experiments.training.train import build_module, run_training
from models.catalog import TRAINING_POLICIES, known_backbones, training_policy
from models.registry import build_backbone
from tasks.formal_languages.data import FormalLanguageDataModule
from tasks.mqar.config import MQARTaskConfig
from tasks.mqar.data import MQARDataModule
from tasks.spec import IGNORE_INDEX

# A language model on the sample corpus shipped with the suite (GPT-2 tokens), three AdamW steps of a global batch of 4
TINY_LM = [
    "model=xlstm_1_0",
    "task=lm_sample",
    "optim=adamw_lm",
    "optim.warmup_steps=1",
    "trainer.max_steps=3",
    "trainer.val_every_steps=1",
    "trainer.batch_size=4",
    "task.context_length=16",
    "task.val_sequences=4",
    "task.test_sequences=4",
    "model.embedding_dim=16",
    "model.num_blocks=1",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
]
TINY_MQAR = [
    "model=llama",
    "task=mqar",
    "trainer.max_steps=3",
    "trainer.val_every_steps=3",
    "trainer.batch_size=4",
    "trainer.num_threads=1",
    "trainer.accelerator=cpu",
    "model.embedding_dim=16",
    "task.vocab_size=64",
    "task.context_length=32",
    "task.num_kv_pairs=4",
    "task.train_samples=16",
    "task.val_samples=8",
    "task.test_samples=8",
]
MQAR_TASK = MQARTaskConfig(
    name="mqar",
    family="mqar",
    vocab_size=64,
    context_length=32,
    num_kv_pairs=4,
    power_a=0.01,
    random_non_queries=False,
    data_seed=0,
    train_samples=16,
    val_samples=8,
    test_samples=8,
)
# Float32 sums of the same gradients in another order (gloo's all-reduce against accumulation in one process, or one
# batch's mean against the mean of its two halves' means) differ in the last bits; three AdamW steps keep that at
# ~1e-7 (measured: 0.0 between two processes and accumulation, 7.8e-8 against one whole batch).
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def weights(run_dir) -> dict[str, torch.Tensor]:
    checkpoint = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert checkpoint["global_step"] == 3
    return checkpoint["state_dict"]


def assert_same_weights(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], **TOLERANCE, msg=name)


def train_in_two_processes(overrides: list[str], tmp_path):
    """Lightning's "ddp" strategy on CPU (gloo): the rank-0 run is a process of its own (tests.distributed_run), and
    Lightning starts rank 1 by running its command line again, as each task of a SLURM job runs the same command.
    (In the pytest process itself it would rerun pytest; "ddp_spawn" would start fresh processes for fit, validate
    and test each.)"""
    config = compose_run_config([*overrides, "trainer.devices=2", "trainer.strategy=ddp"])
    OmegaConf.save(config, tmp_path / "ddp.yaml")
    finished = subprocess.run(
        [sys.executable, "-m", "tests.distributed_run", str(tmp_path / "ddp.yaml"), str(tmp_path / "ddp")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in finished.stderr
    return weights(tmp_path / "ddp")


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_two_processes_train_the_weights_of_one_process_at_the_same_global_batch(tmp_path):
    two_processes = train_in_two_processes(TINY_LM, tmp_path)
    run_training(compose_run_config([*TINY_LM, "+trainer.micro_batch_size=2"]), tmp_path / "accumulated")
    run_training(compose_run_config(TINY_LM), tmp_path / "whole")
    assert_same_weights(two_processes, weights(tmp_path / "accumulated"))
    assert_same_weights(two_processes, weights(tmp_path / "whole"))
    # validation at the same optimizer steps (Lightning counts its interval in micro-batches), on every sequence
    logged = [
        pd.read_csv(tmp_path / run / "metrics.csv")[["step", "val/loss"]].dropna()
        for run in ("ddp", "accumulated", "whole")
    ]
    for other in logged[1:]:
        assert list(other["step"]) == list(logged[0]["step"])
        np.testing.assert_allclose(other["val/loss"], logged[0]["val/loss"], **TOLERANCE)


@pytest.mark.slow
def test_two_processes_train_mqar_as_one(tmp_path):
    two_processes = train_in_two_processes(TINY_MQAR, tmp_path)
    run_training(compose_run_config(TINY_MQAR), tmp_path / "whole")
    assert_same_weights(two_processes, weights(tmp_path / "whole"))


def test_accumulation_trains_mqar_as_one_whole_batch(tmp_path):
    run_training(compose_run_config([*TINY_MQAR, "+trainer.micro_batch_size=1"]), tmp_path / "accumulated")
    run_training(compose_run_config(TINY_MQAR), tmp_path / "whole")
    assert_same_weights(weights(tmp_path / "accumulated"), weights(tmp_path / "whole"))


# --- each rank's slice of the global batch ------------------------------------------------------------------------


def fake_trainer(rank: int, world_size: int, accumulation: int) -> SimpleNamespace:
    """The trainer attributes tasks.training_position reads."""
    return SimpleNamespace(global_step=0, global_rank=rank, world_size=world_size, accumulate_grad_batches=accumulation)


def first_batches(datamodule, count: int, trainer=None) -> list:
    datamodule.trainer = trainer
    batches = iter(datamodule.train_dataloader())
    return [next(batches) for _ in range(count)]


def padded(tensor: torch.Tensor, width: int, fill: int) -> torch.Tensor:
    return torch.nn.functional.pad(tensor, (0, width - tensor.shape[1]), value=fill)


def global_batches_of(make_datamodule, world_size: int, accumulation: int, steps: int) -> list:
    """Each step's micro-batches of every rank, rank-major, joined into one batch, padded to the single process's."""
    whole = first_batches(make_datamodule(), steps)
    parts = [
        first_batches(make_datamodule(), steps * accumulation, fake_trainer(rank, world_size, accumulation))
        for rank in range(world_size)
    ]
    joined = []
    for step, (inputs, _) in enumerate(whole):
        micro = [part[step * accumulation + index] for part in parts for index in range(accumulation)]
        joined.append(
            (
                torch.cat([padded(batch[0], inputs.shape[1], 0) for batch in micro]),
                torch.cat([padded(batch[1], inputs.shape[1], IGNORE_INDEX) for batch in micro]),
            )
        )
    return whole, joined


@pytest.mark.parametrize("world_size, accumulation", [(2, 1), (1, 4), (2, 2), (4, 2)])
@pytest.mark.parametrize("family", ["formal_language", "mqar"])
def test_every_rank_reads_its_slice_of_the_same_global_batch(family, world_size, accumulation):
    """The samples of a step are the single process's (unchanged: committed reports regenerate from them), whatever
    the number of processes and accumulation steps; formal-language micro-batches are padded to their own longest."""
    make = {
        "formal_language": lambda: FormalLanguageDataModule("parity", batch_size=8, val_samples=8, test_samples=8),
        "mqar": lambda: MQARDataModule(MQAR_TASK, 8),
    }[family]
    whole, joined = global_batches_of(make, world_size, accumulation, steps=3)  # 3 steps: an MQAR epoch is 2 batches
    for (inputs, targets), (joined_inputs, joined_targets) in zip(whole, joined):
        assert torch.equal(inputs, joined_inputs) and torch.equal(targets, joined_targets)


def test_a_global_batch_that_does_not_split_over_the_ranks_fails_before_training():
    with pytest.raises(ValueError, match="does not split"):
        first_batches(FormalLanguageDataModule("parity", batch_size=6), 1, fake_trainer(0, 4, 1))


# --- batch size, micro-batch and accumulation ---------------------------------------------------------------------


def trainer_config(**changes):
    return compose_run_config(
        [*TINY_LM, *(f"{'+' * (key in NEW_KEYS)}trainer.{key}={value}" for key, value in changes.items())]
    ).trainer


NEW_KEYS = {"micro_batch_size", "num_nodes", "compile", "fsdp_sharding"}


@pytest.mark.parametrize(
    "changes, accumulation",
    [
        ({}, 1),  # micro-batch = global / world size
        ({"micro_batch_size": 1}, 4),
        ({"batch_size": 256, "devices": 8, "num_nodes": 4}, 1),  # the paper: 32 GPUs x 8 sequences
        ({"batch_size": 256, "devices": 8, "num_nodes": 2, "micro_batch_size": 4}, 4),
    ],
)
def test_accumulation_is_the_global_batch_over_micro_batches_and_processes(changes, accumulation):
    assert batch_split(trainer_config(**changes)).accumulation == accumulation


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"batch_size": 6, "devices": 4},
            "batch_size=6 (the global batch) does not split over devices=4 x num_nodes=1 = 4 "
            "processes; valid: a batch_size divisible by 4",
        ),
        (
            {"batch_size": 256, "devices": 8, "num_nodes": 2, "micro_batch_size": 5},
            "micro_batch_size=5 does not divide the 16 sequences of each process (batch_size=256 over devices=8 x num_nodes=2) "
            "into whole accumulation steps; valid: a divisor of 16",
        ),
    ],
)
def test_a_batch_that_does_not_split_is_named_at_validation(changes, message):
    with pytest.raises(ConfigError) as caught:
        validate_run_config(
            compose_run_config(
                [*TINY_LM, *(f"{'+' * (key in NEW_KEYS)}trainer.{key}={value}" for key, value in changes.items())]
            )
        )
    assert str(caught.value) == f"trainer.{message}"


def test_the_new_trainer_keys_are_checked():
    with pytest.raises(
        ConfigError, match=r"trainer.fsdp_sharding='SHARDED' is not valid; valid choices: \['FULL_SHARD'"
    ):
        validate_run_config(compose_run_config([*TINY_LM, "+trainer.fsdp_sharding=SHARDED"]))
    with pytest.raises(ConfigError, match=r"trainer.compile='yes' must be true or false or one of \['auto'\]"):
        validate_run_config(compose_run_config([*TINY_LM, "+trainer.compile=yes"]))


def test_fsdp_sharding_choices_are_torchs():
    from torch.distributed.fsdp import ShardingStrategy

    from experiments.config.run_schema import FSDP_SHARDING

    assert set(FSDP_SHARDING) == set(ShardingStrategy.__members__)


# --- precision, FSDP and torch.compile per model ------------------------------------------------------------------

AUTOCAST = ["xlstm_1_0", "xlstm_7_1", "llama", "gpt3", "mamba", "rwkv4"]  # "Mixed Precision training with bfloat16"
FSDP_PARAM_DTYPE = ["hgrn", "gla", "hgrn2", "rwkv5", "rwkv6"]  # "FSDP parameter precision bfloat16"
NOT_COMPILED = ["llama", "gpt3", "hgrn", "gla", "hgrn2"]  # Transformers, flash-linear-attention


def test_the_policies_name_known_models_and_follow_the_paper():
    assert set(TRAINING_POLICIES) <= set(known_backbones())
    for name in known_backbones():
        policy = training_policy(name)
        assert policy.compile == (name not in NOT_COMPILED), name
        assert policy.autocast == (name not in FSDP_PARAM_DTYPE), name
    with pytest.raises(ValueError, match="unknown backbone 'bert'; valid choices"):
        training_policy("bert")


def paper_trainer(name: str, **changes):
    return compose_run_config(
        [
            f"model={name}",
            "task=lm_sample",
            "trainer.precision=bf16-mixed",
            "trainer.strategy=fsdp",
            *(f"+trainer.{key}={value}" for key, value in changes.items()),
        ]
    )


@pytest.mark.parametrize("name", AUTOCAST + FSDP_PARAM_DTYPE)
def test_fsdp_gets_the_papers_sharding_and_mixed_precision_per_model(name):
    config = paper_trainer(name)
    precision, strategy = precision_and_strategy(config.trainer, name)
    assert strategy.sharding_strategy.name == "SHARD_GRAD_OP"  # the paper's default
    mixed = strategy.mixed_precision
    assert (mixed.param_dtype, mixed.reduce_dtype, mixed.buffer_dtype) == (
        torch.bfloat16,
        torch.float32,
        torch.bfloat16,
    )
    assert precision == ("bf16-mixed" if name in AUTOCAST else "32-true")  # 32-true: float32 weights, no autocast


def test_small_models_take_no_shard_and_float32_runs_no_mixed_precision():
    _, strategy = precision_and_strategy(paper_trainer("xlstm_1_0", fsdp_sharding="NO_SHARD").trainer, "xlstm_1_0")
    assert strategy.sharding_strategy.name == "NO_SHARD"
    config = compose_run_config(["model=gla", "task=lm_sample", "trainer.strategy=fsdp"])  # precision 32-true
    precision, strategy = precision_and_strategy(config.trainer, "gla")
    assert precision == "32-true" and strategy.mixed_precision is None


def test_a_bf16_run_of_a_model_that_cannot_autocast_needs_fsdp():
    config = compose_run_config(["model=rwkv5", "task=lm_sample", "trainer.precision=bf16-mixed"])
    with pytest.raises(
        ValueError, match="model 'rwkv5' trains in bfloat16 through FSDP's parameter dtype.*needs trainer.strategy=fsdp"
    ):
        distributed_trainer_arguments(config)
    config = compose_run_config(["model=rwkv4", "task=lm_sample", "trainer.precision=bf16-mixed"])
    assert precision_and_strategy(config.trainer, "rwkv4") == ("bf16-mixed", "auto")
    with pytest.raises(
        ValueError, match="trainer.strategy=fsdp trains with trainer.precision bf16-mixed .* or 32-true, not '16-mixed'"
    ):
        precision_and_strategy(
            OmegaConf.merge(paper_trainer("xlstm_1_0").trainer, {"precision": "16-mixed"}), "xlstm_1_0"
        )


@pytest.mark.parametrize("name", ["xlstm_7_1", "mamba", "rwkv5", "llama", "gla"])
def test_auto_compiles_the_papers_models_on_cuda_only(name):
    gpu = compose_run_config([f"model={name}", "trainer.accelerator=gpu"]).trainer
    assert compiles(gpu, name) == (name not in NOT_COMPILED)
    assert not compiles(compose_run_config([f"model={name}", "trainer.accelerator=cpu"]).trainer, name)
    forced = compose_run_config([f"model={name}", "trainer.accelerator=cpu", "+trainer.compile=true"]).trainer
    assert compiles(forced, name)
    assert not compiles(
        compose_run_config([f"model={name}", "trainer.accelerator=gpu", "+trainer.compile=false"]).trainer, name
    )


def test_compile_true_compiles_the_network_in_place_and_keeps_its_checkpoint_names():
    network = build_backbone("xlstm_1_0", embedding_dim=16, num_blocks=1)
    names = list(network.state_dict())
    trainer = compose_run_config(["model=xlstm_1_0", "trainer.accelerator=cpu", "+trainer.compile=true"]).trainer
    assert compile_network(network, trainer, "xlstm_1_0") is network
    assert network._compiled_call_impl is not None and list(network.state_dict()) == names
    eager = build_backbone("xlstm_1_0", embedding_dim=16, num_blocks=1)
    compile_network(eager, compose_run_config(["model=xlstm_1_0", "trainer.accelerator=cpu"]).trainer, "xlstm_1_0")
    assert eager._compiled_call_impl is None


@pytest.mark.slow
def test_a_compiled_network_computes_what_the_eager_one_does():
    """torch.compile (inductor) on CPU: about 40 s for one tiny xLSTM block."""
    torch.manual_seed(0)
    network = build_backbone("xlstm_1_0", embedding_dim=16, num_blocks=1)
    inputs = torch.randn(2, 8, 16)  # (B, S, D)
    eager = network(inputs)
    network.compile()
    torch.testing.assert_close(network(inputs), eager, rtol=1e-5, atol=1e-5)


def test_a_run_on_one_cpu_keeps_todays_trainer():
    arguments = distributed_trainer_arguments(compose_run_config(TINY_LM))
    assert arguments == {
        "precision": "32-true",
        "accelerator": "cpu",
        "devices": 1,
        "num_nodes": 1,
        "strategy": "auto",
        "accumulate_grad_batches": 1,
    }


# --- multi-node SLURM ---------------------------------------------------------------------------------------------

PAPER_NODES = [
    "hydra.launcher.nodes=8",
    "hydra.launcher.tasks_per_node=8",
    "hydra.launcher.gpus_per_node=8",
    "hydra.launcher.timeout_min=2880",
    "hydra.launcher.partition=gpu",
    "hydra.launcher.account=xlstm",
]


def test_the_slurm_job_of_a_multi_node_paper_run_asks_for_its_nodes_gpus_tasks_time_and_requeue_signal(
    tmp_path, monkeypatch
):
    """The parameters reach sbatch through the sweep's submitit executor, as Hydra's submitit launcher hands them to
    submitit (BaseQueueConf's keys as they are, the others prefixed ``slurm_``); submitit needs an ``srun`` to exist.
    (tests/experiments/sweeps/test_slurm.py submits the same to a fake SLURM.)"""
    from experiments.sweeps.slurm_sweep import submitit_executor
    from experiments.sweeps.sweep import load_launcher

    launcher = load_launcher("slurm", PAPER_NODES)["hydra_launcher"]
    (tmp_path / "srun").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    executor = submitit_executor(launcher, tmp_path / "jobs", "xlstm-suite-spaj15b_model_results")
    script = executor._executor._make_submission_file_text("python -m submitit.core._submit", "job")
    for line in [
        "--nodes=8",
        "--ntasks-per-node=8",
        "--gpus-per-node=8",
        "--time=2880",
        "--partition=gpu",
        "--account=xlstm",
        "--signal=USR1@120",
        "--requeue",
        "--mem-per-gpu=64G",
        "--job-name=xlstm-suite-spaj15b_model_results",
    ]:
        assert f"#SBATCH {line}\n" in script
    assert "export SLURM_KILL_BAD_EXIT=1\n" in script


def test_a_run_whose_processes_are_not_the_jobs_tasks_is_refused_before_submitting():
    from experiments.config.artifacts import load_artifact
    from experiments.sweeps.sweep import check_processes, load_launcher

    paper = load_artifact("spaj15b_model_results")
    with pytest.raises(
        ValueError,
        match=r"trains on trainer.devices=8 processes on each of trainer.num_nodes=1 nodes, "
        r"but the launcher starts tasks_per_node=1 on each of nodes=1",
    ):
        check_processes(paper.runs("paper"), load_launcher("slurm")["hydra_launcher"])
    check_processes(
        paper.runs("paper", ["+trainer.num_nodes=8"]), load_launcher("slurm", PAPER_NODES)["hydra_launcher"]
    )


def test_lightning_runs_under_slurm_with_requeue_on_the_jobs_signal_at_a_step_boundary(monkeypatch, tmp_path):
    """A SLURM task (faked: its environment) gets Lightning's SLURM environment without Lightning's requeue handler
    (which saved inside the signal, and hung), and the callback that requeues at a step boundary on USR1, the signal
    configs/launcher/slurm.yaml asks sbatch for; nothing is launched."""
    import lightning as L
    from lightning.pytorch.plugins.environments import SLURMEnvironment
    from lightning.pytorch.utilities.rank_zero import rank_zero_only
    from lightning_utilities.core.rank_zero import rank_zero_only as utilities_rank_zero_only

    from experiments.training.requeue import RequeueAtStepBoundary, requeue_callbacks

    for rank in (rank_zero_only, utilities_rank_zero_only):  # the Trainer sets the process's rank, 3 here
        monkeypatch.setattr(rank, "rank", rank.rank)
    for name, value in {
        "SLURM_NTASKS": "4",
        "SLURM_NTASKS_PER_NODE": "2",
        "SLURM_JOB_NAME": "hydra_worker",
        "SLURM_NODELIST": "node[1-2]",
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
        "SLURM_JOB_ID": "7",
    }.items():
        monkeypatch.setenv(name, value)
    config = compose_run_config([*TINY_LM, "trainer.devices=2", "+trainer.num_nodes=2", "trainer.strategy=ddp"])
    trainer = L.Trainer(**distributed_trainer_arguments(config), plugins=cluster_plugins(), logger=False)
    environment = trainer.strategy.cluster_environment
    assert isinstance(environment, SLURMEnvironment) and not environment.auto_requeue
    assert (trainer.world_size, trainer.global_rank, trainer.num_nodes) == (4, 3, 2)
    [callback] = requeue_callbacks(tmp_path / "last.ckpt")
    assert isinstance(callback, RequeueAtStepBoundary) and callback.last_checkpoint == tmp_path / "last.ckpt"
    monkeypatch.delenv("SLURM_NTASKS")
    assert requeue_callbacks(tmp_path / "last.ckpt") == []


def test_a_requeued_job_takes_over_the_claim_of_its_earlier_attempt(tmp_path, monkeypatch):
    from experiments.sweeps.claims import release
    from experiments.sweeps.run_store import claim_run

    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "7")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    first = claim_run(tmp_path)  # the first attempt, killed at requeue with its claim fresh
    assert first is not None and claim_run(tmp_path) is None  # the same attempt (another worker of the allocation)
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "4")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert claim_run(tmp_path) is None  # another job's claim lives by its heartbeat
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    second = claim_run(tmp_path)
    assert second is not None and second.token != first.token
    release(second)


def test_the_other_ranks_of_a_job_train_without_claiming(tmp_path):
    """Rank 0 claims and records; another rank trains beside it on rank 0's word (tests/experiments/sweeps/test_slurm.py: a rank whose
    rank 0 did not get the claim does not train)."""
    from experiments.config.artifacts import load_artifact
    from experiments.sweeps.run_execution import train_as_another_rank
    from experiments.sweeps.run_store import CLAIM_FILE, RESULT_FILE, run_directory

    run = load_artifact("sweep-fixture").runs("smoke", ["trainer.num_threads=null"])[0]
    outcome = train_as_another_rank(run, 1, tmp_path, "tests.sweep_fakes.record_run")
    run_dir = run_directory(run, tmp_path)
    assert (
        outcome.status == "done" and (run_dir / "executions.log").exists() and (run_dir / "output-rank1.log").exists()
    )
    assert not (run_dir / CLAIM_FILE).exists() and not (run_dir / RESULT_FILE).exists()  # rank 0's


def test_gradient_clipping_under_fsdp_takes_the_norm_over_all_shards_through_the_root_module():
    """Lightning's FSDP refuses norm clipping (it needs a GPU to run; this checks the hook's two paths on CPU): under
    FSDP the root FSDP module clips, elsewhere Lightning's clipping runs as before."""
    from lightning.pytorch.strategies import FSDPStrategy, SingleDeviceStrategy

    module = build_module(compose_run_config(TINY_MQAR), MQARDataModule(MQAR_TASK, 8).spec)
    clipped = []
    fsdp = FSDPStrategy()
    fsdp.model = SimpleNamespace(clip_grad_norm_=clipped.append)
    module._trainer = SimpleNamespace(strategy=fsdp)
    module.configure_gradient_clipping(None, 1.0, "norm")
    assert clipped == [1.0]
    module._trainer = SimpleNamespace(strategy=SingleDeviceStrategy("cpu"))
    module.clip_gradients = lambda *arguments, **keywords: clipped.append(("lightning", arguments, keywords))
    module.configure_gradient_clipping("optimizer", 1.0, "norm")
    assert clipped[1] == ("lightning", ("optimizer",), {"gradient_clip_val": 1.0, "gradient_clip_algorithm": "norm"})
