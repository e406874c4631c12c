"""predict() called as a library refuses a device list with any count that cannot run, in the
line predict's CLI, sweep and the app give for the same what-if where none runs: one pass of
the rules (``layout_predict.counts_that_run``'s ``COUNT_RULES``, ``every_count_runs``), not
predict's own checks in the same order by construction (session 44). Before, where two rules
failed at once the library's line was the first check's alone ('global batch 64 does not split
evenly over 24 and 48 devices ...: 96'), without '; at 32 devices, shard group 12 does not
divide dp 32' that the CLI's line gives.

By hand: a DGX H100 has 8 GPUs per server. 12 GPUs fill no whole server; tp 16 is past one;
tp 3 divides none of 1 ... 16; global batch 3 is split over 2 or 4 devices into no whole
micro-batch; shard group 12 is below dp 16 and 32 and divides neither; 2^26 samples over 1 or 2
devices is a micro-batch past the bounds table's 2^24; global batch 64 does not split over 24
or 48 devices, and at 32 (micro-batch 2) shard group 12 does not divide dp 32."""

from __future__ import annotations

import pytest

from scalesim import presets
from scalesim.errors import ScalesimError
from scalesim.layout_predict import counts_that_run
from scalesim.predict import predict
from scalesim.profiles import load_workload, profile_from_presets
from scalesim.schemas import Scenario, ScenarioLayout


def _profile(workload: str):
    return profile_from_presets(presets.get_hardware("dgx-h100"), load_workload(workload))


def _sharded(group: int) -> dict:
    return {"strategy": "zero3", "layout": ScenarioLayout(shard_group=group)}


# rule: (workload, scenario fields where no count of the list runs, those changed where some do)
RULES = {
    "whole servers": ("resnet50", {"devices": [12]}, None),
    "tp past a server": ("llama3-8b", {"devices": [16], "layout": ScenarioLayout(tp=16)}, None),
    "split": ("llama3-8b", {"devices": [1, 2, 4, 8, 16], "layout": ScenarioLayout(tp=3)},
              {"devices": [2, 4, 8], "layout": ScenarioLayout(tp=2, pp=2)}),
    "global batch": ("resnet50", {"devices": [2, 4], "global_batch": 3}, {"devices": [1, 2, 3]}),
    "shard group": ("resnet50", {"devices": [16, 32], **_sharded(12)},
                    {"devices": [8, 16, 32]}),
    "micro-batch past the bounds table": (
        "resnet50", {"devices": [1, 2], "global_batch": 2**26}, {"devices": [1, 2, 4, 8]}),
    # 24 does not split 64; shard group 24 is below dp 32 and does not divide it; 16 runs
    "two at once: batch, then shard group": (
        "resnet50", {"devices": [24, 32, 48], "global_batch": 64, **_sharded(12)},
        {"devices": [16, 24, 32], **_sharded(24)}),
    # tp 8 x pp 2 = 16 does not divide 24; global batch 6 is not split by dp 4 at 64
    "two at once: split, then batch": (
        "llama3-8b", {"devices": [8, 24, 32], "global_batch": 3,
                      "layout": ScenarioLayout(tp=8, pp=2)},
        {"devices": [16, 24, 32, 64], "global_batch": 6}),
}


def _refusal(call, *args) -> ScalesimError:
    with pytest.raises(ScalesimError) as refused:
        call(*args)
    return refused.value


@pytest.mark.parametrize("rule", list(RULES))
def test_the_library_refuses_a_list_none_runs_in_counts_that_runs_line(rule):
    workload, fields, _ = RULES[rule]
    profile, scenario = _profile(workload), Scenario(**fields)
    library = _refusal(predict, profile, scenario)
    rules = _refusal(counts_that_run, profile, scenario)
    assert (str(library), library.knobs) == (str(rules), rules.knobs)
    assert "\n" not in str(library)


@pytest.mark.parametrize("rule", [r for r, case in RULES.items() if case[2] is not None])
def test_the_library_refuses_a_list_some_of_which_runs_and_runs_the_counts_kept(rule):
    """The same rules decide: a list with a count they leave out is refused (the library's
    behaviour, kept), naming those counts; the counts they keep run."""
    workload, fields, some = RULES[rule]
    profile, scenario = _profile(workload), Scenario(**{**fields, **some})
    kept, notes = counts_that_run(profile, scenario)
    assert 0 < len(kept) < len(scenario.devices) and notes
    left = sorted(set(scenario.devices) - set(kept))
    library = str(_refusal(predict, profile, scenario))
    assert all(str(p) in library for p in left), library
    # every rule after the first gives its reason, as its note starts
    assert all(n.split(": the row")[0] in library for n in notes[1:]), (library, notes)
    rows = predict(profile, scenario.model_copy(update={"devices": kept}))
    assert [r.devices for r in rows] == kept


def test_two_rules_at_once_name_both_in_the_library_line():
    workload, fields, _ = RULES["two at once: batch, then shard group"]
    line = str(_refusal(predict, _profile(workload), Scenario(**fields)))
    assert line.startswith("global batch 64 does not split evenly over 24 and 48 devices")
    assert line.endswith("; at 32 devices, shard group 12 does not divide dp 32")
