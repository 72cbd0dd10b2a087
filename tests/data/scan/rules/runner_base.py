"""Fixture: a base class in another file. Markers (expect, then kind and guard) name each site the scan
must report for RulesModelRunner; every other line must stay clean."""

import torch


class RunnerBase:
    def execute_model(self, sampled: torch.Tensor) -> None:
        self.step_rules(sampled)
        self._post(sampled)
        self._inherited_sync()

    def _post(self, sampled: torch.Tensor) -> None:
        # overridden by RulesModelRunner: never reached from that runner
        sampled.tolist()

    def _inherited_sync(self) -> None:
        torch.cuda.synchronize()  # expect: device_sync none
