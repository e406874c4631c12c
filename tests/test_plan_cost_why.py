"""`plan --rank cost`'s why column explains a row's extra cost by the part its billed devices
spend more on (session 45): a row on more devices has a shorter step whose every part falls, so
the step's largest part difference said "(tensor-parallel communication +0 s)" of a tp 1 row."""

import numpy as np
import pytest

from scalesim.plan import PARTS, plan
from scalesim.presets import HARDWARE, get_transformer


def _rows():
    return plan(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], [8, 16], global_batch=64,
                rank_by="cost", top=None)


def test_a_row_on_more_devices_is_explained_by_its_billed_device_seconds():
    rows = _rows()
    best = rows[0]
    assert (best.devices, best.tp, best.zero, best.shard_group) == (8, 1, 2, 8)
    row = next(r for r in rows if (r.devices, r.tp, r.zero, r.shard_group) == (16, 1, 2, 16))
    # by hand: each part's billed device-seconds a step (the same global batch of 64)
    spent = {p: row.billed_devices * row.breakdown_s[p] - best.billed_devices * best.breakdown_s[p]
             for p in PARTS if np.isfinite(row.breakdown_s[p])}
    # the parts add up to the cost's difference: billed x step, devices 16 and 8
    assert sum(spent.values()) == pytest.approx(
        16 * row.step_time_s - 8 * best.step_time_s, rel=1e-9)
    # every part of the 16-device step is shorter, so the old text found nothing larger
    assert all(row.breakdown_s[p] <= best.breakdown_s[p] for p in spent)
    # straggler wait: 16 x 0.0723 - 8 x 0.117 = +0.224 device-s (the exchange +0.078)
    assert max(spent, key=spent.get) == "straggler_s"
    assert round(spent["straggler_s"], 3) == 0.224
    assert row.why == ("+0.6% billed device-hours per sample; step -49.7% "
                       "(straggler wait +0.224 billed device-s a step)")


def test_no_cost_row_explains_itself_by_a_part_that_did_not_grow():
    rows = _rows()
    for r in rows[1:]:
        assert " +0 " not in r.why and "-0" not in r.why.split("(")[-1], r.why
    same = next(r for r in rows if (r.devices, r.zero, r.shard_group) == (8, 3, 8))
    # the same 8 devices: the exchange's seconds times the 8 billed devices
    gap = same.breakdown_s["dp_exposed_s"] - rows[0].breakdown_s["dp_exposed_s"]
    assert f"(data-parallel exchange {8 * gap:+.3g} billed device-s a step)" in same.why
