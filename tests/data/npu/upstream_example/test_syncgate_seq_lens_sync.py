# The three-line test the README suggests for vllm-ascend's tests/ut (syncgate installed there).
def test_no_seq_lens_sync_without_speculation(syncgate_npu_property):
    report = syncgate_npu_property()  # this checkout's NPUModelRunner, the real class where it imports
    assert report.passed, report.describe()
