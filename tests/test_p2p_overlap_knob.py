"""The interleaved schedule's pipeline-send overlap as a layout knob (``ScenarioLayout.p2p_overlap``,
``--p2p-overlap on|off`` on predict, sweep, decide, goal and plan, one row of
``bounds.LAYOUT_KNOBS``, the app's toggle and link key ``p2p``, link v14; docs/model.md §15
"Interleaved sends overlap compute"): on by default (Megatron-Core's ``overlap_p2p_comm``, what
the model assumed for every user scenario before), off for a framework whose sends block; a
layout without the interleaved schedule refuses 'off' in one line (its sends block either way)."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli

from scalesim.bounds import LAYOUT_KNOB_BY_FIELD
from scalesim.errors import ScalesimError
from scalesim.layout import P2P_OVERLAP_HELP
from scalesim.layout_predict import plan_at, scenario_of_row
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

# Llama 3 8B on 4 GPUs of a DGX H100: pp 4 x 2 virtual stages (dp 1), one sequence a
# micro-batch, 8 micro-batches a step
PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "4",
           "--pp", "4", "--virtual-stages", "2", "--batch", "1", "--accumulation", "8"]


def _row(capsys, *flags) -> dict:
    code, out, err = run_cli(capsys, [*PREDICT, "--json", *flags])
    assert code == 0, err
    return json.loads(out)[0]


def test_blocking_sends_add_the_exposed_send_time_by_hand(capsys):
    """pp 4 x v 2 inside one server (N = 1 server), m = 8 micro-batches. One send carries a
    micro-batch's activations, S = 8192 x 4096 x 2 B = 67,108,864 B, over NVLink at 370 GB/s
    and 2 us: t = 2e-6 + S / 370e9 = 183.4 us. Blocking (off): the fill and drain 2 (p - N) t =
    6t plus m v = 16 steady-state chunks of two boundaries each, 32t: 38t = 6.968 ms. Overlapped
    (on, the default): the steady sends hide behind a chunk's forward (4 layers, far longer
    than t) but for the contention share c (the preset's 0.159), 6t + 32 c t = 2.033 ms. The
    step grows by exactly the difference, 32 t (1 - c) = 4.935 ms; nothing else changes."""
    c = resolve_profile(None, "dgx-h100", "llama3-8b").hardware.comm_compute_contention
    t = 2e-6 + 8192 * 4096 * 2 / 370e9
    default, on, off = _row(capsys), _row(capsys, "--p2p-overlap", "on"), _row(
        capsys, "--p2p-overlap", "off")
    assert default == on  # on is what the model assumed before the knob
    assert off["pipeline_comm_s"] == pytest.approx(38 * t, rel=1e-12)
    assert on["pipeline_comm_s"] == pytest.approx(6 * t + 32 * c * t, rel=1e-12)
    assert off["step_time_s"] - on["step_time_s"] == pytest.approx(32 * t * (1 - c), rel=1e-9)
    for part in ("compute_s", "bubble_s", "straggler_s", "tp_comm_s", "memory_bytes"):
        assert off[part] == on[part], part


def test_the_layout_line_says_how_the_sends_run(capsys):
    for flags, said in (([], "pipeline sends overlapped (--p2p-overlap on);"),
                        (["--p2p-overlap", "off"], "pipeline sends blocking (--p2p-overlap off);"),
                        (["--no-overlap"], "pipeline sends blocking (overlap off);")):
        code, out, err = run_cli(capsys, [*PREDICT, *flags])
        assert code == 0, err
        assert said in next(x for x in out.splitlines() if x.startswith("layout:")), out


@pytest.mark.parametrize("layout", [["--pp", "4"], ["--pp", "4", "--schedule", "gpipe"],
                                    ["--tp", "2"]])
def test_off_without_the_interleaved_schedule_is_refused_in_one_line(capsys, layout):
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--batch", "1",
                                      "--accumulation", "8", *layout, "--p2p-overlap", "off"])
    assert code != 0 and out == ""
    assert err.strip() == ("scalesim predict: error: --p2p-overlap off needs the interleaved "
                           "schedule (--pp 2 or more with --virtual-stages 2 or more): the other "
                           "schedules' pipeline sends block either way (docs/model.md §15)")
    code, _, err = run_cli(capsys, [*PREDICT, "--p2p-overlap", "maybe"])
    assert code != 0 and "invalid choice: 'maybe'" in err and "Traceback" not in err


def test_one_table_row_and_one_help_for_the_field_and_the_flags(capsys):
    knob = LAYOUT_KNOB_BY_FIELD["p2p_overlap"]
    assert (knob.flag, knob.url_key, knob.choices) == ("--p2p-overlap", "p2p", ("on", "off"))
    assert ScenarioLayout.model_fields["p2p_overlap"].description == P2P_OVERLAP_HELP
    assert ScenarioLayout().p2p_overlap is True
    for command in ("predict", "sweep", "decide", "goal", "plan"):
        code, out, _ = run_cli(capsys, [command, "--help"])
        assert code == 0 and "--p2p-overlap {on,off}" in out, command


def test_a_scenario_file_carries_it_and_the_flag_overrides_it(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"layout": {"pp": 4, "virtual_stages": 2,
                                           "p2p_overlap": False}}))
    base = [*PREDICT[:5], "--devices", "4", "--batch", "1", "--accumulation", "8",
            "--scenario", str(path), "--json"]
    code, out, err = run_cli(capsys, base)
    assert code == 0, err
    assert json.loads(out)[0] == _row(capsys, "--p2p-overlap", "off")
    code, out, err = run_cli(capsys, [*base, "--p2p-overlap", "on"])
    assert code == 0, err
    assert json.loads(out)[0] == _row(capsys)


def test_sweep_and_decide_take_it(capsys):
    """A sweep over pp 2, 4 with the sends blocking: each row is what predict says, slower than
    overlapped; a sweep whose rows never interleave refuses it in predict's words; the decision
    card's now is predict's."""
    from scalesim.decision import decide
    from scalesim.sweep import sweep

    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    on = Scenario(devices=[8], micro_batch=1, accumulation=8,
                  layout=ScenarioLayout(virtual_stages=2))
    off = on.model_copy(update={"layout": ScenarioLayout(virtual_stages=2, p2p_overlap=False)})
    steps = {k: sweep(profile, s, {"pp": [2, 4]}).columns["step_time_s"]
             for k, s in (("on", on), ("off", off))}
    for i, pp in enumerate((2, 4)):
        split = ScenarioLayout(pp=pp, virtual_stages=2, p2p_overlap=False)
        want = predict(profile, off.model_copy(update={"layout": split}))[0].step_time_s
        assert steps["off"][i] == pytest.approx(want, rel=1e-12) and steps["off"][i] > (
            steps["on"][i])
    with pytest.raises(ScalesimError, match="--p2p-overlap off needs the interleaved schedule"):
        sweep(profile, off.model_copy(update={"layout": ScenarioLayout(p2p_overlap=False)}),
              {"pp": [2, 4]})
    split = off.model_copy(update={"layout": ScenarioLayout(pp=4, virtual_stages=2,
                                                            p2p_overlap=False)})
    assert decide(profile, split, 8).now.samples_per_s == pytest.approx(
        predict(profile, split)[0].samples_per_s, rel=1e-12)
    code, _, err = run_cli(capsys, ["decide", *PREDICT[1:], "--p2p-overlap", "off"])
    assert code == 0, err


def test_a_plan_row_carries_it_and_re_predicts_equal(capsys):
    """The planner of a scenario with blocking sends ranks every interleaved row with them
    (slower than the same row overlapped) and names the setting in each row; the scenario of
    such a row predicts its step; a row that does not interleave keeps the default (predict
    would refuse 'off' there) and its step equals the overlapped plan's."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    blocking = Scenario(devices=[32], global_batch=64,
                        layout=ScenarioLayout(p2p_overlap=False))
    rows = plan_at(profile, blocking, 32, 64, top=None)
    overlapped = {r.layout(64).model_copy(update={"p2p_overlap": True}): r.step_time_s
                  for r in plan_at(profile, Scenario(devices=[32], global_batch=64), 32, 64,
                                   top=None)}
    assert all(r.p2p_overlap is False for r in rows)
    # which rows interleave, by position: a list's `in` would compare rows field by field
    # (pydantic __eq__), quadratic in the thousands of rows
    interleaves = [r.schedule == "interleaved" and r.virtual_stages > 1 for r in rows]
    interleaved = [r for r, i in zip(rows, interleaves, strict=True) if i]
    assert interleaved and any(r.pp == 1 for r in rows)
    flat = next(r for r in rows if r.pp == 1)
    for r, i in [(r, True) for r in interleaved[:3]] + [(flat, False)]:
        again = scenario_of_row(blocking, r)
        assert again.layout.p2p_overlap is (not i)
        assert predict(profile, again)[0].step_time_s == pytest.approx(r.step_time_s, rel=1e-9)
    for r, i in zip(rows, interleaves, strict=True):
        twin = overlapped[r.layout(64).model_copy(update={"p2p_overlap": True})]
        assert (r.step_time_s > twin) if i else (r.step_time_s == twin)
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "32", "--global-batch", "64",
                                      "--p2p-overlap", "off", "--top", "3"])
    assert code == 0 and ("ranked with: the interleaved layouts' pipeline sends blocking "
                          "(--p2p-overlap off)") in out, err


def test_the_library_refuses_off_where_nothing_interleaves():
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    with pytest.raises(ScalesimError, match=r"--p2p-overlap off needs the interleaved schedule"):
        predict(profile, Scenario(devices=[8], layout=ScenarioLayout(pp=2, p2p_overlap=False)))


# ------------------------------------------------------------------ the app and its links

LINK = {"v": "3", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "4", "pp": "4", "vs": "2",
        "mb": "1", "acc": "8"}


def test_a_link_with_blocking_sends_round_trips_as_v14_and_predicts_it():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import decode_query, encode_query, link_version

    state, profile, messages = decode_query(LINK)
    assert messages == [] and state.p2p is True
    assert encode_query(state, profile)["v"] == "3"  # on, the default: still a v3 link
    changed = state.model_copy(update={"p2p": False})
    params = encode_query(changed, profile)
    assert (params["v"], params["p2p"], link_version(changed)) == ("14", "0", 14)
    state2, profile2, messages = decode_query(params)
    assert messages == [] and state2 == changed
    scenario, _ = build_scenario(state2, profile2)
    assert scenario.layout.p2p_overlap is False
    rows, before = make_plan(profile2, state2).rows, make_plan(profile, state).rows
    assert rows == predict(profile2, scenario)
    assert rows[-1].step_time_s > before[-1].step_time_s  # 4 GPUs: pp 4 x v 2


def test_old_links_open_with_the_sends_overlapped_and_the_app_ignores_off_without_interleaving():
    from scalesim.app.plan import build_scenario, make_plan
    from scalesim.app.state import decode_query

    state, _, messages = decode_query({**LINK, "v": "13", "p2p": "0"})
    assert state.p2p is True
    assert messages == ["ignored p2p: a v13 link has no pipeline send overlap choice (the "
                        "interleaved schedule's sends overlapped)"]
    state, profile, messages = decode_query({**LINK, "v": "14", "p2p": "0", "vs": "1"})
    assert messages == [] and state.p2p is False
    scenario, _ = build_scenario(state, profile)
    assert scenario.layout.p2p_overlap is True  # 1F1B: nothing to overlap, predict would refuse
    assert ("Pipeline send overlap ignored: it applies with the interleaved schedule (Pipeline "
            "stages and Virtual stages above 1)") in make_plan(profile, state).notes


def test_the_app_toggle_sets_it_and_the_link_and_is_off_limits_without_interleaving():
    from app_harness import link_param, open_app, run_clean

    at = open_app(LINK)
    toggle = at.sidebar.toggle(key="k_p2p")
    assert toggle.value is True and not toggle.disabled
    toggle.set_value(False)
    run_clean(at)
    assert at.session_state["app_state"].p2p is False
    assert (link_param(at, "p2p"), link_param(at, "v")) == ("0", "14")
    assert open_app({**LINK, "vs": "1"}).sidebar.toggle(key="k_p2p").disabled
