"""Metrics every run records beside its task's: the parameter count (``model/parameters``: the trained module's
parameters, tied weights once). Importing this module imports no torch, so that report layouts can name the metric."""

PARAMETERS_METRIC = "model/parameters"


def count_parameters(model) -> int:
    """The parameters of an nn.Module; a tied weight is yielded once."""
    return sum(parameter.numel() for parameter in model.parameters())
