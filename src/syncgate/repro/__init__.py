"""``syncgate repro``: a failing CI log in, a verdict per test out.

Data flows one way: :mod:`~syncgate.repro.logs` / :mod:`~syncgate.repro.junit` parse any CI log
into a :class:`~syncgate.repro.model.CiLog`; :mod:`~syncgate.repro.nodeids` checks its node ids
against the locally collected tree; :mod:`~syncgate.repro.reproduce` reruns them through a
:mod:`~syncgate.repro.runner` (local) or :mod:`~syncgate.repro.container` (Docker) runner with the
:mod:`~syncgate.repro.rerun_plugin` loaded, and classifies with :mod:`~syncgate.repro.stats`;
:mod:`~syncgate.repro.report` renders the result. The ``syncgate-env:`` line that ``syncgate
check`` prints and this package reads back is :mod:`syncgate.environment`'s.
"""
