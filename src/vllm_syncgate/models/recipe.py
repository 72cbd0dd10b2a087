"""Model recipes as data: a TOML file per architecture, and the hash that keys the cache.

A recipe may name a ``base`` recipe whose tables it extends, so a variant states only what
differs. The hash covers the merged recipe, the builder's format version and the versions of the
libraries whose output bytes depend on them, so a cache entry is never reused across any of them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from vllm_syncgate.errors import ConfigError
from vllm_syncgate.reportfiles import user_cache_dir
from vllm_syncgate.tomlfile import read_toml, reject_unknown_keys

ARCHES = ("llama", "qwen2")
DEFAULT_ARCH = "llama"
# Bump when the builder writes different bytes for the same recipe.
BUILDER_VERSION = 1
_BYTE_SHAPING_LIBS = ("torch", "transformers", "tokenizers", "safetensors")
_TOP_KEYS = {"base", "arch", "seed", "dtype", "tokenizer", "model"}


class RecipeError(ConfigError):
    """A model recipe TOML file is invalid."""


@dataclass(frozen=True)
class Recipe:
    """A merged, validated recipe."""

    name: str
    data: dict[str, Any]
    source: str

    @property
    def arch(self) -> str:
        return str(self.data["arch"])

    @property
    def seed(self) -> int:
        return int(self.data["seed"])

    @property
    def tokenizer(self) -> dict[str, Any]:
        return dict(self.data["tokenizer"])

    @property
    def model(self) -> dict[str, Any]:
        return dict(self.data["model"])

    def digest(self) -> str:
        """Short sha256 over everything that shapes the built bytes."""
        versions = {}
        for lib in _BYTE_SHAPING_LIBS:
            try:
                versions[lib] = metadata.version(lib)
            except metadata.PackageNotFoundError:
                versions[lib] = None
        payload = {"builder": BUILDER_VERSION, "recipe": self.data, "libs": versions}
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def recipe_path(arch: str) -> Path:
    return Path(str(resources.files("vllm_syncgate.models") / "recipes" / f"{arch}.toml"))


def load_recipe(arch: str = DEFAULT_ARCH) -> Recipe:
    """Load a built-in recipe by architecture name, resolving its ``base`` chain."""
    if arch not in ARCHES:
        expected = ", ".join(ARCHES)
        raise RecipeError("--arch", "arch", f"unknown architecture {arch!r} (expected {expected})")
    path = recipe_path(arch)
    data = _resolve(path, seen=())
    for key in ("arch", "seed", "dtype", "tokenizer", "model"):
        if key not in data:
            raise RecipeError(path, key, "missing")
    if data["dtype"] != "float32":
        raise RecipeError(path, "dtype", "only float32 gives exact parity with the HF reference")
    if data["arch"] not in ARCHES:
        raise RecipeError(path, "arch", f"must be one of {', '.join(ARCHES)}")
    return Recipe(name=arch, data=data, source=str(path))


def _resolve(path: Path, seen: tuple[str, ...]) -> dict[str, Any]:
    data = read_toml(path, RecipeError)
    reject_unknown_keys(data, _TOP_KEYS, where="", source=path, error=RecipeError)
    base = data.pop("base", None)
    if base is None:
        return data
    if base in seen:
        raise RecipeError(path, "base", f"recipe chain loops through {base!r}")
    return _merge(_resolve(path.with_name(f"{base}.toml"), (*seen, base)), data)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def cached_model_dir(recipe: Recipe) -> Path:
    return user_cache_dir() / "models" / recipe.digest()
