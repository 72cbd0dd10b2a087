"""``python -m vllm_syncgate``: the ``syncgate`` command without relying on which script is on PATH."""

from vllm_syncgate.cli import main

raise SystemExit(main())
