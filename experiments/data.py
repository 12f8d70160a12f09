"""The datamodule of a run's task, by task family."""

import lightning as L
from omegaconf import DictConfig


def build_datamodule(task: DictConfig, batch_size: int) -> L.LightningDataModule:
    if task.family == "formal_language":
        from tasks.formal_languages.data import FormalLanguageDataModule

        return FormalLanguageDataModule(
            task_name=task.name,
            batch_size=batch_size,
            train_max_length=task.train_max_length,
            eval_min_length=task.eval_min_length,
            eval_max_length=task.eval_max_length,
            data_seed=task.data_seed,
            val_samples=task.val_samples,
            test_samples=task.test_samples,
        )
    raise ValueError(f"unknown task family {task.family!r}; valid choices: ['formal_language']")
