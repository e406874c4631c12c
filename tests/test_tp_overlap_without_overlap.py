"""--tp-overlap with --no-overlap: the model exposes every collective, the tensor-parallel ones
too (docs/model.md §16), so the overlap changes no number; predict, decide, goal and sweep (its
notes), plan's "ranked with" line and the app say it is ignored, instead of calling it on."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.layout import TP_OVERLAP_UNDER_NO_OVERLAP

PREDICT = ["predict", "--workload", "llama3-8b", "--hardware", "dgx-h100", "--devices", "16",
           "--tp", "2", "--no-overlap"]


def test_predict_says_the_overlap_is_ignored_and_its_numbers_are_without_it(capsys):
    # before: 'TP overlap on' in the layout line, no note, the numbers those without it
    code, out, err = run_cli(capsys, [*PREDICT, "--tp-overlap"])
    assert code == 0, err
    assert "TP overlap ignored (overlap off)" in out and "TP overlap on" not in out
    assert f"note: --tp-overlap ignored: {TP_OVERLAP_UNDER_NO_OVERLAP}" in out
    rows = [json.loads(run_cli(capsys, [*PREDICT, *flag, "--json"])[1])[0]
            for flag in (["--tp-overlap"], [])]
    assert rows[0]["step_time_s"] == rows[1]["step_time_s"]
    # with overlap on it is on, and no note
    code, out, _ = run_cli(capsys, [*PREDICT[:-1], "--tp-overlap"])
    assert "TP overlap on" in out and "--tp-overlap ignored" not in out


def test_decide_and_plan_say_it_too(capsys):
    code, out, err = run_cli(capsys, ["decide", *PREDICT[1:], "--tp-overlap"])
    assert code == 0, err
    assert "--tp-overlap ignored: overlap is off" in out
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--devices", "16", "--global-batch", "16", "--tp-overlap",
                                      "--no-overlap", "--top", "1"])
    assert code == 0, err
    ranked = next(line for line in out.splitlines() if line.startswith("ranked with:"))
    assert "--tp-overlap ignored: overlap is off" in ranked
    assert "collectives overlapped with the matmuls" not in ranked


def test_the_app_notes_it():
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import AppState, preset_profile

    state = AppState(hw="dgx-h100", wl="llama3-8b", tp=2, tpo=True, ovl=False)
    _, notes = build_scenario(state, preset_profile(state))
    assert f"Tensor-parallel overlap ignored: {TP_OVERLAP_UNDER_NO_OVERLAP}" in notes
    _, notes = build_scenario(state.model_copy(update={"ovl": True}), preset_profile(state))
    assert not any("overlap ignored" in n for n in notes)
