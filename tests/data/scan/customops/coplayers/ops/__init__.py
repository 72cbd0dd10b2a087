"""The ops package re-exports its kernels' entry points, as FLA's ``ops/__init__.py`` does."""

from .scan_chunk import scan_chunks

__all__ = ["scan_chunks"]
