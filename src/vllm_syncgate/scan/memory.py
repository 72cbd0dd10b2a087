"""The scan's memory behaviour: a scan allocates millions of long-lived AST nodes at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collector() -> Iterator[None]:
    """Run the block without the cyclic garbage collector.

    A cold scan builds about two million AST nodes that live until it ends; each full
    collection while they are alive walks all of them again, a quarter of a cold scan's CPU
    time. What the block leaves unreachable is collected after it, as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def left_to_exit() -> Iterator[None]:
    """Run the block of a process that ends right after it without the cyclic collector, and
    never walk what the block leaves behind.

    A cold scan's AST nodes (about two million objects, most of them in reference cycles
    through the index) become garbage when it returns; a collection that finds and frees them
    costs about a tenth of the scan. The operating system takes the memory back at exit
    instead. Only for a process's own command line: a caller that goes on (tests, ``syncgate
    check``'s later levels) keeps the collector.
    """
    with paused_collector():
        try:
            yield
        finally:
            gc.freeze()  # the collections still to come, and the one at exit, skip all of it
