"""A runner whose step has one sync (the line ``# SYNC`` is replaced by each kind's sync) and an
async output object that consumes the step's values later (``# CONSUMER``), for the fix-hint
tests: each printed fix is applied literally here and the tree scanned again."""

import torch


class AsyncOutput:
    """Handed back to the engine, which asks for the values when it consumes them."""

    def __init__(self, host_buf, event):
        self.host_buf = host_buf
        self.event = event

    def get_output(self):
        event, host_buf = self.event, self.host_buf
        values = None
        # CONSUMER
        return values


class TinyModelRunner:
    def __init__(self):
        self.sampled = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.host_buf = torch.empty(8, dtype=torch.int64, pin_memory=True)
        self.event = torch.cuda.Event()
        self.stream = torch.cuda.Stream()

    def execute_model(self, scheduler_output):
        value, host_buf, event, stream = self.sampled, self.host_buf, self.event, self.stream
        data = list(scheduler_output.token_ids)  # host values, for the upload case
        values = None
        # SYNC
        return AsyncOutput(host_buf, event), values
