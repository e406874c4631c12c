"""The app leaves device counts off its curve for a model split (tp x pp x cp) or a fixed global
batch in predict's and sweep's notes (``counts_left_out``, ``layout_predict.counts_that_run``),
a fix naming the app's control where predict names the flag (session 43). Before, the app said
it in words of its own ('layout tp 2 x pp 1: 1 device is not a multiple of 2; left out'), and a
micro-batch past the bounds table's as 'does not split evenly'."""

from __future__ import annotations

from scalesim.app.named_controls import control_namer
from scalesim.app.plan import build_scenario
from scalesim.app.state import default_state, preset_profile

from scalesim.device_nouns import GPU_NOUNS
from scalesim.errors import in_words_of
from scalesim.layout_predict import runnable_counts
from scalesim.predict import nearest_splitting_batches


def _app(**update):
    state = default_state().model_copy(update=update)
    profile = preset_profile(state)
    scenario, notes = build_scenario(state, profile)
    return profile, scenario, [n for n in notes if "left out;" in n]


def _predict(profile, scenario, devices):
    """predict's notes for the app's scenario on all of ``devices``, said in the app's control
    labels (each a template, ``counts_left_out``; before session 49 the flags of the fix were
    replaced by the labels and the rest kept predict's notation)."""
    _, notes = runnable_counts(profile, scenario.model_copy(update={"devices": devices}))
    named = control_namer(default_state(), GPU_NOUNS)
    return [in_words_of(n, named) for n in notes]


def test_a_split_that_does_not_divide_some_counts_is_predicts_note():
    devices = [6, 8, 16, 24]
    profile, scenario, notes = _app(hw="dgx-h100", wl="llama3-8b", tp=2, cp=3, grid="list",
                                    dlist=",".join(map(str, devices)))
    assert scenario.devices == [6, 24]  # the counts the app runs, as before
    # the page's controls (was "tp x pp x cp = 6 ...; a tp x pp x cp that divides 2 runs every
    # count ..." before session 49: notation no control shows)
    assert notes == [("Tensor parallel 2 x Pipeline stages 1 x Context parallelism 3 = 6 does "
                      "not divide the devices: the rows on 8 and 16 devices are left out; a "
                      "split whose product divides 2 runs every count, or give counts that are "
                      "multiples of 6")]
    assert notes == _predict(profile, scenario, devices)


def test_one_device_left_out_is_in_the_singular_in_app_and_predict():
    profile, scenario, notes = _app(wl="llama3-8b", tp=2)
    assert scenario.devices == [2, 4, 8, 16]
    assert notes == ["Tensor parallel 2 x Pipeline stages 1 = 2 does not divide the devices: the "
                     "row on 1 device is left out; give counts that are multiples of 2"
                     ]  # was 'the row on 1 devices'; 'tp x pp = 2' before session 49
    assert notes == _predict(profile, scenario, [1, 2, 4, 8, 16])


def test_a_global_batch_dp_does_not_split_names_the_control_in_its_fix():
    devices = [4, 8, 16, 24, 40, 64]
    profile, scenario, notes = _app(hw="dgx-h100", wl="llama3-8b", tp=2, mode="strong", gb=96,
                                    grid="list", dlist=",".join(map(str, devices)))
    assert scenario.devices == [4, 8, 16, 24, 64]  # 40: dp 20 does not divide 96, as before
    # was "global batch 96 does not split evenly over dp x accumulation 20: ...; give counts
    # whose dp x accumulation divides it" before session 49 (notation no control shows)
    assert notes == [("Global batch 96 does not split evenly over the 20 data-parallel ranks x "
                      "Gradient accumulation 1: the row on 40 devices is left out; Global batch "
                      "480 runs every count, or give counts whose data-parallel ranks x Gradient "
                      "accumulation divides it")]
    assert notes == _predict(profile, scenario, devices)


def test_a_micro_batch_past_the_table_is_said_so_not_that_the_batch_does_not_split():
    profile, scenario, notes = _app(mode="strong", gb=2**28, dmax=32)
    assert scenario.devices == [16, 32]
    assert len(notes) == 1 and "does not split evenly" not in notes[0]
    # was "global batch 268,435,456 over devices x accumulation 1, 2, 4 or 8 ..." before
    # session 49 (notation no control shows)
    assert notes[0].startswith("Global batch 268,435,456 over 1, 2, 4 or 8 devices x Gradient "
                               "accumulation 1 is a micro-batch of 268,435,456; 134,217,728; "
                               "67,108,864 or 33,554,432 samples, past the largest of the bounds "
                               "table")
    assert "Gradient accumulation 16 or Global batch 16777216 runs every count" in notes[0]
    assert notes == _predict(profile, scenario, [1, 2, 4, 8, 16, 32])


def test_a_note_on_hundreds_of_counts_is_cut_and_offers_no_batch_of_zero():
    # every server to 2,048: 241 counts global batch 3,072 does not split over. Before, the
    # note listed all 241 sizes (1,568 characters) and offered 'Global batch 0': numpy's int64
    # lcm of the counts wrapped to 0
    _, scenario, notes = _app(hw="dgx-h100", grid="server", dmax=2048, mode="strong", gb=3072)
    assert scenario.devices[-1] == 1536 and len(notes) == 1
    assert "40; 56; 72; 80; 88; ... or 2,048 (241 in all)" in notes[0]
    assert len(notes[0]) < 400 and "Global batch 0" not in notes[0]
    assert nearest_splitting_batches(3072, list(range(8, 2049, 8)), 1) == []
    # a list whose lcm fits still gets its nearest batches (the multiples of 55,440 about 3,072)
    assert nearest_splitting_batches(3072, [8, 16, 40, 56, 72, 80, 88], 1) == [55440]
