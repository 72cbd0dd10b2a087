"""``syncgate repro``: a failing CI log in, a verdict per test out.

Data flows one way: :mod:`~vllm_syncgate.repro.logs` / :mod:`~vllm_syncgate.repro.junit` parse any CI log
into a :class:`~vllm_syncgate.repro.model.CiLog`; :mod:`~vllm_syncgate.repro.nodeids` checks its node ids
against the locally collected tree; :mod:`~vllm_syncgate.repro.reproduce` reruns them through a
:mod:`~vllm_syncgate.repro.runner` (local) or :mod:`~vllm_syncgate.repro.container` (Docker) runner with the
:mod:`~vllm_syncgate.repro.rerun_plugin` loaded, and classifies with :mod:`~vllm_syncgate.repro.stats`;
:mod:`~vllm_syncgate.repro.report` renders the result. The ``syncgate-env:`` line that ``syncgate
check`` prints and this package reads back is :mod:`vllm_syncgate.environment`'s.
"""
