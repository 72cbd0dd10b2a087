"""A runner base in the shape of an upstream GPU runner, written for syncgate's tests."""


class LoggingMixin:
    def log_step(self, step):
        return f"step {step}"


class GPUModelRunner(LoggingMixin):
    def _to_list(self, sampled_token_ids):
        self.transfer_event.record()
        self.transfer_event.synchronize()
        return self.pinned[: len(sampled_token_ids)].tolist()

    def _update_states(self, scheduler_output):
        self._free_encoder_outputs(scheduler_output)
        return None

    def _free_encoder_outputs(self, scheduler_output):
        for key in scheduler_output.freed:
            self.encoder_cache.pop(key, None)

    def _sync_device(self):
        self.device.synchronize()
