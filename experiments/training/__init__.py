"""One training run: the LightningModule of a sequence task (module), its data from the task registry (data), the
training entry (train) and the `train` command."""
