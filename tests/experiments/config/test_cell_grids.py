"""Cell grids (settings that go together, a value set per another key's value) and exclusions of an artifact's grid."""

import textwrap

import pytest

from experiments.config.artifacts import artifact_from_yaml

BASE = """\
artifact: {name}
grid:
  model: [llama, xlstm_1_0]
  task: [mqar]
  task.context_length: [64, 128, 256]
  seed: [0]
cell_grids:
  task.context_length:
    64: {{task.num_kv_pairs: [4], trainer.batch_size: [512]}}
    128: {{task.num_kv_pairs: [8], trainer.batch_size: [512]}}
    256: {{task.num_kv_pairs: [16], trainer.batch_size: [24]}}
  trainer.batch_size:
    512: {{optim.lr: [1.0e-2, 1.0e-3]}}
    24: {{optim.lr: [1.0e-4]}}
overrides: [model.num_blocks=2, trainer.max_steps=10, model.embedding_dim=16]
{extra}
"""


def write(tmp_path, extra: str = "", name: str = "joint") -> object:
    path = tmp_path / f"{name}.yaml"
    path.write_text(BASE.format(name=name, extra=textwrap.dedent(extra)))
    return artifact_from_yaml(path)


def test_a_cell_grid_adds_its_keys_to_the_cells_of_its_value_only(tmp_path):
    artifact = write(tmp_path)
    cells = artifact.cells("paper")
    settings = {
        (
            cell["model"],
            cell["task.context_length"],
            cell["task.num_kv_pairs"],
            cell["trainer.batch_size"],
            cell["optim.lr"],
        )
        for cell in cells
    }
    assert len(cells) == len(settings) == 2 * (2 + 2 + 1)  # joint (CL, KV, BS), then the lr set of each batch size
    assert ("llama", 64, 4, 512, 1.0e-3) in settings and ("xlstm_1_0", 256, 16, 24, 1.0e-4) in settings
    assert not any(cl == 256 and lr != 1.0e-4 for _, cl, _, _, lr in settings)
    assert artifact.cell_keys("paper") == [
        "model",
        "task",
        "task.context_length",
        "seed",
        "task.num_kv_pairs",
        "trainer.batch_size",
        "optim.lr",
    ]


def test_cells_with_cell_grid_keys_compose_with_those_values(tmp_path):
    runs = write(tmp_path, "scales: {paper: {}}").runs("paper")
    run = next(run for run in runs if run.cell["task.context_length"] == 256)
    assert run.config.task.num_kv_pairs == 16 and run.config.trainer.batch_size == 24 and run.config.optim.lr == 1.0e-4
    assert len({run.run_id for run in runs}) == len(runs)


def test_exclusion_rules_drop_the_matching_cells(tmp_path):
    artifact = write(
        tmp_path,
        """\
        exclude:
          - {model: llama, task.context_length: [64, 128]}
        """,
    )
    cells = artifact.cells("paper")
    assert {cell["task.context_length"] for cell in cells if cell["model"] == "llama"} == {256}
    assert len(cells) == 5 + 1


def test_a_scale_replaces_cell_grids_by_key_and_the_exclusions_as_a_whole(tmp_path):
    artifact = write(
        tmp_path,
        """\
        exclude: [{model: llama}]
        scales:
          smoke:
            grid: {task.context_length: [32]}
            cell_grids:
              task.context_length:
                32: {task.num_kv_pairs: [2], trainer.batch_size: [24]}
            exclude: []
        """,
    )
    assert [(cell["model"], cell["task.num_kv_pairs"], cell["optim.lr"]) for cell in artifact.cells("smoke")] == [
        ("llama", 2, 1.0e-4),
        ("xlstm_1_0", 2, 1.0e-4),
    ]
    assert {cell["model"] for cell in artifact.cells("paper")} == {"xlstm_1_0"}


def test_a_cell_grid_given_as_a_list_adds_those_cells_only(tmp_path):
    """Values that go together (a model size with the learning rate the paper gives it) as a list of cells."""
    path = tmp_path / "sizes.yaml"
    path.write_text(
        textwrap.dedent("""\
        artifact: sizes
        grid:
          model: [llama, xlstm_1_0]
        cell_grids:
          model:
            llama: [{model.embedding_dim: 16, optim.lr: 3.0e-3}, {model.embedding_dim: 32, optim.lr: 1.5e-3}]
            xlstm_1_0: [{model.embedding_dim: 16, optim.lr: 3.0e-3}]
        overrides: [task=mqar, model.num_blocks=2, trainer.max_steps=10]
        scales: {smoke: {}}
        """)
    )
    artifact = artifact_from_yaml(path)
    settings = [(cell["model"], cell["model.embedding_dim"], cell["optim.lr"]) for cell in artifact.cells("smoke")]
    assert settings == [("llama", 16, 3.0e-3), ("llama", 32, 1.5e-3), ("xlstm_1_0", 16, 3.0e-3)]
    runs = artifact.runs("smoke")
    assert [(run.config.model.name, run.config.model.embedding_dim, run.config.optim.lr) for run in runs] == settings


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            "scales: {smoke: {grid: {task.context_length: [32]}}}",
            "cell_grids.task.context_length has no grid for task.context_length=32 (at scale 'smoke'); it has grids for "
            "['128', '256', '64']",
        ),
        (
            "scales: {mini: {cell_grids: {model.embedding_dim: {16: {optim.lr: [1]}}}}}",
            "cell_grids.model.embedding_dim: 'model.embedding_dim' is not a key of the grid (at scale 'mini')",
        ),
        (
            "scales: {mini: {cell_grids: {task.context_length: {64: {model: [llama]}, 128: {}, 256: {}}}}}",
            "cell_grids.task.context_length.64: 'model' is already a key of the cell",
        ),
        (
            "scales: {mini: {cell_grids: {task.context_length: {64: {task.num_kv_pairs: 4}, 128: {}, 256: {}}}}}",
            "cell_grids.task.context_length.64.task.num_kv_pairs must be a non-empty list of values, got 4",
        ),
        (
            "scales: {mini: {cell_grids: {model: {llama: [], xlstm_1_0: []}}}}",
            "cell_grids.model.llama must be a non-empty list of cells (key -> value), got []",
        ),
        (
            "scales: {mini: {cell_grids: {model: {llama: [{optim.lr: 1}, {optim.eps: 1}], xlstm_1_0: {}}}}}",
            "cell_grids.model.llama: every cell of the list must have the same keys",
        ),
        (
            "scales: {mini: {cell_grids: {model: {llama: [{seed: 1}], xlstm_1_0: {}}}}}",
            "cell_grids.model.llama: 'seed' is already a key of the cell",
        ),
        (
            "exclude: [{model: lama}]",
            "exclude[0]: no cell has model=lama (at scale 'smoke'); its values: ['llama', 'xlstm_1_0']",
        ),
        ("exclude: [{optim.lrr: 1}]", "exclude[0]: 'optim.lrr' is not a cell key (at scale 'smoke')"),
        ("exclude: [llama]", "exclude[0] must map cell keys to a value or a list of values, got 'llama'"),
        ("scales: {mini: {grids: {}}}", "scales.mini: unknown keys ['grids']"),
    ],
)
def test_bad_cell_grids_and_exclusions_fail_when_the_artifact_loads(tmp_path, extra, message):
    with pytest.raises(ValueError) as error:
        write(tmp_path, extra)
    assert message in str(error.value)
    assert str(tmp_path / "joint.yaml") in str(error.value)
