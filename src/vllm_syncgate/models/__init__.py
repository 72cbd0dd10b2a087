"""Deterministic tiny models built offline: recipes as TOML, a cache keyed by the recipe hash."""

from vllm_syncgate.models.build import ModelInfo, build_model, ensure_model, inspect_model_dir
from vllm_syncgate.models.recipe import ARCHES, DEFAULT_ARCH, Recipe, RecipeError, load_recipe

__all__ = [
    "ARCHES",
    "DEFAULT_ARCH",
    "ModelInfo",
    "Recipe",
    "RecipeError",
    "build_model",
    "ensure_model",
    "inspect_model_dir",
    "load_recipe",
]
