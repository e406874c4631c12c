"""The planner's fast paths (session 44, for goal's searched layouts) give the rows and pins the
straightforward way gives: ``plan.candidate_grid`` masks the axes' rules on their own shapes and
draws only the kept rows (before: the full product of ~200 rows a (split, micro-batch) pair, most
of them dropped), and ``plan_at``'s compute pin finds its distinct (micro-batch, busy devices)
pairs by 1-D uniques, once for both fields it sets (before: a 2-D ``np.unique(axis=1)`` twice,
a fifth of goal's search). Compared here with the old way written out, row for row and in order
(the planner breaks ties by row order), and goal's searched answer on a small grid with the
answer of the planner's rows taken the old way."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim import presets
from scalesim.bounds import bound
from scalesim.goal import seek
from scalesim.layout import valid_mask
from scalesim.layout_predict import _pinned_rows, pinned_compute
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.transformer import RECOMPUTE
from scalesim.plan import (
    MICRO_BATCHES,
    RECOMPUTE_CHOICES,
    SCHEDULE_CHOICES,
    SCHEDULES,
    ZERO_CHOICES,
    Setting,
    _splits,
    _with_hybrid_rows,
    candidate_grid,
)
from scalesim.profiles import load_hardware, resolve_profile
from scalesim.schemas import Scenario


def _old_candidate_grid(devices, setting, cp_values):
    """``candidate_grid`` as it was before session 44: every combination, then the rules."""
    g, shape = setting.hardware.devices_per_node, setting.shape
    splits = _splits(devices, g, cp_values)
    split = np.array(splits)
    pairs = np.array([(i, b) for i, (dp, *_) in enumerate(splits) for b in MICRO_BATCHES
                      if setting.global_batch % (dp * b) == 0], dtype=int).reshape(-1, 2)
    sched = np.array([SCHEDULES[name] for name, _ in SCHEDULE_CHOICES])
    virt = np.array([v for _, v in SCHEDULE_CHOICES])
    rec = np.array([RECOMPUTE[r] for r in RECOMPUTE_CHOICES])
    idx = np.meshgrid(np.arange(len(pairs)), np.arange(len(ZERO_CHOICES)), np.arange(len(sched)),
                      np.arange(len(rec)), np.arange(2), indexing="ij")
    i_pair, i_zero, i_sched, i_rec, i_sp = (a.ravel() for a in idx)
    i_split = pairs[i_pair, 0]
    grid = {"dp": split[i_split, 0], "tp": split[i_split, 1], "pp": split[i_split, 2],
            "cp": split[i_split, 3], "zero": np.array(ZERO_CHOICES)[i_zero],
            "micro_batch": pairs[i_pair, 1],
            "global_batch": np.full(i_split.shape, setting.global_batch),
            "schedule": sched[i_sched], "virtual_stages": virt[i_sched], "recompute": rec[i_rec],
            "sequence_parallel": i_sp.astype(bool)}
    keep = valid_mask(grid["dp"], grid["tp"], grid["pp"], grid["cp"], grid["micro_batch"],
                      grid["global_batch"], grid["schedule"], grid["virtual_stages"], g,
                      shape.layers, shape.heads, shape.kv_of(), shape.seq_len)
    keep &= ~(grid["sequence_parallel"] & (grid["tp"] == 1))
    steps = grid["global_batch"] // np.maximum(grid["dp"] * grid["micro_batch"], 1)
    keep &= steps <= bound("accumulation").high
    keep &= ~((grid["zero"] > 0) & (grid["dp"] * grid["cp"] == 1))
    keep &= ~((grid["pp"] > 1) & (grid["zero"] >= (3 if setting.framework == FSDP else 2)))
    grid = {k: v[keep] for k, v in grid.items()}
    grid["shard_group"] = grid["dp"] * grid["cp"]
    return _with_hybrid_rows(grid, g) if setting.framework == FSDP else grid


@pytest.mark.parametrize("model, hardware, devices, batch, cp, framework", [
    ("llama3-8b", "dgx-h100", [16, 64], 512, (1, 2), FSDP),
    ("gpt-18.4b", "dgx-a100", [8, 56], 112, (1,), FSDP),
    ("gpt-1.7b", "dgx-a100", [4, 16], 96, (1,), DEEPSPEED),
    ("llama3-70b", "dgx-h100", [64], 33, (1,), FSDP),  # an odd batch: few micro-batches divide
])
def test_the_planner_grid_is_the_full_products_kept_rows_in_order(model, hardware, devices, batch,
                                                                   cp, framework):
    setting = Setting(presets.TRANSFORMERS[model][0], load_hardware(hardware), batch,
                      framework=framework)
    new, old = candidate_grid(devices, setting, cp), _old_candidate_grid(devices, setting, cp)
    assert new.keys() == old.keys() and new["dp"].size == old["dp"].size > 0
    for k in old:
        assert new[k].dtype == old[k].dtype, k
        np.testing.assert_array_equal(new[k], old[k], err_msg=k)


def test_the_pin_of_each_row_is_its_pairs_pin():
    profile = resolve_profile(None, "dgx-a100", "llama3-8b")
    from scalesim.layout_predict import _peak_and_bandwidth, base_inputs, layout_hardware

    peak, _, bandwidth = _peak_and_bandwidth(profile)
    base = base_inputs(profile.workload, layout_hardware(profile), Scenario(), peak, bandwidth)
    rng = np.random.default_rng(44)
    micro = rng.choice([1, 2, 3, 8, 32], size=500)
    busy = rng.choice([1, 2, 4, 8], size=500)
    eff, rate = _pinned_rows(profile, base, micro, busy)
    # the old way: the 2-D unique of the (micro-batch, busy) pairs
    pairs, at = np.unique(np.stack([micro, busy]), axis=1, return_inverse=True)
    old = pinned_compute(profile, base, pairs[0], pairs[1])
    np.testing.assert_array_equal(eff, np.asarray(old[0])[np.ravel(at)])
    np.testing.assert_array_equal(rate, np.asarray(old[1])[np.ravel(at)])
    assert np.unique(eff).size > 1  # the pins differ by row: a mix-up would show


def test_goals_searched_answer_on_a_small_grid_is_the_old_ways(monkeypatch):
    """gpt-18.4b on DGX A100s up to 64 GPUs (session 43's case): the answer, its front and the
    layouts counted, with the planner's grid and pins taken the old way and the new."""
    profile = resolve_profile(None, "dgx-a100", "gpt-18.4b")
    base = Scenario(train_samples=2e6, price_per_device_hour=3.0)
    new = seek(profile, base, 0.6 * 86400, 1e4, 64, layout="search").to_dict()
    monkeypatch.setattr("scalesim.plan.candidate_grid", _old_candidate_grid)
    old = seek(profile, base, 0.6 * 86400, 1e4, 64, layout="search").to_dict()
    assert new == old and new["best"] is not None and new["best"]["tp"] == 2
