"""The syncing family, derived from torch: every member reads the device, non-members do not."""

import pytest
import torch

from vllm_syncgate.fakedev import simulated_accelerator
from vllm_syncgate.fakedev.syncing import (
    CONVERSIONS,
    FORMATTING,
    data_dependent_entry_points,
    data_dependent_overloads,
    shape_given,
)

_X = torch.tensor([2])
_MASK = torch.tensor([True])
_CANDIDATES = ((_X,), (_X, _MASK), (_X, [_MASK]), (_X, _X), (_X, 0))


def _sample_args(fn):
    """The first argument list the op accepts on host tensors: built from the op, not per op."""
    for args in _CANDIDATES:
        try:
            fn(*args)
        except (TypeError, RuntimeError, IndexError):
            continue
        return args
    pytest.fail(f"no sample arguments fit {fn}")


def _on_device(acc, args):
    return tuple(
        acc.device_tensor(a) if isinstance(a, torch.Tensor)
        else [acc.device_tensor(i) for i in a] if isinstance(a, list) else a
        for a in args
    )


_ENTRY_POINTS = sorted(
    ((fn, api) for fn, api in data_dependent_entry_points().items()
     if not (hasattr(fn, "_schema") and fn._schema.is_mutable)),  # out= overloads need an out tensor
    key=lambda item: item[1],
)


def test_the_family_comes_from_torchs_tags_and_holds_the_known_members():
    packets = {op._schema.name for op in data_dependent_overloads()}
    assert {"aten::nonzero", "aten::masked_select", "aten::_unique2", "aten::index", "aten::item"} <= packets
    apis = set(data_dependent_entry_points().values())
    assert {"torch.nonzero", "Tensor.nonzero", "torch.masked_select", "torch.unique", "torch.bincount"} <= apis


@pytest.mark.parametrize(("fn", "api"), _ENTRY_POINTS, ids=[api for _fn, api in _ENTRY_POINTS])
def test_every_data_dependent_op_reads_the_device_once(fn, api):
    args = _sample_args(fn)
    with simulated_accelerator("cuda") as acc:
        fn(*_on_device(acc, args))
        assert acc.ledger.counts() == {"blocking_readback": 1}
        assert acc.ledger.events[0].api == api


@pytest.mark.parametrize(("fn", "api"), sorted({**CONVERSIONS, **FORMATTING}.items(), key=lambda i: i[1]),
                         ids=sorted({**CONVERSIONS, **FORMATTING}.values()))
def test_every_conversion_and_formatting_reads_the_device_once(fn, api):
    with simulated_accelerator("npu") as acc:
        t = acc.device_tensor(torch.tensor([5]))
        fn(t, "") if fn is torch.Tensor.__format__ else fn(t)
        assert acc.ledger.counts() == {"blocking_readback": 1}
        assert acc.ledger.events[0].api == api


@pytest.mark.parametrize(
    "op",
    [
        lambda x, i: torch.argmax(x.float()),
        lambda x, i: torch.cumsum(x, 0).index_select(0, i),
        lambda x, i: x.sort().values,
        lambda x, i: x.topk(2).indices,
        lambda x, i: torch.gather(x, 0, i),
        lambda x, i: torch.where(x > 2, x, 0),
        lambda x, i: x[i],  # an integer index tensor: the output shape is the index's
        lambda x, i: torch.nonzero_static(x, size=4),
        lambda x, i: torch.repeat_interleave(x, 2),
        lambda x, i: torch.nn.functional.one_hot(x, num_classes=8),
    ],
)
def test_ops_whose_output_size_is_known_do_not_read_the_device(op):
    with simulated_accelerator("cuda") as acc:
        op(acc.device_tensor(torch.arange(6)), acc.device_tensor(torch.tensor([0, 2])))
        assert acc.ledger.counts() == {}


def test_shape_given_only_where_the_caller_sizes_the_output():
    x, mask, idx = torch.arange(3), torch.tensor([True, False, True]), torch.tensor([0, 1])
    assert shape_given("torch.repeat_interleave", (x, 2), {})
    assert not shape_given("torch.repeat_interleave", (x, x), {})
    assert shape_given("torch.repeat_interleave", (x,), {"output_size": 3})
    assert not shape_given("torch.nn.functional.one_hot", (x,), {})
    assert shape_given("aten.index.Tensor", (x, [idx]), {})
    assert not shape_given("aten.index.Tensor", (x, [mask]), {})
    assert not shape_given("torch.nonzero", (x,), {})
