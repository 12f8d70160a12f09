"""Task data: generators, loaders, LightningDataModules and task specs (filled by the task issues)."""
