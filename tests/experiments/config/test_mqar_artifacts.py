"""The MQAR artifacts plan the paper's grids at paper scale (Appendix B.1.2): settings, batch sizes, learning-rate
sets, min lr, steps of 64 epochs, the models of each experiment."""

from collections import Counter

import pytest
from omegaconf import OmegaConf

from experiments.config.artifacts import load_artifact

LR_ABOVE_24 = {1.0e-2, 2.15e-3, 4.6e-4, 1.0e-4}
LR_AT_24 = {1.0e-3, 2.2e-4, 5.0e-5, 1.0e-5}
STEPS = {512: 64 * 195, 256: 64 * 390, 128: 64 * 781, 96: 64 * 1041, 24: 64 * 4166}  # 64 * floor(100000 / BS)


def settings(runs) -> dict:
    """(CL, KV) -> the batch sizes, steps, learning rates and min lr of its runs."""
    found = {}
    for run in runs:
        config = run.config
        entry = found.setdefault((config.task.context_length, config.task.num_kv_pairs), Counter())
        entry[(config.trainer.batch_size, config.trainer.max_steps, config.optim.lr, config.optim.min_lr)] += 1
    return found


def check_common(runs) -> None:
    for run in runs:
        config = run.config
        assert (
            config.task.vocab_size,
            config.model.num_blocks,
            config.task.train_samples,
            config.task.val_samples,
            config.optim.weight_decay,
            config.optim.warmup_fraction,
        ) == (8192, 2, 100000, 3000, 0.1, 0.1)
        assert config.trainer.max_steps == STEPS[config.trainer.batch_size]
        assert config.optim.lr in (LR_AT_24 if config.trainer.batch_size == 24 else LR_ABOVE_24)
        assert config.optim.min_lr == (1.0e-5 if config.trainer.batch_size == 24 else 1.0e-4)
        assert config.model.embedding_dim in (64, 128, 256, 512)


def test_experiment_1_trains_fourteen_models_on_three_joint_settings():
    runs = load_artifact("mqar-app-small").runs("paper")
    check_common(runs)
    assert len(runs) == 14 * 3 * 4 * 4 == 672
    assert {key: {batch for batch, *_ in value} for key, value in settings(runs).items()} == {
        (64, 4): {512},
        (128, 8): {512},
        (256, 16): {256},
    }
    tied = {run.cell["model"]: bool(run.config.model.get("tie_embeddings", False)) for run in runs}
    assert tied["mamba_tied"] and not tied["mamba"] and sum(tied.values()) == 1


def test_experiment_2_and_the_main_figure_cover_the_paper_s_combinations():
    big = load_artifact("mqar-app-big").runs("paper")
    check_common(big)
    combos = settings(big)
    assert sorted(combos) == sorted((cl, kv) for cl in (756, 1024, 2048) for kv in (48, 96, 256) if 4 * kv <= cl)
    assert {run.config.task.context_length for run in big if run.cell["model"] == "llama"} == {2048}
    assert len(big) == 5 * 8 * 16 + 3 * 16 == 688
    main = load_artifact("mqar-main").runs("paper")
    check_common(main)
    assert len(main) == 6 * 3 * 16 == 288

    def unlabelled(run) -> str:  # the config without the artifact's name (part of the run id)
        return OmegaConf.to_yaml({**OmegaConf.to_container(run.config), "artifact": None}, sort_keys=True)

    # the same run configs as Experiment 2's CL 2048 row
    assert {unlabelled(run) for run in main} == {
        unlabelled(run) for run in big if run.config.task.context_length == 2048
    }


@pytest.mark.slow  # plans Experiment 2 to find its training runs (about 15 s)
def test_experiment_3_evaluates_the_three_largest_dimensions_trained_at_2048_on_longer_contexts():
    runs = load_artifact("mqar-app-extrapolate").runs("paper")
    assert len(runs) == 6 * 3 * 3 * 4 * 3 == 648
    assert {run.config.task.context_length for run in runs} == {4096, 6144, 8192}
    assert {run.trained_by.config.task.context_length for run in runs} == {2048}
    assert {run.config.model.embedding_dim for run in runs} == {128, 256, 512}
    assert all(
        run.config.model == run.trained_by.config.model and run.config.evaluate.run_id == run.trained_by.run_id
        for run in runs
    )


def test_the_mini_extrapolation_evaluates_mqar_main_s_mini_runs_at_two_and_four_times_their_length():
    runs = load_artifact("mqar-app-extrapolate").runs("mini")
    trained = {run.run_id for run in load_artifact("mqar-main").runs("mini")}
    assert len(runs) == 2 * len(trained) == 144
    assert {run.trained_by.run_id for run in runs} == trained
    assert {run.config.task.context_length for run in runs} == {128, 256}
    assert {run.trained_by.config.task.context_length for run in runs} == {64}
    assert all(run.config.task.num_kv_pairs == run.trained_by.config.task.num_kv_pairs for run in runs)
