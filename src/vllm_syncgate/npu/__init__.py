"""NPU runner validation without an NPU: vllm-ascend V2 runner methods on a simulated NPU.

- :mod:`vllm_syncgate.npu.harness` loads named runner methods from a vllm-ascend tree (parsed, or the
  real class where ``vllm_ascend`` imports) over a simulated parent, and binds them to a fake self;
- :mod:`vllm_syncgate.npu.state` is the explicit state that fake self holds;
- :mod:`vllm_syncgate.npu.scheduler` and :mod:`vllm_syncgate.npu.driver` run scheduler sequences through the
  methods and record, per step, the host waits, the device-to-host copies and ``seq_lens_cpu``;
- :func:`update_seq_lens_cpu` is the vectorized host update proposed for vllm-ascend #16432;
- :mod:`vllm_syncgate.npu.torch_npu_stub` lets the real classes import on a host without an NPU.

Only the NumPy function is imported here, so using it does not pull in torch or the simulator.
"""

from vllm_syncgate.npu.seq_lens import update_seq_lens_cpu

__all__ = ["update_seq_lens_cpu"]
