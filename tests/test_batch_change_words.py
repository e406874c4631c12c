"""Session 19 (splitname19): a decision option that trains at another global batch than today's
says so in its row ('global batch 4x'), in decide, the app's card and the HTML report, and where
a critical batch size is known that the time column counts its large-batch penalty. Was: the
card set 'Settings: accumulate gradients over 4 micro-steps (now 1)' (global batch 4x) beside
options at today's batch, and only the assumption line mentioned it (docs/reliability.md)."""

from __future__ import annotations

from html import escape

import pytest
from app_harness import open_app
from cli_harness import run_cli, whole_lines
from scalesim.app.plan import make_plan
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.decision import card_rows, decide
from scalesim.figures import multiple
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

PENALTY = " (its large-batch penalty is in the time)"


def _global_batch(profile, scenario, o) -> int:
    """The option's global batch, from the remedy's own prediction at its device count."""
    from scalesim.remedies import rank_remedies

    if o.key == "settings":
        _, ranked = rank_remedies(profile, scenario, o.devices)
        title = o.title.removeprefix("Settings: ").split(", global batch")[0]
        (r,) = [r for r in ranked if r.title.lower() == title.lower()]
        return r.prediction.global_batch
    return predict(profile, scenario.model_copy(update={"devices": [o.devices]}))[0].global_batch


@pytest.mark.parametrize("critical", [None, 4096.0])
def test_each_option_at_another_global_batch_says_so(critical):
    profile = default_profile()
    scenario = Scenario(devices=[16], micro_batch=32, train_samples=1e8,
                        critical_batch_size=critical)
    card = decide(profile, scenario, 16)
    today = card.now
    now_batch = predict(profile, scenario)[0].global_batch
    said = 0
    for o, row in zip(card.options, card_rows(card)[1:], strict=True):
        assert row["option"] == o.title
        if o.key not in ("settings", "add_server", "fewer_servers"):  # today's batch: nothing said
            assert "global batch" not in o.title
            continue
        ratio = _global_batch(profile, scenario, o) / now_batch
        assert ratio != 1
        words = f", global batch {multiple(ratio)}" + (PENALTY if critical else "")
        assert o.title.endswith(words), o.title
        said += 1
    assert said and "global batch" not in today.title


def test_decide_prints_the_batch_change_in_the_row(capsys):
    code, out, err = run_cli(capsys, ["decide", "--devices", "8,16", "--batch", "32",
                                      "--train-samples", "1e8"])
    assert code == 0, err
    out = whole_lines(out)
    (row,) = [line for line in out.splitlines() if line.startswith("Settings: ")]
    assert row.startswith("Settings: accumulate gradients over 4 micro-steps (now 1), "
                          "global batch 4x ")
    (network,) = [line for line in out.splitlines() if line.startswith("Network: ")]
    assert "global batch" not in network


def test_the_app_card_and_report_say_it_as_decide_does():
    from scalesim.app.report import report_html

    state = default_state().model_copy(update={"cbs": 4096.0})
    plan = make_plan(preset_profile(state), state)
    (settings,) = [o.title for o in plan.decision.options if o.key == "settings"]
    # the page's arrow since session 51, as its layout changes (decide's '(32 -> 64)')
    assert settings == ("Settings: double the per-device batch (32 → 64), global batch 2x"
                        + PENALTY)
    at = open_app(encode_query(plan.state, plan.profile))
    card = next(t for t in at.get("table")).value
    assert settings in card.index
    assert escape(settings) in report_html(plan, "http://x/")
