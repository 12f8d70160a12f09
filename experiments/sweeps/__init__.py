"""The sweep runner: planned runs executed locally or through Hydra's submitit launcher, claims, the run store and
the sweep's status (`sweep`, `list`). Training is reached only through the run function's dotted path."""
