"""The words of predict's and sweep's note on the counts a setting cannot run
(``counts_left_out``; session 43): one count of 1 in the singular, a long list of sizes cut as
``figures.count_list`` cuts counts (with '; ' between numbers that carry a comma), and the
nearest splitting global batches of many counts found without numpy's int64 lcm wrapping."""

from __future__ import annotations

from scalesim.counts_left_out import batch_left_out, micro_batch_left_out
from scalesim.layout_predict import runnable_counts
from scalesim.predict import nearest_splitting_batches
from scalesim.presets import HARDWARE, get_workload
from scalesim.profiles import profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout


def test_one_count_of_one_is_in_the_singular():
    profile = profile_from_presets(HARDWARE["dgx-h100"], get_workload("llama3-8b"))
    scenario, notes = runnable_counts(profile, Scenario(devices=[1, 2, 4],
                                                        layout=ScenarioLayout(tp=2)))
    assert scenario.devices == [2, 4]
    assert notes == ["tp x pp = 2 does not divide the devices: the row on 1 device is left out; "
                     "give counts that are multiples of 2"]  # was 'the row on 1 devices'
    # two counts, or one above 1, keep the plural
    assert "the row on 3 processes is left out" in batch_left_out(8, 1, {3: 3, 4: 4},
                                                                  "processes").note


def test_hundreds_of_sizes_are_cut_and_no_batch_of_zero_is_offered():
    counts = list(range(8, 2049, 8))  # every server of 8 to 2,048
    out = batch_left_out(3072, 1, {p: p for p in counts})
    assert len(out.counts) == 241 and len(out.note) < 400  # was 1,568 characters
    assert "accumulation 40; 56; 72; 80; 88; ... or 2,048 (241 in all):" in out.note
    assert "--global-batch" not in out.note  # no batch splits over all: was '--global-batch 0'
    assert nearest_splitting_batches(3072, counts, 1) == []  # was [0]: int64 lcm wrapped
    assert nearest_splitting_batches(3072, [8, 16, 40, 56, 72, 80, 88], 1) == [55440]


def test_sizes_with_a_thousands_comma_are_told_apart():
    out = micro_batch_left_out(2**28, 1, {p: p for p in (1, 2, 4, 8, 16)})
    assert out.counts == (1, 2, 4, 8)
    assert ("a micro-batch of 268,435,456; 134,217,728; 67,108,864 or 33,554,432 samples"
            in out.note)  # was '268,435,456, 134,217,728, ...': commas of numbers and list alike
