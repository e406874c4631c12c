"""The app's sequence length (``AppState.seq``, the Layout expander's "Sequence length", link
key ``seq`` from the knob table's row ``seq_len``, link version 16; ``plan.sequence_profile``):
before, the planner showed a transformer's own "sequence N" and had no way to ask another, so a
``plan --seq-len`` row could not be looked at in the app. The page's predictions at a sequence
are ``predict --seq-len``'s (presets and an uploaded measured profile), links of a state
without it stay as they were (tests/test_app_link_keys.py), and older links carrying it open at
the workload's own sequence with a message."""

from __future__ import annotations

import json

import pytest
from app_harness import link_param, open_app, run_clean
from cli_harness import run_cli
from h200_gpt import H200
from scalesim.app.plan import build_scenario, make_plan
from scalesim.app.state import (
    AppState,
    checked_profile,
    decode_query,
    default_state,
    encode_query,
    link_version,
    preset_profile,
    profile_defaults,
)

from scalesim.jsonio import read_json

LLAMA = {"v": "3", "wl": "llama3-8b", "hw": "dgx-h100"}


def assert_plan_is_predict(capsys, plan, argv: list[str]) -> None:
    """Every row the page predicts is ``predict argv --devices <its> ... --json``'s, to 1e-9:
    the step, compute, exposed communication, memory and fit."""
    layout = plan.scenario.layout
    flags = ["--tp", str(layout.tp), "--cp", str(layout.cp)] if layout is not None else []
    batch = (["--global-batch", str(plan.scenario.global_batch)]
             if plan.scenario.global_batch is not None
             else ["--batch", str(plan.scenario.micro_batch)])
    for row in plan.rows:
        code, out, err = run_cli(capsys, ["predict", *argv, *flags, *batch, "--devices",
                                          str(row.devices), "--json"])
        assert code == 0, err
        p = json.loads(out)[0]
        for name in ("step_time_s", "compute_s", "exposed_comm_s", "memory_bytes"):
            assert getattr(row, name) == pytest.approx(p[name], rel=1e-9, abs=1e-15), (row, name)
        assert row.fits == p["fits"]


def test_the_pages_rows_at_a_sequence_are_predict_seq_len_on_presets(capsys):
    """Llama 3 8B on DGX H100 at 32,768 tokens, tp 2 x cp 2, weak scaling at the preset's
    micro-batch, 4 to 16 GPUs (counts below tp x cp = 4 left out): each row the page predicts is
    predict --seq-len 32768's; at its own 8,192 tokens the step is shorter (a quarter of the
    tokens a sequence)."""
    state, profile, messages = decode_query({**LLAMA, "tp": "2"})
    assert messages == []
    at = state.model_copy(update={"cp": 2, "seq": 32768})
    plan = make_plan(profile, at)
    assert [r.devices for r in plan.rows] == [4, 8, 16]
    assert plan.profile.workload.transformer.seq_len == 32768
    assert plan.notes[0].startswith("Sequence length 32768: the transformer at 32,768 tokens")
    assert_plan_is_predict(capsys, plan, ["--workload", "llama3-8b", "--hardware", "dgx-h100",
                                          "--seq-len", "32768"])
    own = make_plan(profile, at.model_copy(update={"seq": None}))
    assert own.rows[-1].step_time_s < plan.rows[-1].step_time_s
    assert plan.profile.workload.transformer.seq_len != own.profile.workload.transformer.seq_len


def test_an_uploaded_measured_profile_at_a_sequence_is_predict_seq_len(capsys):
    """The H200 block calibration (its gpt timed at 1,024 tokens) uploaded, at 2,048 tokens:
    the measured curve scaled as ``predict --profile H200 --seq-len 2048`` scales it, row for
    row to 1e-9; the scaling's note is on the page."""
    profile = checked_profile(read_json(H200), "gpu-profile.json")
    state = default_state().model_copy(update={**profile_defaults(profile), "src": "custom",
                                               "dmax": 8, "seq": 2048})
    plan = make_plan(profile, state)
    assert plan.profile.workload.transformer.seq_len == 2048
    assert any("sequence 2048 instead of 1024" in n for n in plan.notes)
    assert_plan_is_predict(capsys, plan, ["--profile", str(H200), "--seq-len", "2048"])


def test_a_parameter_count_leaves_the_sequence_out_with_a_note():
    """bert-large (the data-parallel preset) has no sequence to change: a link carrying one
    predicts as without it, with a note, as a layout of a parameter count is left out."""
    state = AppState(seq=512)
    profile = preset_profile(state)
    plan = make_plan(profile, state)
    plain = make_plan(profile, state.model_copy(update={"seq": None}))
    assert [r.step_time_s for r in plan.rows] == [r.step_time_s for r in plain.rows]
    assert plan.notes[0] == ("Sequence length 512 left out: workload 'bert-large' is a "
                             "parameter count only (pick a transformer workload such as "
                             "llama3-8b to change its sequence)")


def test_the_sequence_travels_in_a_v16_link_and_older_links_open_at_the_workloads_own():
    """``seq`` is written as v16 only where set; read back as it was; a v3-v15 link carrying it
    (none wrote one) opens at the workload's own sequence with a message; a state without it
    writes the link it wrote before (no seq key, its old version)."""
    base, profile, _ = decode_query({**LLAMA, "tp": "2"})
    assert (base.seq, link_version(base), "seq" not in encode_query(base, profile)) == (
        None, 3, True)
    longer = base.model_copy(update={"seq": 16384})
    params = encode_query(longer, profile)
    assert (params["v"], params["seq"], link_version(longer)) == ("16", "16384", 16)
    state, profile2, messages = decode_query(params)
    assert (state, messages) == (longer, [])
    scenario, _ = build_scenario(state, profile2)
    assert scenario.layout.tp == 2  # the scenario is the same; the profile is at the sequence
    old, _, messages = decode_query({**params, "v": "15"})
    assert old.seq is None
    assert messages[0] == ("ignored seq: a v15 link has no sequence length choice (the "
                           "workload's own)")


def test_the_layout_expanders_control_sets_the_sequence_and_the_link():
    """Under AppTest: the Layout expander of a transformer shows 'Sequence length' (empty: its
    own 8,192); set to 16,384, the link is v16 with seq=16384 and the page's focus prediction
    is the plan's at that sequence."""
    at = open_app({**LLAMA, "dmax": "8"})
    control = at.sidebar.number_input(key="k_seq")
    assert control.value is None and "8,192" in control.label
    control.set_value(16384)
    run_clean(at)
    assert at.session_state["app_state"].seq == 16384
    assert (link_param(at, "v"), link_param(at, "seq")) == ("16", "16384")
    state = at.session_state["app_state"]
    plan = make_plan(preset_profile(state), state)
    assert plan.profile.workload.transformer.seq_len == 16384
