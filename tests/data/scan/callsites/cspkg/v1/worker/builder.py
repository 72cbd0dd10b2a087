"""A metadata builder of our own: reads the record's device and host halves."""

from cspkg.v1.worker.spans import device_spans, host_spans


class CsAttentionMetadataBuilder:
    def build(self, common_prefix_len: int, common_attn_metadata):
        qsl_cpu = common_attn_metadata.query_start_loc_cpu
        n = common_attn_metadata.num_reqs
        spans = host_spans(qsl_cpu[: n + 1] - qsl_cpu[0], qsl_cpu[1:] - qsl_cpu[:-1])
        starts = common_attn_metadata.query_start_loc
        decode_starts = starts[1 : n + 1].tolist()  # expect: blocking_readback none record
        # stored from a pinned host buffer by the runner: a host read whatever the name
        positions = common_attn_metadata.positions[:n].tolist()
        return spans, decode_starts, positions, device_spans(starts)
