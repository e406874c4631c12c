"""Notes that name a knob speak the reader's words (session 47): the CLI its flags, the app its
controls' labels. Before, ``profiles.workload_at_sequence`` wrote its note as
'--seq-len 4098: the transformer at ...' and the app showed it verbatim (15 of 42 app links of
the session's driver showed '--seq-len'). The note is now a knob refusal
(``layout.knob_value_refusal``): its line names the flag, its template the knob, which the app
says as its control (``errors.in_words_of``); the app never reads the text."""

from __future__ import annotations

from app_harness import open_app, preset_query
from cli_harness import run_cli
from h200_gpt import H200
from scalesim.app.plan import make_plan
from scalesim.app.state import (
    AppState,
    checked_profile,
    default_state,
    preset_profile,
    profile_defaults,
)

from scalesim.errors import template_of
from scalesim.jsonio import read_json
from scalesim.profiles import load_profile, profile_at_sequence, resolve_profile

NOTE = "the transformer at 4,098 tokens per sequence instead of the workload's 8,192"


def shown_texts(at) -> list[str]:
    """Every text the page shows in a box, markdown or caption."""
    return [e.value for kind in ("markdown", "info", "warning", "error", "caption")
            for e in getattr(at, kind)]


def test_the_cli_says_the_sequence_note_with_its_flag(capsys):
    """predict says the flag it was given; sweep the axis flag its user typed (session 47's
    helper: sweep said 'note: --seq-len 4098: ...' of --seq-len-values 4096,4098)."""
    code, out, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--devices", "8",
                                      "--seq-len", "4098"])
    assert code == 0, err
    assert f"note: --seq-len 4098: {NOTE}" in out + err
    code, out, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--devices", "8",
                                      "--seq-len-values", "4096,4098"])
    assert code == 0, err
    assert f"note: --seq-len-values 4098: {NOTE}" in err
    assert "note: --seq-len 4" not in err


def test_the_note_keeps_the_knob_for_its_reader():
    """The library's note is the CLI's line with the knob kept as a template (what the app
    says in its label), on the presets and on a measured profile's own model."""
    (note,) = [n for n in resolve_profile(None, "dgx-h100", "llama3-8b", 4098).notes
               if NOTE in n]
    assert note.startswith("--seq-len 4098: ")
    assert template_of(note).startswith("{seq_len} 4098: ")
    at, _ = profile_at_sequence(load_profile(str(H200)), 2048)
    assert any(template_of(n).startswith("{seq_len} 2048: the transformer at 2,048")
               for n in at.notes)


def test_an_app_link_at_an_odd_sequence_says_the_control_not_the_flag():
    at = open_app(preset_query(hw="dgx-h100", wl="llama3-8b", seq=4098))
    assert any(e.value.startswith(f"Sequence length 4098: {NOTE}") for e in at.info)
    assert not [t for t in shown_texts(at) if "--seq-len" in t]


def test_an_uploaded_profile_at_a_sequence_says_the_control_not_the_flag():
    profile = checked_profile(read_json(H200), "gpu-profile.json")
    state = default_state().model_copy(update={**profile_defaults(profile), "src": "custom",
                                               "dmax": 8, "seq": 2048})
    notes = make_plan(profile, state).notes
    assert any(n.startswith("Sequence length 2048: the transformer at 2,048 tokens")
               for n in notes)
    assert not [n for n in notes if "--seq-len" in n]


def test_the_preset_plan_at_a_sequence_has_no_flag_in_its_notes():
    state = AppState(hw="dgx-a100", wl="gpt-7.5b", seq=2049)
    notes = make_plan(preset_profile(state), state).notes
    assert any(n.startswith("Sequence length 2049: the transformer at 2,049") for n in notes)
    assert not [n for n in notes if "--seq-len" in n]


def test_the_cli_says_the_unmodelled_stall_with_the_loader_flag(capsys):
    code, out, err = run_cli(capsys, ["predict", "--devices", "8"])
    assert code == 0, err
    assert ("note: data stall not modelled: no input pipeline measured (calibrate's loader "
            "phase measures one; --loader-workers then reads it)") in out


def test_the_app_says_the_unmodelled_stall_with_the_loader_control():
    """Every preset link (no input pipeline measured) showed '--loader-workers' in its sources,
    its tables' caption and the loader remedy's note: now the sidebar's 'Loader workers'."""
    said = "calibrate's loader phase measures one; Loader workers then reads it"
    for tab in ("curve", "remedies"):
        at = open_app(preset_query(wl="llama3-8b", tab=tab))
        notes = [v for d in at.dataframe for v in d.value.get("note", [])]
        assert not [t for t in shown_texts(at) + notes if "--loader-workers" in t], tab
        assert [m for m in at.sidebar.markdown if m.value.startswith("**input pipeline**: "
                                                                     "not measured: ")
                and said in m.value], tab  # where the numbers come from
        if tab == "curve":  # the numbers' caption
            assert [c for c in at.caption if c.value.startswith("Data stall not modelled")
                    and said in c.value]
        else:  # the loader remedy's note
            assert [n for n in notes if n.startswith("data stall not modelled") and said in n]


MEASURE = "then scalesim calibrate --from-nccl-tests inter=LOG, or give the measured figure: "


def test_the_cli_says_the_measured_network_figure_as_its_flag(capsys):
    """decide's measure-before-buying note named both ('--inter-busbw, in the app Inter-server
    bus bandwidth'); the CLI now says its flag alone."""
    code, out, err = run_cli(capsys, ["decide", "--devices", "16"])
    assert code == 0, err
    text = " ".join(out.split())  # the note wraps
    assert MEASURE + "--inter-busbw)" in text
    assert "in the app" not in text


def test_the_apps_decision_card_says_the_measured_network_figure_as_its_control():
    at = open_app(preset_query(dmax=16))
    (card,) = [c.value for c in at.caption if "measure it before buying" in c.value]
    said = MEASURE.replace("_", "\\_") + "Inter-server bus bandwidth (GB/s))"  # markdown-escaped
    assert said in card and "--inter-busbw" not in card


def test_the_reports_decision_card_says_it_as_the_control_and_the_card_stays_decides():
    from scalesim.app.report import decision_html

    state = AppState(dmax=16)
    plan = make_plan(preset_profile(state), state)
    html = decision_html(plan)
    assert MEASURE + "Inter-server bus bandwidth (GB/s))" in html
    assert "--inter-busbw" not in html
    # the card is decide's (tests/test_decision.py compares its JSON with the CLI's)
    assert any(n.endswith(MEASURE + "--inter-busbw)") for n in plan.decision.notes)
