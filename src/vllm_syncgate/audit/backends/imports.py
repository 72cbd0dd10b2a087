"""Run a callback right after a named module is imported, without importing it ourselves.

The plugin loads in the API server too, which never imports a model runner; patching lazily keeps
that process untouched. A finder at the front of ``sys.meta_path`` wraps the real loader of a
watched module so that the callback runs once its body has executed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

ModuleCallback = Callable[[ModuleType], None]


class _CallbackLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, callback: ModuleCallback) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... for inspect
        return getattr(self._loader, name)


class PostImportHook(importlib.abc.MetaPathFinder):
    """Calls ``callback(module)`` after each watched module is imported (or now, if it was)."""

    def __init__(self, names: Sequence[str], callback: ModuleCallback) -> None:
        self._names = frozenset(names)
        self._callback = callback

    def install(self) -> None:
        sys.meta_path.insert(0, self)
        for name in sorted(self._names):
            module = sys.modules.get(name)
            if module is not None:
                self._callback(module)

    def uninstall(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _CallbackLoader(spec.loader, self._callback)
                return spec
        return None
