"""Goal seeking: the cheapest plan within a deadline and a budget, the front, or the closest."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest
from app_harness import open_app
from cli_harness import run_cli

from scalesim.bounds import DEVICES_MAX, GOAL_DEFAULT_MAX_DEVICES
from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.figures import amount
from scalesim.goal import device_grid, pareto_front, seek
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

DAY_S = 86400.0
BASE = Scenario(train_samples=2e9, critical_batch_size=4096.0)


def test_the_cheapest_plan_meets_both_limits_and_nothing_cheaper_does():
    answer = seek(default_profile(), BASE, 3 * DAY_S, 50_000)
    best = answer.best
    assert best is not None and best.meets
    assert best.time_s <= 3 * DAY_S and best.cost_usd <= 50_000
    # the same plan predicted on its own gives the same time and cost
    row = predict(default_profile(), BASE.model_copy(update={
        "devices": [best.devices], "micro_batch": best.micro_batch,
        "accumulation": best.accumulation, "strategy": best.strategy}))[0]
    assert row.samples_per_s == pytest.approx(best.samples_per_s, rel=1e-9) or (
        best.network != "as is")
    # no plan on the front that meets the goal is cheaper past the model's error (decide's
    # rule, ``cheapest``: totals within it are the same money), nor sooner within it
    low = min(p.cost_usd for p in answer.front if p.meets)
    assert best.cost_usd / low - 1 < answer.model_error
    assert all(p.time_s >= best.time_s for p in answer.front
               if p.meets and p.cost_usd / low - 1 < answer.model_error)
    assert "Cheapest plan that meets the goal" in answer.sentence


def test_the_front_is_pareto_optimal():
    answer = seek(default_profile(), BASE, 3 * DAY_S, 50_000)
    times = [p.time_s for p in answer.front]
    costs = [p.cost_usd for p in answer.front]
    assert times == sorted(times) and costs == sorted(costs, reverse=True)
    t = np.array([3.0, 1.0, 2.0, 2.0, 4.0])
    c = np.array([1.0, 5.0, 2.0, 3.0, 0.5])
    assert list(pareto_front(t, c)) == [1, 2, 0, 4]


def test_the_answer_is_on_the_front_it_is_shown_with():
    """Session 16 user's pass: of a front of 125 plans the 40 shown were spread evenly and the
    answer (24 devices, 2.1 days, $5,045) was not among them, so the table said 'no plan is both
    sooner and cheaper' of a front that skipped the plan the sentence above it recommended. The
    answer's plan is kept, and a note says how many of the front are shown."""
    answer = seek(default_profile(), BASE, 3 * DAY_S, 50_000)
    assert answer.best is not None and answer.best in answer.front
    shown = [n for n in answer.notes if "plans on the front shown" in n]
    assert shown and shown[0].startswith(f"{len(answer.front)} of the ")
    # session 39: it ended "..., with the answer's", which read as a sentence cut short
    assert shown[0].endswith("from the soonest to the cheapest, the answer's plan among them")
    closest = seek(default_profile(), BASE, 3600.0, 10.0)
    assert closest.closest is not None and closest.closest in closest.front


def test_one_device_is_one_device_in_the_goals_words():
    """'1 devices (1 server)' on goal's front (session 16 user's pass): now '1 device'."""
    from scalesim.goal import GoalPlan, describe

    one = GoalPlan(devices=1, servers=1, micro_batch=16, accumulation=8, global_batch=128,
                   strategy="ddp", network="as is", samples_per_s=500.0, time_s=1.0,
                   cost_usd=1.0, meets=False)
    assert describe(one).startswith("1 device (1 server), micro-batch 16 x 8")


def test_no_plan_meets_an_impossible_goal_and_the_closest_is_named():
    answer = seek(default_profile(), BASE, 3600.0, 10.0)
    assert answer.best is None and answer.closest is not None
    assert answer.sentence.startswith("No plan meets the goal. Closest:")
    assert answer.sentence.endswith("(misses the deadline of 1.0 h and the budget of $10.00).")
    # a budget missed by less than the figures show says by how much: it read "for $5,045
    # (misses the budget of $5,045)" (the money audit)
    cheapest = min(p.cost_usd for p in seek(default_profile(), BASE, 1e9, 1e9).front)
    tight = seek(default_profile(), BASE, 1e9, cheapest - 0.01)
    assert amount(cheapest) == amount(cheapest - 0.01)  # this case: the two print alike
    assert tight.best is None and tight.closest.cost_usd == cheapest
    assert tight.sentence.endswith(f"(misses the budget of ${amount(cheapest - 0.01)} by "
                                   f"${amount(cheapest - (cheapest - 0.01))}).")
    assert " by $" not in answer.sentence  # $10.00 against the closest's hundreds: no need


def test_bad_goals_are_one_clear_error():
    with pytest.raises(ScalesimError, match="deadline_s"):
        seek(default_profile(), BASE, float("nan"), 1.0)
    with pytest.raises(ScalesimError, match="training length"):
        seek(default_profile(), Scenario(), DAY_S, 1.0)
    from scalesim.presets import get_hardware, get_workload
    from scalesim.profiles import profile_from_presets

    unpriced = profile_from_presets(get_hardware("pcie-8gpu-100gbe"), get_workload("bert-large"))
    with pytest.raises(ScalesimError, match="price"):
        seek(unpriced, BASE, DAY_S, 1.0)


def test_device_grid_fills_servers():
    assert device_grid(8, 40) == [1, 2, 4, 8, 16, 24, 32, 40]


def test_cli_goal_json_and_table(capsys):
    assert main(["goal", "--train-samples", "2e9", "--critical-batch", "4096", "--deadline",
                 "3d", "--budget", "50000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"]["meets"] and data["sentence"].startswith("Cheapest plan")
    assert main(["goal", "--train-samples", "2e9", "--deadline", "1h", "--budget", "10"]) == 0
    assert capsys.readouterr().out.startswith("No plan meets the goal")
    with pytest.raises(SystemExit) as exc:
        main(["goal", "--train-samples", "2e9", "--deadline", "soon", "--budget", "1"])
    assert exc.value.code == 2


def test_the_app_goal_tab_shows_the_answer_and_the_front():
    at = open_app({"v": "1", "train": "2000000000", "cbs": "4096", "dl": "72", "bud": "50000",
                   "tab": "goal"})
    assert any("Cheapest plan that meets the goal" in s.value for s in at.success)
    assert len(at.get("vega_lite_chart")) == 1
    assert any("Chart in words" in c.value for c in at.caption)


def test_max_devices_takes_the_devices_bound():
    base = Scenario(devices=[8], train_samples=2e9, price_per_device_hour=4.0)
    for bad, why in ((0, "outside 1 <= x <= 1,048,576"), (2**21, "outside"),
                     (2.5, "not a whole number")):
        with pytest.raises(ScalesimError, match=f"max_devices: .*{why}"):
            seek(default_profile(), base, 3 * 86400.0, 50_000.0, bad)


def test_the_default_largest_device_count_is_one_constant_read_without_the_model(capsys,
                                                                                  monkeypatch):
    """scalesim.bounds.GOAL_DEFAULT_MAX_DEVICES is seek()'s default and the CLI's; the CLI
    module reads it without importing goal seeking (or the sweep behind it)."""
    assert inspect.signature(seek).parameters["max_devices"].default == GOAL_DEFAULT_MAX_DEVICES
    seen = {}
    import scalesim.goal as goal

    def fake_seek(profile, scenario, deadline_s, budget_usd, max_devices, layout=None):
        seen["max_devices"] = max_devices
        return seek(profile, scenario, deadline_s, budget_usd, 16, layout=layout)

    monkeypatch.setattr(goal, "seek", fake_seek)
    assert main(["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "5e4"]) == 0
    assert seen["max_devices"] == GOAL_DEFAULT_MAX_DEVICES
    assert f"(default {GOAL_DEFAULT_MAX_DEVICES})" in _help(capsys)
    code = ("import sys, scalesim.cli.cmd_goal; "
            "print(sorted(m for m in ('scalesim.goal', 'scalesim.sweep', 'scalesim.predict') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _help(capsys) -> str:
    return run_cli(capsys, ["goal", "--help"])[1]


def test_max_devices_flag_takes_the_devices_bound(capsys):
    args = ["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "5e4"]
    code, _, err = run_cli(capsys, [*args, "--max-devices", str(DEVICES_MAX + 1)])
    assert code == 2
    err = err.strip()
    assert "--max-devices" in err and "1,048,576" in err and "\n" not in err


def test_past_a_thousand_servers_the_grid_steps_by_a_tenth_of_a_percent():
    from scalesim.goal import WHOLE_SERVERS

    assert device_grid(8, 8 * WHOLE_SERVERS) == [1, 2, 4, *range(8, 8 * WHOLE_SERVERS + 1, 8)]
    grid = np.array(device_grid(8, DEVICES_MAX))
    assert grid[-1] == DEVICES_MAX and len(grid) < 7000
    servers = grid[grid >= 8 * WHOLE_SERVERS] // 8
    assert np.max(np.diff(servers) / servers[:-1]) <= 1.0 / WHOLE_SERVERS
    assert np.max(np.diff(servers) / servers[:-1]) > 0.99 / WHOLE_SERVERS


def test_deadline_and_budget_take_their_bounds_from_the_one_table(capsys):
    """``--deadline``/``--budget``, ``seek`` and the app's Goal controls (link keys ``dl`` in
    hours, ``bud``) accept and refuse the same values: quantities ``deadline_s`` and
    ``budget_usd`` of scalesim.bounds (before: three sets of limits, the app's 0.1 h and $1
    floors refusing what the CLI took, seek taking a deadline of 1,000 years)."""
    from scalesim.app.state import AppState, field_bounds

    from scalesim.bounds import bound

    deadline, budget = bound("deadline_s"), bound("budget_usd")
    assert field_bounds("dl") == pytest.approx((deadline.low / 3600, deadline.high / 3600))
    assert field_bounds("bud") == (budget.low, budget.high)
    AppState(dl=0.05, bud=0.5)  # three minutes and fifty cents: the CLI takes both
    code, _, err = run_cli(capsys, ["goal", "--train-samples", "2e9", "--deadline", "3m",
                                    "--budget", "0.5", "--json"])
    assert code == 0, err
    too_long = deadline.high * 1.5
    with pytest.raises(ScalesimError, match="deadline_s"):
        seek(default_profile(), BASE, too_long, 50_000)
    with pytest.raises(ScalesimError, match="budget_usd"):
        seek(default_profile(), BASE, DAY_S, budget.high * 2)
    code, _, err = run_cli(capsys, ["goal", "--train-samples", "2e9", "--deadline",
                                    f"{too_long:.0f}", "--budget", "1"])
    assert code == 2 and deadline.why in err, err


@pytest.mark.parametrize("flag, value", [("--devices", "8"), ("--strategy", "zero3")])
def test_a_flag_goal_searches_over_is_refused_not_ignored(capsys, flag, value):
    """goal searches every device count up to --max-devices and every strategy: --devices 8 or
    --strategy zero3 changed nothing in its answer (accepted and ignored). One line now, naming
    the flag and what to give instead."""
    code, _, err = run_cli(capsys, ["goal", "--train-samples", "2e9", "--deadline", "3d",
                                    "--budget", "50000", flag, value])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert flag in err and "searches" in err


def test_a_layout_no_device_count_can_run_is_one_line(capsys):
    """goal --tp 3 (no power of two or whole server divides by 3) dropped every combination;
    the layout path then raised numpy's "select with an empty condition list" (a traceback,
    also from ``sweep --tp-values 3 --devices 8``). Now goal says in one line that no count
    runs the layout, and the sweep (which wrote its header and a note, exit 0, until
    s8_leftovers) fails in one line with the count by reason, as the data-parallel sweep does."""
    code, _, err = run_cli(capsys, ["goal", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--tp", "3", "--train-samples", "1e7", "--deadline", "7d",
                                    "--budget", "1e6", "--max-devices", "64"])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    # session 48: tp 3 divides no server of 8, said as predict says it (was 'no device count up
    # to 64 can run the layout tp 3 x pp 1: all ... combinations break a layout rule')
    assert err == ("scalesim goal: error: tp 3 does not divide the 8 GPUs per server; use tp 1, "
                   "2, 4 or 8, or 6 GPUs per server\n")
    code, out, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--hardware",
                                      "dgx-h100", "--devices", "8", "--tp-values", "3"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "all 1 dropped (1 breaks a layout rule" in err


def test_goal_without_a_length_or_a_price_names_the_flags(tmp_path, capsys):
    """`goal --deadline 3d --budget 50000` said `goal seeking needs a training length
    (train_samples) or E_min with a critical batch size`: the scenario's field names, not the
    flags; a hardware file without a price said `(price_per_device_hour)`."""
    from cli_harness import run_cli

    from scalesim.presets import HARDWARE

    code, out, err = run_cli(capsys, ["goal", "--deadline", "3d", "--budget", "50000"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--train-samples" in err and "--min-samples with --critical-batch" in err, err
    hardware = tmp_path / "mybox.json"
    hardware.write_text(HARDWARE["dgx-a100"].model_copy(
        update={"name": "mybox", "price_per_device_hour": None}).model_dump_json())
    argv = ["goal", "--deadline", "3d", "--budget", "50000", "--train-samples", "1e9",
            "--hardware", str(hardware)]
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "hardware 'mybox' lists none; give --price" in err, err
    code, out, err = run_cli(capsys, [*argv, "--price", "3"])
    assert code == 0, err


def test_a_zero_price_is_said_once_in_goal_decide_and_predict(capsys):
    """`goal --price 0`: every plan cost $0 and 'cheapest' silently picked the soonest (decide
    recommended an option that 'saves $0'). A zero price stays accepted (servers already paid
    for cost nothing more per hour) and the three commands say what it does, in one note."""
    from scalesim.decision import decide
    from scalesim.training_time import resolve_goal, zero_price_note

    free = BASE.model_copy(update={"price_per_device_hour": 0.0})
    answer = seek(default_profile(), free, 3 * DAY_S, 50_000)
    notes = [n for n in answer.notes if n.startswith("the price is $0 per device-hour")]
    assert len(notes) == 1 and "the cheapest is simply the soonest" in notes[0]
    assert answer.best is not None and answer.best.cost_usd == 0.0
    priced = seek(default_profile(), BASE.model_copy(update={"price_per_device_hour": 4.0}),
                  3 * DAY_S, 50_000)
    assert not any("$0 per device-hour" in n for n in priced.notes)
    card = decide(default_profile(), free.model_copy(update={"devices": [16]}), 16)
    assert notes[0] in card.notes
    assert "saves $0" not in card.recommendation
    for argv in (["goal", "--deadline", "3d", "--budget", "50000"],
                 ["decide", "--devices", "8,16"], ["predict", "--devices", "8,16"]):
        code, out, err = run_cli(capsys, [*argv, "--train-samples", "2e9", "--price", "0"])
        assert code == 0, err
        assert out.count("the price is $0 per device-hour") == 1, (argv, out)
        code, out, err = run_cli(capsys, [*argv, "--train-samples", "2e9", "--price", "2"])
        assert code == 0 and "$0 per device-hour" not in out, (argv, out)
    # no money compared, nothing to say
    no_length = resolve_goal(default_profile(), Scenario(price_per_device_hour=0.0))
    assert zero_price_note(no_length) is None


def test_the_pareto_chart_in_words_counts_what_it_shows():
    """The app's text alternative of the Pareto chart said '41 plans on the front' of a front
    of 125 (41 shown) and '(39.9 days for $3,515, 1 devices)': now the plans on the chart, and
    '1 device'."""
    from scalesim.app.charts import pareto_text

    answer = seek(default_profile(), BASE, 3 * DAY_S, 50_000)
    text = pareto_text(answer)
    assert text.startswith(f"{len(answer.front)} plans of the front on the chart, ")
    assert answer.front[-1].devices == 1 and text.count(", 1 device)") == 1
    assert "1 devices" not in text


def test_where_no_plan_fits_goal_says_there_is_no_front_not_a_header_over_no_rows(capsys):
    """gpt-76.1b on at most 8 A100 80GB (1,134 GiB of states: 142 GiB each at 8) fits nowhere:
    goal printed the front's column header over no rows (session 18)."""
    code, out, _ = run_cli(capsys, ["goal", "--hardware", "dgx-a100", "--workload", "gpt-76.1b",
                                    "--deadline", "30d", "--budget", "1000", "--max-devices", "8",
                                    "--train-samples", "1e6"])
    assert code == 0
    # searched layouts (session 43): the planner's, none of which fits
    assert "none fits in device memory, so there was no plan to evaluate" in out
    assert "time against money: no Pareto front, no plan fits in memory" in out
    assert "meets  plan" not in out
