"""The ledger groups syncs into steps; with a sink it hands them on instead of keeping them."""

from vllm_syncgate.audit import CallSite, Ledger, StepKind, SyncKind

SITE = CallSite("runner.py", 10, "step", "pkg.runner", "Runner.step")


def test_events_belong_to_the_open_step_or_outside():
    ledger = Ledger()
    ledger.record(SyncKind.DEVICE_SYNC, "warmup", site=SITE)
    with ledger.step(StepKind.PREFILL, num_reqs=2):
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=SITE)
    with ledger.step(StepKind.DECODE):
        ledger.record(SyncKind.EVENT_SYNC, "Event.synchronize", site=SITE)
        ledger.record(SyncKind.BLOCKING_READBACK, "Tensor.tolist", site=SITE)
    assert [s.kind for s in ledger.steps] == [StepKind.PREFILL, StepKind.DECODE]
    assert ledger.counts(StepKind.DECODE) == {"event_sync": 1, "blocking_readback": 1}
    assert ledger.counts() == {"event_sync": 2, "blocking_readback": 1, "device_sync": 1}
    assert ledger.outside[0].step is None
    assert ledger.outside[0].step_kind is StepKind.OUTSIDE
    assert ledger.steps[0].meta == {"num_reqs": 2}


def test_step_kind_can_be_corrected_at_end_and_events_follow():
    ledger = Ledger()
    ledger.begin_step(StepKind.DECODE)
    ledger.record(SyncKind.EVENT_SYNC, "x", site=SITE)
    step = ledger.end_step(StepKind.MIXED)
    assert step.kind is StepKind.MIXED
    assert step.events[0].step_kind is StepKind.MIXED


def test_classify_names_steps_from_token_counts():
    assert StepKind.classify(5, 0) is StepKind.PREFILL
    assert StepKind.classify(0, 3) is StepKind.DECODE
    assert StepKind.classify(5, 3) is StepKind.MIXED
    assert StepKind.classify(0, 0) is StepKind.EMPTY


def test_caller_site_skips_torch_and_syncgate_frames():
    ledger = Ledger()
    ledger.record(SyncKind.EVENT_SYNC, "x")
    site = ledger.events[0].site
    assert site.function == "test_caller_site_skips_torch_and_syncgate_frames"
    assert site.symbol.endswith(":test_caller_site_skips_torch_and_syncgate_frames")
