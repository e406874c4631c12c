"""A fresh link whose only problem is one control or one combination of controls (session 42's
app walk): the page below the error box was this profile's defaults, dropping every other value
of the link (its 64 devices, price, training length, the rest of its layout), except for a
sequence length or a layout control. Now the controls the error names with their value are set
back to their defaults, each alone first, and the box says which: "Below: this what-if with
<control> at its default"; the rest of the link is kept and predicted."""

from __future__ import annotations

import pytest
from app_harness import open_app
from scalesim.app.named_controls import named_controls
from scalesim.app.plan import headline, make_plan
from scalesim.app.state import AppState, decode_query, profile_defaults

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
    "a shard group that does not divide dp": (
        {"hw": "dgx-h100", "wl": "llama3-8b", "strat": "zero3", "sg": "3"}, "sg",
        "Shard group (HSDP)"),
    "a fixed global batch no count splits": (
        {"mode": "strong", "gb": "3000000000", "acc": "2"}, "gb", "Global batch"),
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


@pytest.mark.parametrize("error, named", [
    ("1024 NICs x 10000 Gbit/s gives a bus bandwidth of 1.2288e+06 GB/s", ["nics", "gbit"]),
    ("tp 16 > 8 GPUs per server", ["tp"]),
    ("no device count is a multiple of tp 2 x pp 128 = 256", ["tp", "pp"]),
    ("shard group 3 does not divide dp 4", ["sg"]),
    ("--seq-len 1,073,741,824: the model cannot be predicted", ["seq"]),
    ("strategy zero3 with pp 2: ...; use zero1, pp 1 or zero_framework fsdp", ["strat", "pp"]),
    ("tp 1 x pp 12 = 12", ["pp"]),  # tp 1 is its default: nothing to set back
    ("tp 160 > 8 GPUs per server", []),  # another value than the state's 16
])
def test_an_error_names_a_control_by_its_knob_names_and_its_value(error, named):
    state = AppState(tp=16 if "16" in error else 2, pp=128 if "128" in error else 12 if "12 ="
                     in error else 2, sg=3, strat="zero3", seq=2**30, nics=1024, gbit=10000.0)
    assert named_controls(error, state, {}) == named


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
    assert "scenario: strategy zero3 with pp 2: DeepSpeed refuses ZeRO-2/3" in errors[0]
    assert "Below: this what-if with Strategy at its default until" in errors[0]
