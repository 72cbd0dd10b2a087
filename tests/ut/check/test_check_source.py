"""``--source``: a vLLM or vllm-ascend tree told apart by layout; anything else names both."""

import pytest

from vllm_syncgate.check.source import ASCEND, VLLM, detect_source, installed_sources
from vllm_syncgate.errors import UsageError


def test_vllm_tree_is_found_at_its_root_and_at_its_package(data_dir):
    root = data_dir / "check" / "vllm_tree"
    for given in (root, root / "vllm"):
        source = detect_source(given)
        assert (source.kind, source.root, source.installed) == (VLLM, root.resolve(), False)
        assert source.worker_dir == root.resolve() / "vllm" / "v1" / "worker"


def test_vllm_ascend_tree_is_found(data_dir):
    source = detect_source(data_dir / "npu" / "after_fix")
    assert source.kind == ASCEND
    assert source.worker_dir.name == "worker"
    assert source.worker_dir.parent.name == "vllm_ascend"


def test_a_tree_that_is_neither_names_what_was_looked_for(tmp_path):
    (tmp_path / "vllm").mkdir()  # a vllm/ without v1/worker/ is not a vLLM tree
    with pytest.raises(UsageError) as caught:
        detect_source(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"--source {tmp_path}: neither a vLLM tree")
    assert "vllm/v1/worker/" in message
    assert "vllm_ascend/worker/" in message


def test_a_missing_path_is_refused(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        detect_source(tmp_path / "nope")


def test_installed_vllm_is_the_default_here():
    import vllm

    [source] = [s for s in installed_sources() if s.kind == VLLM]
    assert source.installed
    assert source.worker_dir.is_relative_to(source.root / "vllm")
    assert (source.root / "vllm" / "__init__.py").samefile(vllm.__file__)
