"""Run configs before any compute: Hydra composition (configuration), the run schema and its torch-free validation,
the compose cache, and the paper artifacts planned into runs (artifacts, cell_composer, arguments)."""
