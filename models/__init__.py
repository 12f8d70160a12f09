"""Backbones: (B, S, D) -> (B, S, D), each with a recurrent step API.

``models.registry`` builds them by name (imports torch); ``models.catalog`` validates their configs by name
without importing torch. The registry's functions are also attributes of this package, imported on first use, so
that ``import models.catalog`` stays torch-free.
"""

_REGISTRY_FUNCTIONS = ("build_backbone", "build_language_model", "known_backbones", "known_language_models")


def __getattr__(name: str):
    if name in _REGISTRY_FUNCTIONS:
        from models import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'models' has no attribute {name!r}")
