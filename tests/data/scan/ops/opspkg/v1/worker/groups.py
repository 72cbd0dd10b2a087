"""A KV-cache group: its builder's class comes from the backend at run time."""

from dataclasses import dataclass, field


@dataclass
class Group:
    backend: type
    metadata_builders: list = field(default_factory=list)

    def get_metadata_builder(self, index=0):
        return self.metadata_builders[index]

    def build_metadata(self, step):
        return self.get_metadata_builder().build(0, step)
