"""syncgate's own stand-in for a vLLM GPU runner file (not upstream code): one entry point whose
only device sync is under speculation, for the check command's scan level."""

import torch


class GPUModelRunner:
    def execute_model(self, scheduler_output):
        if self.speculative_config is not None:
            self._wait_for_drafts()
        return self._forward(scheduler_output)

    def _wait_for_drafts(self):
        torch.cuda.synchronize()

    def _forward(self, scheduler_output):
        return scheduler_output
