"""Backbones: (B, S, D) -> (B, S, D), each with a recurrent step API; built by name from the registry."""

from models.registry import build_backbone, build_language_model, known_backbones, known_language_models

__all__ = ["build_backbone", "build_language_model", "known_backbones", "known_language_models"]
