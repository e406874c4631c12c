"""A fresh link whose only problem is one control or one combination of controls (session 42's
app walk): the page below the error box was this profile's defaults, dropping every other value
of the link (its 64 devices, price, training length, the rest of its layout), except for a
sequence length or a layout control. Now the controls the error names with their value are set
back to their defaults, each alone first, and the box says which: "Below: this what-if with
<control> at its default"; the rest of the link is kept and predicted.

Session 43: the controls come from the error's own field (``ScalesimError.knobs``, set where the
check raises), not from matching its text, so an error that quotes no value (the interleaved
schedule with no virtual stages) names its controls too."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app.named_controls import named_controls
from scalesim.app.plan import headline, make_plan
from scalesim.app.state import AppState, decode_query, profile_defaults

from scalesim.errors import ScalesimError

KEPT = {"dmax": "64", "price": "3", "train": "1000000000"}  # what each link keeps
CASES = {  # link, the control set back, its label
    "a preset inter-server link too fast for the bounds": (
        {"inter": "infiniband", "nics": "1024", "gbit": "10000"}, "nics", "NICs per server"),
    "tp above a server's GPUs, with pp 2": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "tp": "16", "pp": "2"}, "tp", "Tensor parallel"),
    "pp no count is a multiple of": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "tp": "2", "pp": "128"}, "pp", "Pipeline stages"),
    "cp no count is a multiple of, with tp 2": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "tp": "2", "cp": "3"}, "cp",
        "Context parallelism"),
    # on a list whose every dp it does not divide (on powers of two 1 and 2 run, within the
    # group, and the rest are left out with a note: tests/test_shard_group_counts.py)
    "a shard group that does not divide dp": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "sg": "3", "grid": "list",
         "dlist": "4,8,16,32,64"}, "sg", "Shard group (HSDP)"),
    "a fixed global batch no count splits": (
        {"mode": "strong", "gb": "3000000000", "acc": "2"}, "gb", "Global batch"),
    # session 43: the profile's own global batch (64) that accumulation 3 does not divide: the
    # accumulation is set back, the batch is the profile's (nothing named before)
    "accumulation the global batch does not split into": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "mode": "strong", "gb": "64",
         "acc": "3"}, "acc",
        "Gradient accumulation"),
    "a sequence too long to predict": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "seq": "1073741824"}, "seq",
        "Sequence length"),
    # the error quotes neither value ('the interleaved schedule needs virtual_stages >= 2'):
    # before, nothing was named and the page dropped the whole split (pp 2 too)
    "the interleaved schedule without virtual stages": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "pp": "2", "sched": "interleaved"},
        "sched", "Pipeline schedule"),
}
# the wider fallback each case fell to before session 43, whose numbers differ from the kept
# what-if's (so the headline's check tells them apart)
WIDER = {
    "accumulation the global batch does not split into": {"mode": "weak"},
    "the interleaved schedule without virtual stages": {"pp": 1, "sched": "auto"},
}


def _link(case: dict) -> dict:
    return {"v": "16", **KEPT, **case}


@pytest.mark.parametrize("name", list(CASES))
def test_the_page_below_the_box_is_the_link_with_only_the_named_control_set_back(name):
    case, key, label = CASES[name]
    state, profile, _ = decode_query(_link(case))
    expected = state.model_copy(update={key: profile_defaults(profile).get(
        key, AppState.model_fields[key].default)})
    at = open_app(_link(case))
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert len(errors) == 1, errors
    assert f"Below: this what-if with {label} at its default until" in errors[0]
    plan = make_plan(profile, expected)  # the link's what-if, that control set back
    h = headline(plan)
    assert plan.rows[-1].devices == 64  # the link's largest count kept
    assert at.metric[0].label == f"Scaling efficiency at {h['devices']} devices"
    assert at.metric[0].value == h["efficiency"]
    assert at.metric[3].label.endswith(" / cost")  # the link's price and training length kept
    assert at.metric[3].value == h["time_to_train"]
    assert (at.metric[3].delta or "") == h.get("cost", "")
    assert at.query_params[key] in (case[key], [case[key]])  # what was asked stays in the link
    if name in WIDER:
        wider = headline(make_plan(profile, state.model_copy(update=WIDER[name])))
        assert wider["efficiency"] != h["efficiency"]


@pytest.mark.parametrize("knobs, named", [
    (("nics_per_node", "gbit_per_nic"), ["nics", "gbit"]),  # no knob row: the quantity's name
    (("tp",), ["tp"]),
    (("tp", "pp", "cp"), ["tp", "pp"]),  # cp 1 is its default: nothing to set back
    (("shard_group",), ["sg"]),
    (("seq_len",), ["seq"]),
    (("strategy", "pp", "zero_framework"), ["strat", "pp"]),  # fsdp is zfw's default
    (("accumulation", "global_batch"), ["acc", "gb"]),  # in the error's order
    (("schedule", "virtual_stages"), ["sched"]),
    (("first_bucket_mib",), []),  # a knob the planner has no control for
    ((), []),
])
def test_an_error_names_the_controls_of_its_knobs_that_are_not_at_their_default(knobs, named):
    state = AppState(tp=16, pp=2, sg=3, strat="zero3", seq=2**30, nics=1024, gbit=10000.0,
                     acc=3, mode="strong", gb=64, sched="interleaved")
    assert named_controls(ScalesimError("refused", knobs=knobs), state, {}) == named


def test_the_text_of_an_error_is_not_read():
    """An error that quotes a control with its value but carries no knobs names nothing (the
    text matching of session 42 is gone): a fix's 'use pp 1' cannot name a state at pp 2."""
    state = AppState(tp=16, pp=2)
    assert named_controls(ScalesimError("tp 16 > 8 GPUs per server; use pp 2"), state, {}) == []
    assert named_controls(ValueError("tp 16"), state, {}) == []


@pytest.mark.parametrize("name", list(CASES))
def test_each_bad_what_if_raises_with_its_control_among_its_knobs(name):
    """What the page falls back from: the error of the link's what-if carries the control the
    page sets back among its knobs (tp 2 x pp 128 names tp first: tp 1 alone still needs 128
    devices, so the page sets back pp)."""
    case, key, _ = CASES[name]
    state, profile, _ = decode_query(_link(case))
    with pytest.raises(ScalesimError) as caught:
        make_plan(profile, state)
    named = named_controls(caught.value, state, profile_defaults(profile))
    assert key in named, (str(caught.value), caught.value.knobs)


def test_a_combination_the_scenario_refuses_is_one_line_in_its_own_words():
    """DeepSpeed's ZeRO-3 with pp 2: the box quoted pydantic's three lines ('1 validation error
    for Scenario', the input dict, 'For further information visit https://errors.pydantic.dev')
    and fell back without the split; now the validator's sentence alone, and the strategy it
    names first set back (the rest kept)."""
    at = open_app(_link({"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "zfw": "deepspeed",
                         "pp": "2"}))
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert len(errors) == 1 and "\n" not in errors[0]
    assert "validation error" not in errors[0] and "pydantic" not in errors[0]
    # the knobs it names as the sidebar's controls (session 46: it said the fields, strategy,
    # pp and zero_framework, to a user who set Strategy, Pipeline stages, ZeRO framework)
    assert ("scenario: Strategy zero3 with Pipeline stages 2: DeepSpeed refuses ZeRO-2/3 with "
            "pipeline parallelism; use Strategy zero1, Pipeline stages 1 or ZeRO framework "
            "fsdp.") in errors[0]
    assert "Below: this what-if with Strategy at its default until" in errors[0]
