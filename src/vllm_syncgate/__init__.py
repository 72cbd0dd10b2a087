"""syncgate: evidence that vLLM model runners keep the host off the device in the decode loop.

Four levels speak one vocabulary (see :mod:`vllm_syncgate.audit.events`): a static ``scan`` of runner
sources, a ``unit`` level that runs real upstream runner methods on a simulated accelerator
(:mod:`vllm_syncgate.fakedev`), a ``serve`` level that drives a real ``vllm serve``, and ``repro``,
which turns a failing CI log into a local verdict.
"""

__version__ = "0.1.0"
