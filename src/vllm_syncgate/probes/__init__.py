"""Probes: run one upstream runner method on the simulated accelerator and judge what it did.

Each probe returns a :class:`ProbeResult` whose problems carry a :class:`ProblemCode`, so a test
(or CI) can ask "did this fail for the right reason?" without parsing text. The probes know the
contract of the upstream change they guard (vLLM #22760, vllm-ascend #2788), not its code: they
call whatever method they are given, real or mutant.
"""

from vllm_syncgate.probes.async_output import probe_async_output
from vllm_syncgate.probes.buffers import probe_pinned_buffer
from vllm_syncgate.probes.result import ProbeResult, Problem, ProblemCode
from vllm_syncgate.probes.to_list import probe_to_list
from vllm_syncgate.probes.update_states import probe_update_states

__all__ = [
    "ProbeResult",
    "Problem",
    "ProblemCode",
    "probe_async_output",
    "probe_pinned_buffer",
    "probe_to_list",
    "probe_update_states",
]
