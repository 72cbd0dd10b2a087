"""A runner of our own whose metadata builder hard-wires a feature off (the DeepSeek-V4 fork of
vllm-ascend sets ``chunked_prefill_enabled = False`` in its DSA builder, where the MLA builder
beside it reads the scheduler config): the upload behind ``if not self.chunked_prefill_enabled:
return None`` in that class never runs. The class that reads the config keeps its upload, and so
does a class whose switch some method also sets from a config.
"""

import torch


class ConfiguredBuilder:
    def __init__(self, config, device: torch.device) -> None:
        self.device = device
        self.chunked_prefill_enabled = config.enable_chunked_prefill

    def build_chunked(self, lens: list[int]) -> torch.Tensor | None:
        if not self.chunked_prefill_enabled:
            return None
        return torch.tensor(lens, device=self.device)  # expect: blocking_copy none


class HardWiredBuilder(ConfiguredBuilder):
    def __init__(self, config, device: torch.device) -> None:
        super().__init__(config, device)
        self.chunked_prefill_enabled = False
        self.reuse_rows = False

    def set_reuse(self, config) -> None:
        self.reuse_rows = config.reuse_rows

    def build_chunked(self, lens: list[int]) -> torch.Tensor | None:
        if not self.chunked_prefill_enabled:
            return None
        return torch.tensor(lens, device=self.device)  # dead: the switch is hard-wired off

    def build_reused(self, lens: list[int]) -> torch.Tensor | None:
        if not self.reuse_rows:
            return None
        return torch.tensor(lens, device=self.device)  # expect: blocking_copy none


class HardOffModelRunner:
    def __init__(self, config) -> None:
        self.configured = ConfiguredBuilder(config, torch.device("cuda"))
        self.builder = HardWiredBuilder(config, torch.device("cuda"))

    def execute_model(self, lens: list[int]) -> list:
        return [self.configured.build_chunked(lens), self.builder.build_chunked(lens),
                self.builder.build_reused(lens)]
