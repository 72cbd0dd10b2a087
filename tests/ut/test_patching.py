"""One reversible patcher for the audit backends and the simulated accelerator."""

import types

import pytest

from vllm_syncgate.patching import Patches


class Base:
    def method(self):
        return "base"


def test_restore_undoes_every_patch_newest_first():
    class Owner(Base):
        own = 1

    patches = Patches()
    patches.set(Owner, "own", 2)
    patches.set(Owner, "own", 3)
    patches.set(Owner, "method", lambda self: "patched")
    assert (Owner.own, Owner().method()) == (3, "patched")
    patches.restore()
    assert Owner.own == 1
    assert "method" not in vars(Owner)  # the inherited one shows through again
    assert Owner().method() == "base"


def test_an_added_attribute_that_is_already_gone_stays_gone():
    module = types.ModuleType("m")
    patches = Patches()
    patches.set(module, "npu", object())
    del module.npu
    patches.restore()
    assert not hasattr(module, "npu")


def test_an_immutable_owner_leaves_nothing_to_undo():
    patches = Patches()
    with pytest.raises(TypeError):
        patches.set(int, "bit_length", None)
    patches.restore()
    assert (5).bit_length() == 3
