"""A V0 runner: the model's own ``sample`` runs the layer sampler."""

import torch


class ToyHPUModelRunner:
    def execute_model(self, input_ids: torch.Tensor, attn_metadata, sampling_metadata):
        hidden_states = self.model(input_ids, attn_metadata=attn_metadata)
        logits = self.model.compute_logits(hidden_states)
        return self.model.sample(logits=logits, sampling_metadata=sampling_metadata)
