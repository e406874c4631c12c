"""Session 46: the app's layout refusals and planner flows, walked as an ML engineer uses them
(docs/reliability.md, "Session 46").

A tp past the server: the box's line named a preset whose server holds tp (gb200-nvl72 at 64
GPUs per server), but its "Controls to change" listed Tensor parallel and Devices per server
only; the hardware preset is a way out, named where the preset table has one that holds tp
(``layout.presets_past_server``), and a fallback never sets it back (another preset is another
profile)."""

from __future__ import annotations

import pytest
from app_harness import cannot_predict_box, open_app, preset_query, run_clean
from scalesim.app.state import AppState, encode_query, preset_profile, with_profile_defaults

from scalesim import presets
from scalesim.layout import presets_past_server


def test_a_tp_past_the_server_names_the_hardware_preset_that_holds_it_and_that_way_runs():
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", tp=16))
    box = cannot_predict_box(at)
    # the line names Tensor parallel itself (session 48): not listed again
    assert " Controls to change: Devices per server, Hardware preset. Below:" in box, box
    assert at.session_state["app_state"].hw == "dgx-h100"  # the fallback keeps the preset
    # the way out the box names: the preset table's server that holds tp 16, at its count
    ((name, per_server),) = presets_past_server(16, 8)
    assert f"the preset {name} at {per_server} GPUs per rack" in box  # an NVL72's server
    at.sidebar.selectbox(key="k_hw").set_value(name)
    run_clean(at)
    at.sidebar.number_input(key="k_dpn").set_value(per_server)
    run_clean(at)
    assert [e.value for e in at.error if e.value.startswith("Cannot predict")] == []
    state = at.session_state["app_state"]
    assert (state.hw, state.dpn, state.tp) == (name, per_server, 16)


def test_the_hardware_preset_is_named_from_the_preset_table(monkeypatch):
    """Without a preset whose server holds tp 16 (the table patched), the box names none."""
    monkeypatch.setattr(presets, "HARDWARE", {n: hw for n, hw in presets.HARDWARE.items()
                                              if hw.devices_per_node < 16})
    box = cannot_predict_box(open_app(preset_query(hw="dgx-h100", wl="llama3-8b", tp=16)))
    assert "the preset" not in box
    assert box.count("Control to change: Devices per server. Below:") == 1, box


@pytest.mark.parametrize("fields", [
    {"hw": "dgx-h100", "wl": "llama3-8b", "tp": 128},  # no preset's server holds 128 (heads 32
    # refuse it as well: the server rule is the first)
    {"hw": "dgx-h100", "wl": "llama3-8b", "dpn": 4, "tp": 8},  # the server's own 8 hold it
], ids=["no preset holds it", "more of the server"])
def test_no_hardware_preset_where_none_is_the_way_out(fields):
    box = cannot_predict_box(open_app(preset_query(**fields)))
    assert "Hardware preset" not in box, box
    assert "Control to change: Devices per server." in box, box


def test_an_uploaded_profile_names_the_button_that_brings_the_preset_pickers_back():
    """An uploaded profile hides the preset pickers: the box says to leave it first."""
    state = AppState(hw="dgx-h100", wl="llama3-8b", tp=16, src="custom")
    profile = preset_profile(state).model_copy(update={"name": "lab"})
    at = open_app(encode_query(with_profile_defaults(state, profile).model_copy(
        update={"tp": 16, "src": "custom"}), profile))
    box = cannot_predict_box(at)
    assert ("Controls to change: Devices per server, Hardware preset (after Leave this "
            "profile). Below:") in box, box
    assert at.sidebar.button(key="leave_profile").label.startswith("Leave this profile")


@pytest.mark.parametrize("fields, words, controls, shown", [
    # strong scaling at global batch 100 over tp 2: dp 32 at 64 devices does not divide it;
    # the line names the page's controls, so no "Controls to change" follows (before session 49
    # (follow-up): "global batch 100 is not divisible by dp 32 ...", then "Controls to change:
    # Global batch, Gradient accumulation.", the box said the CLI's notation; until session 51
    # "... x Gradient accumulation 1 (64 devices); ...", the count said again)
    ({"mode": "strong", "gb": 100, "tp": 2},
     "Global batch 100 is not divisible by 32 data-parallel ranks x Gradient accumulation 1;",
     "pick one divisible by their product: 96 or 128.", 8),
    # shard group 3 divides no power-of-two dp (was "shard group 3 does not divide dp 64", then
    # "Control to change: Shard group (HSDP)."; its count as "... (at 64 devices)." after the
    # way out until session 50 said it first, "at 64 devices, ...", one sentence; until session
    # 51 after the box's own count: "64 devices, ..., cannot run: at 64 devices, Shard group")
    ({"strat": "zero3", "sg": 3},
     "cannot run: Shard group (HSDP) 3 does not divide the 64 data-parallel ranks;",
     "give a divisor of it (e.g. 64: full sharding).", 2),
], ids=["global batch", "shard group"])
def test_a_setting_that_leaves_out_the_largest_count_asked_is_an_error_box(fields, words,
                                                                           controls, shown):
    """The headline moved from the 64 devices asked to a smaller count with only a blue note
    among the others; an error box now says why 64 cannot run, which controls change it, and
    which count the page shows. The page keeps working and the link keeps the what-if."""
    link = preset_query(hw="dgx-h100", wl="llama3-8b", dmax=64, **fields)
    at = open_app(link)
    (box,) = [e.value for e in at.error if "the largest count asked" in e.value]
    assert box.startswith("64 devices, the largest count asked, cannot run: ") and words in box
    assert box.count("64 devices") == 1, box  # the count asked said once
    assert box.endswith(f" {controls} The page shows {shown} devices."), box
    assert "to change" not in box, box
    assert at.metric[0].label == f"Scaling efficiency at {shown} devices"
    assert any("left out" in i.value for i in at.info)  # the note still lists every count
    again = open_app({k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()})
    assert again.session_state["app_state"] == at.session_state["app_state"]


def test_no_error_box_where_the_largest_count_runs():
    """tp 8 x pp 2 leaves out 1 to 8 devices (a note), but 64 runs: no box."""
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", dmax=64, tp=8, pp=2))
    assert [e.value for e in at.error if "largest count asked" in e.value] == []
    assert at.metric[0].label == "Scaling efficiency at 64 devices"


def test_pp_past_the_layers_names_the_pipeline_stages_alone_and_the_link_keeps_it():
    """32 layers over pp 64: the fix is 'use pp <= 32', but the box named Virtual stages too,
    which is at 1 and changes nothing; the refusal's knobs name virtual stages only at 2 or
    more (``layout.layout_problems``)."""
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", dmax=64, pp=64, sched="1f1b"))
    box = cannot_predict_box(at)
    # the line names the controls itself (it named the fields pp and virtual_stages, then
    # 'Control to change: Pipeline stages'), so no list repeats them
    assert ("32 layers cannot fill Pipeline stages 64 x Virtual stages 1 model chunks; use "
            "Pipeline stages \\<= 32. Below:") in box, box
    assert "to change" not in box, box
    assert len(at.metric) >= 4  # the page below the box
    again = open_app({k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()})
    assert again.session_state["app_state"].pp == 64
    assert cannot_predict_box(again) == box
