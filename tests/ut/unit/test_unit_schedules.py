"""The serving story's scheduler outputs follow the scheduler's bookkeeping, step to step."""

from vllm_syncgate.unit.schedules import BLOCK_SIZE, serving_story


def test_every_step_the_story_schedules_is_consistent():
    """Each step's cached requests were scheduled before, only a preempted one is resumed, none
    is finished and scheduled at once, and every request holds the blocks its tokens need."""
    story = serving_story()
    known, scheduled_before, blocks = set(), set(), {}
    for _, _, output in story:
        cached = output.scheduled_cached_reqs
        assert set(cached.req_ids) <= known
        assert cached.resumed_req_ids <= known - scheduled_before
        assert not output.finished_req_ids & set(output.num_scheduled_tokens)
        for new in output.scheduled_new_reqs:
            blocks[new.req_id] = list(new.block_ids[0])
        for req_id, new_ids in zip(cached.req_ids, cached.new_block_ids, strict=True):
            if req_id in cached.resumed_req_ids:
                blocks[req_id] = []
            blocks[req_id] += new_ids[0] if new_ids else []
        computed = dict(zip(cached.req_ids, cached.num_computed_tokens, strict=True))
        for req_id, tokens in output.num_scheduled_tokens.items():
            assert len(blocks[req_id]) * BLOCK_SIZE >= computed.get(req_id, 0) + tokens
        known |= {r.req_id for r in output.scheduled_new_reqs}
        scheduled_before = set(output.num_scheduled_tokens)
    resumed = [output.scheduled_cached_reqs.resumed_req_ids for _, _, output in story]
    assert resumed == [set()] * 6 + [{"req-penalty"}, set()]
