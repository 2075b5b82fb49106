"""The data setting (slrpipe.setting.Setting): checked once, passed whole to the samplers and the
theories (docs/model.md §2)."""

from __future__ import annotations

import math

import pytest

from slrpipe.data.sampling import SLRTask
from slrpipe.setting import Setting
from slrpipe.theory.replica.options import ReplicaTask, replica_task


def test_fields_are_normalised_once():
    s = Setting("max", 2, 3, 0)
    assert (s.model, s.nu, s.L, s.delta) == ("max", 2.0, {3: 1.0}, 0.0)
    assert type(s.nu) is float and type(s.delta) is float
    assert s.fixed and s.length == 3 and s.L_max == 3 and s.c_nu == 2.0
    law = Setting("spiked", 1.0, {3: 0.5, 1: 0.5, 2: 0.0})
    assert list(law.L.items()) == [(1, 0.5), (3, 0.5)] and not law.fixed and law.L_max == 3
    assert Setting("max", math.inf, 2).c_nu == math.inf


@pytest.mark.parametrize(
    "args, field",
    [
        (("foo", 1.0, 2), "model"),
        (("spiked", -1.0, 2), "nu"),
        (("spiked", math.inf, 2), "nu"),
        (("max", math.nan, 2), "nu"),
        (("max", 1.0, 0), "L"),
        (("max", 1.0, {1: 0.5, 2: 0.4}), "L"),
        (("max", 1.0, 2.5), "L"),
        (("max", 1.0, 2, -0.1), "delta"),
        (("max", 1.0, 2, math.inf), "delta"),
    ],
)
def test_bad_fields_raise_one_line_naming_the_field(args, field):
    with pytest.raises(ValueError, match=rf"^{field}: ") as err:
        Setting(*args)
    assert "\n" not in str(err.value)


def test_equal_settings_hash_equal_and_the_law_is_part_of_both():
    a, b = Setting("max", 1.0, {1: 0.5, 2: 0.5}), Setting("max", 1, {2: 0.5, 1: 0.5}, 0)
    c = Setting("max", 1.0, {1: 0.25, 2: 0.75})
    assert a == b and hash(a) == hash(b)
    assert a != c and hash(a) != hash(c)  # a jit static argument: the law must key the cache
    assert a.replace(L={1: 0.25, 2: 0.75}) == c
    with pytest.raises(ValueError, match="^nu: "):
        a.replace(nu=-1.0)


def test_slr_task_holds_a_setting_and_reads_through():
    s = Setting("max", 2.0, {2: 0.5, 3: 0.5}, 0.3)
    t = SLRTask(s, 40)
    assert (t.model, t.nu, t.L, t.delta, t.L_max, t.c_nu, t.D) == ("max", 2.0, s.L, 0.3, 3, 2.0, 40)
    with pytest.raises(ValueError, match="^D: "):
        SLRTask(s, 1)
    with pytest.raises(TypeError, match="^setting: "):
        SLRTask(("max", 2.0, 2, 0.0), 40)


def test_replica_task_needs_a_fixed_length_setting():
    t = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.5))
    assert (t.sigma, t.model, t.nu, t.L, t.delta) == ("softmax", "spiked", 1.0, 2, 0.5)
    assert type(t.L) is int and replica_task(t) is t
    with pytest.raises(ValueError, match="^L: "):
        ReplicaTask("softmax", Setting("spiked", 1.0, {1: 0.5, 2: 0.5}))
    with pytest.raises(TypeError, match="^setting: "):
        ReplicaTask("softmax", ("spiked", 1.0, 2, 0.0))
    with pytest.raises(TypeError, match="^task: "):
        replica_task(("softmax", "spiked", 1.0, 2, 0.0))
