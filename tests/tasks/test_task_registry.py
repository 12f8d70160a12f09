"""The task registry: a task's spec (what the training module and the reports need) from its task config alone,
without torch."""

import pytest

from experiments.config.configuration import task_config
from tasks.registry import task_family, task_spec


@pytest.mark.parametrize(
    "name",
    [
        "parity",
        "mqar",
        "nns",
        "slimpajama",
        "offline_docs",
        "lra_listops",
        "lra_retrieval",
        "lra_image_grey",
        "lra_pathfinder",
    ],
)
def test_the_spec_of_a_task_config_is_its_datamodules(name):
    task = task_config(name)
    assert task_spec(task) == task_family(task["family"]).build_datamodule(task, batch_size=4).spec


def test_an_unknown_family_is_named_with_the_valid_choices():
    with pytest.raises(
        ValueError,
        match=r"unknown task family 'lra'; valid choices: \['formal_language', 'lm', "
        r"'lra_image', 'lra_listops', 'lra_pathfinder', 'lra_retrieval', 'mqar', 'nns'\]",
    ):
        task_spec({"family": "lra", "name": "listops"})
