"""The unit level, shipped in the package: it runs from an installed syncgate, with no test tree.

- :mod:`vllm_syncgate.unit.vllm_probes`: the probes (``_to_list``, async output, buffer sizing) on the
  installed vLLM's runner classes, on a simulated accelerator;
- :mod:`vllm_syncgate.unit.ascend`: the NPU seq-lens sync property on a vllm-ascend tree's ``NPUModelRunner``
  methods (the real class where ``vllm_ascend`` imports from that tree, else parsed);
- :mod:`vllm_syncgate.unit.result`: what each check found, in one shape for the report and for pytest.

``syncgate check`` runs these as its unit level; the pytest plugin offers them as fixtures.
"""

from vllm_syncgate.unit.result import UnitCheck, UnitReport

#: How the NPU property gets ``NPUModelRunner`` (:func:`vllm_syncgate.unit.ascend.npu_property`); here,
#: not there, so the pytest plugin can offer the choice without importing torch at start-up.
ASCEND_MODES = ("auto", "ast", "import")

__all__ = ["ASCEND_MODES", "UnitCheck", "UnitReport"]
