"""A KV-cache group: its builders' class comes from the backend at run time."""

from dataclasses import dataclass, field


@dataclass
class KVGroup:
    name: str
    backend: type
    metadata_builders: list = field(default_factory=list)

    def make_builders(self, config, device):
        builder_cls = self.backend.get_builder_cls()
        self.metadata_builders = [builder_cls(config, device)]

    def get_metadata_builder(self, index=0):
        return self.metadata_builders[index]

    def build_metadata(self, common):
        return self.get_metadata_builder().build(0, common)
