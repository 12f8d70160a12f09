"""Planning a grid composes once per cell structure (and once ever, with the disk cache), and every cell's config is
the one a full compose gives."""

import json
import multiprocessing
import shutil
import sys
import threading

import pytest
from omegaconf import OmegaConf

import experiments.config.cell_composer as cell_composer
from experiments.config import compose_cache, configuration
from experiments.config.artifacts import load_artifact, run_id_of
from experiments.config.configuration import CONFIGS, ConfigError, compose_run_config, config_yaml
from experiments.stop_signals import stop_signals_raise


@pytest.fixture
def compose_count(monkeypatch):
    """The composes of a plan, counted with the disk caches off (a test of the cache sets a folder of its own), all
    in this process (no prefetch in child processes, whose composes this list would not see)."""
    monkeypatch.setenv("XLSTM_SUITE_COMPOSE_CACHE", "off")
    monkeypatch.setattr(cell_composer, "usable_cpus", lambda: 1)
    calls = []
    compose = cell_composer.compose_unresolved

    def counting(overrides):
        calls.append(list(overrides))
        return compose(overrides)

    monkeypatch.setattr(cell_composer, "compose_unresolved", counting)
    return calls


def test_cells_that_differ_in_learning_rate_and_seed_share_a_compose_and_equal_a_full_compose(compose_count):
    runs = load_artifact("sweep-fixture").runs("paper")  # 3 models x 2 tasks x 3 lrs x 2 seeds
    assert len(runs) == 36 and len(compose_count) == 6
    for run in runs:
        full = compose_run_config(run.overrides)
        assert config_yaml(run.config) == config_yaml(full), run.label
        assert run.run_id == run_id_of(full)
        assert run.config.optim.lr == run.cell["optim.lr"] and run.config.seed == run.cell["seed"]


@pytest.mark.slow  # minutes of the default suite's 10 (make test-slow)
def test_an_interpolation_that_reads_a_grid_value_composes_every_cell(compose_count):
    runs = load_artifact("sweep-fixture").runs("paper", ["optim.min_lr=${optim.lr}"])
    assert all(run.overrides in compose_count for run in runs)
    assert len(compose_count) == 36 + 6  # and each structure once, where the interpolation was found
    assert all(run.config.optim.min_lr == run.cell["optim.lr"] for run in runs)


def test_the_first_cell_of_every_model_is_composed_first(compose_count):
    with pytest.raises(ConfigError, match="divisible by mlstm.num_heads=5"):  # xlstm_0_1 has no mLSTM block
        load_artifact("sweep-fixture").runs("paper", ["+model.options.mlstm.num_heads=5"])
    assert [overrides[:2] for overrides in compose_count] == [
        ["model=xlstm_0_1", "task=parity"],
        ["model=xlstm_1_0", "task=parity"],
    ]


def test_a_malformed_override_is_named():
    with pytest.raises(ConfigError, match="malformed override 'seed'"):
        load_artifact("sweep-fixture").runs("paper", ["seed"])


def test_a_second_plan_reads_the_disk_cache_and_gives_the_same_runs(compose_count, tmp_path, monkeypatch):
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    first = load_artifact("sweep-fixture").runs("paper")
    composed = len(compose_count)
    second = load_artifact("sweep-fixture").runs("paper")
    assert composed == 6 and len(compose_count) == composed  # the second plan composed nothing
    assert [config_yaml(run.config) for run in second] == [config_yaml(run.config) for run in first]
    assert [run.run_id for run in second] == [run.run_id for run in first]
    assert all(OmegaConf.is_struct(run.config) for run in second)


def test_the_cache_key_changes_with_any_config_file(tmp_path, monkeypatch):
    tree = tmp_path / "configs"
    shutil.copytree(CONFIGS, tree)
    monkeypatch.setattr(compose_cache, "CONFIGS", tree)
    before = compose_cache.tree_fingerprint.__wrapped__()
    (tree / "optim" / "adamw.yaml").write_text((tree / "optim" / "adamw.yaml").read_text() + "\n# edited\n")
    assert compose_cache.tree_fingerprint.__wrapped__() != before


def test_the_cache_key_keeps_when_an_artifact_file_changes(tmp_path, monkeypatch):
    """configs/paper holds the artifacts' grids, which no run's compose reads: editing one keeps every entry."""
    tree = tmp_path / "configs"
    shutil.copytree(CONFIGS, tree)
    monkeypatch.setattr(compose_cache, "CONFIGS", tree)
    monkeypatch.setattr(compose_cache, "ARTIFACTS", tree / "paper")
    before = compose_cache.tree_fingerprint.__wrapped__()
    artifact_file = tree / "paper" / "mqar-main.yaml"
    artifact_file.write_text(artifact_file.read_text() + "\n# edited\n")
    assert compose_cache.tree_fingerprint.__wrapped__() == before


def test_overrides_that_read_the_artifacts_folder_as_a_group_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    files_read = {CONFIGS / "train.yaml"}
    for overrides in (["+paper=mqar-main"], ["model=llama", "paper@extra=lmeval"], ["~paper"]):
        compose_cache.store(overrides, {"seed": 0}, interpolated=False, files_read=files_read)
        assert compose_cache.load(overrides) is None, overrides
    compose_cache.store(["model=llama", "task.paper_like=1"], {"seed": 0}, interpolated=False, files_read=files_read)
    assert compose_cache.load(["model=llama", "task.paper_like=1"]) == ({"seed": 0}, False)


@pytest.fixture
def copied_configs(tmp_path, monkeypatch):
    """configs/ copied to a folder that the composes and the cache read, with a disk cache of the test's own (after
    compose_count, which switches the cache off)."""
    tree = tmp_path / "configs"
    shutil.copytree(CONFIGS, tree)
    for module in (configuration, compose_cache):
        monkeypatch.setattr(module, "CONFIGS", tree)
    monkeypatch.setattr(compose_cache, "ARTIFACTS", tree / "paper")
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    compose_cache.names_fingerprint.cache_clear()
    yield tree
    compose_cache.names_fingerprint.cache_clear()


def test_editing_one_config_file_composes_again_only_the_configs_that_read_it(compose_count, copied_configs):
    """Two models' structures are cached; editing one model's file composes that model's again, from the edited
    file, and reads the other's from the cache."""
    grid = [["model=llama", "task=parity"], ["model=mamba", "task=parity"]]
    for overrides in grid:
        cell_composer.CellComposer()(overrides)
    edited = copied_configs / "model" / "mamba.yaml"
    width = OmegaConf.load(edited).embedding_dim
    edited.write_text(edited.read_text().replace(f"embedding_dim: {width}", f"embedding_dim: {width + 8}"))
    compose_count.clear()
    configs = [cell_composer.CellComposer()(overrides) for overrides in grid]
    assert compose_count == [grid[1]]
    assert configs[1]["model"]["embedding_dim"] == width + 8
    assert configs == [OmegaConf.to_container(compose_run_config(overrides)) for overrides in grid]


def test_a_config_file_added_to_the_tree_composes_every_config_again(compose_count, copied_configs):
    """A new file may change what a group choice finds (a search path folder's file of the same name): the cache
    keys every entry by the tree's file names."""
    cell_composer.CellComposer()(["model=llama", "task=parity"])
    (copied_configs / "model" / "llama_variant.yaml").write_text((copied_configs / "model" / "llama.yaml").read_text())
    compose_cache.names_fingerprint.cache_clear()
    compose_count.clear()
    cell_composer.CellComposer()(["model=llama", "task=parity"])
    assert compose_count == [["model=llama", "task=parity"]]


def test_the_cache_can_be_switched_off(compose_count, monkeypatch):
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, "off")
    assert compose_cache.cache_folder() is None
    runs = load_artifact("sweep-fixture").runs("smoke")
    load_artifact("sweep-fixture").runs("smoke")
    assert len(compose_count) == 2 * len(runs) == 12


@pytest.mark.parametrize(
    "entry",
    [
        "{}",
        "[]",
        "null",
        '{"config": {}, "struct": true, "interpolated": false, "overrides": []}',
        '{"config": 1, "struct": true}',
        "{not json",
        "",
    ],
    ids=["empty-object", "list", "null", "empty-config", "mistyped", "garbage", "empty-file"],
)
def test_a_cache_entry_that_does_not_validate_is_ignored_with_one_warning_and_replaced(
    entry, compose_count, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    expected = [run.run_id for run in load_artifact("sweep-fixture").runs("smoke")]
    plans = tmp_path / "cache" / "plans"  # the planned grid (experiments.config.plan_cache): removed, to compose again
    entries = sorted(path for path in (tmp_path / "cache").rglob("*.json") if plans not in path.parents)
    entries[0].write_text(entry)
    shutil.rmtree(plans)
    capsys.readouterr()
    assert [run.run_id for run in load_artifact("sweep-fixture").runs("smoke")] == expected
    warnings = [line for line in capsys.readouterr().err.splitlines() if "compose cache entry" in line]
    assert len(warnings) == 1 and str(entries[0]) in warnings[0] and "composing again" in warnings[0]
    assert (
        compose_cache.entry_problem(json.loads(entries[0].read_text()), ["x"]) == "an entry of other overrides"
    )  # replaced
    shutil.rmtree(plans)
    load_artifact("sweep-fixture").runs("smoke")
    assert "compose cache entry" not in capsys.readouterr().err  # the replaced entry reads back


def test_a_prefetched_plan_is_composed_in_child_processes_and_equals_the_serial_plan(
    compose_count, tmp_path, monkeypatch
):
    serial = load_artifact("sweep-fixture").runs("paper")
    assert len(compose_count) == 6
    compose_count.clear()  # the counting compose is this process's: the children's composes do not show
    monkeypatch.setenv(compose_cache.CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(cell_composer, "usable_cpus", lambda: 2)
    monkeypatch.setattr(cell_composer, "PARALLEL_FROM", 2)  # the fixture's grid has 6 structures
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # as the commands plan: before torch is imported
    spinning = threading.Event()
    spinning.set()

    def spinner():  # as the command's progress spinner: another thread, writing to the streams as children fork
        while spinning.is_set():
            sys.stdout.write("\r-")
            sys.stdout.flush()

    thread = threading.Thread(target=spinner)
    thread.start()
    try:
        prefetched = load_artifact("sweep-fixture").runs("paper")
    finally:
        spinning.clear()
        thread.join()
    assert compose_count == []
    assert [run.run_id for run in prefetched] == [run.run_id for run in serial]
    assert [config_yaml(run.config) for run in prefetched] == [config_yaml(run.config) for run in serial]
    (tmp_path / "cache" / "plans").rename(tmp_path / "plans of the first plan")  # plan again, from the entries
    monkeypatch.setattr(cell_composer, "usable_cpus", lambda: 1)
    assert [run.run_id for run in load_artifact("sweep-fixture").runs("paper")] == [run.run_id for run in serial]
    assert compose_count == []  # the children's entries were kept on disk


def test_a_prefetched_plan_names_a_bad_override_as_the_serial_plan_does_and_leaves_no_child(monkeypatch):
    """As the command line plans (its stop signals handled), where a Pool's end of the children once hung."""
    monkeypatch.setattr(cell_composer, "PARALLEL_FROM", 2)  # the fixture's grid has 6 structures
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # as the commands plan: before torch is imported
    messages = []
    for cpus in (1, 2, 2, 2):
        monkeypatch.setattr(cell_composer, "usable_cpus", lambda cpus=cpus: cpus)
        with stop_signals_raise(), pytest.raises(ConfigError) as raised:
            load_artifact("sweep-fixture").runs("paper", ["+model.options.mlstm.num_heads=5", f"seed={cpus}"])
        messages.append(str(raised.value).replace(f"seed={cpus}", "seed=N"))
        assert multiprocessing.active_children() == []
    assert "divisible by mlstm.num_heads=5" in messages[0] and set(messages[1:]) == {messages[0]}
