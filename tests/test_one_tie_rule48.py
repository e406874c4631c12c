"""Session 48: decide and goal take one whole rule for "the cheapest" (``cheapest.choose``,
docs/model.md §20 steps 4-5): totals within the model's median error ε of the lowest are the
same money and the soonest of them leads (session 47), and times within ε of the lead's are the
same speed, a tie going to the plainer (decide: nothing to buy, fewer servers; goal: today's
network, fewer devices). Before, goal had no speed tie: at `--deadline 20h` it answered 1,024
devices in 1.03 h for $3,863 (and the EFA row 1,024 devices, 59 min, $4,120), the most it
searched, for a 2.3 % speed the model cannot tell. Kept from session 47 on purpose: within the
same money, a sooner plan past ε is taken (the EFA row is not 16 devices, 2.6 days, $4,030)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
from cli_harness import run_cli

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR
from scalesim.cheapest import cheapest, choose, plainest
from scalesim.decision import ASSUMPTIONS, DecisionOption, _choose
from scalesim.device_nouns import nouns_for
from scalesim.profiles import default_profile

GOAL = ["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "50000", "--json"]
EFA = "4 x 100 Gb/s EFA (AWS p4d.24xlarge)"


def test_the_rule_by_hand_same_money_then_the_soonest_then_the_plainest_of_equal_speed():
    """Plans (devices, hours, $): (16, 62.4, 4,030), (1,000, 1.006, 4,120), (1,024, 0.982,
    4,120) and (2,048, 0.5, 4,200) at ε = 3 %: $4,200 is 4.2 % over the lowest, not the same
    money; of the rest the soonest is 1,024 (the lead, ``cheapest``); 1,000 is 2.4 % slower,
    the same speed, and plainer (fewer devices): taken. 16 devices, 63x slower, is no tie.
    At ε = 2.3 % the money is still the same (2.2 %) but 1,000 devices is no tie in speed
    (2.4 %): the lead is taken."""
    usd = np.array([4030.0, 4120.0, 4120.0, 4200.0])
    hours = np.array([62.4, 1.006, 0.982, 0.5])
    devices = [16, 1000, 1024, 2048]
    assert cheapest(usd, hours, 0.03) == 2
    assert choose(usd, hours, lambda i: (devices[i],), 0.03) == 1
    assert choose(usd, hours, lambda i: (devices[i],), 0.023) == 2
    assert choose(usd, hours, lambda i: (0,), 0.03) == 2  # equally plain: the lead
    # a plainer plan dominated within ε (slower and dearer) is still the same speed and money
    assert plainest([0.0, 0.01, 0.2], 0, lambda i: (-i,), 0.03) == 1


def _option(key: str, devices: int, hours: float, usd: float) -> DecisionOption:
    """A decide option finishing in ``hours`` for ``usd`` against today's 100 h, $10,000."""
    return DecisionOption(
        key=key, title=f"{devices} devices", devices=devices, servers=devices // 8,
        runnable=True, samples_per_s=1.0, throughput_gain=100.0 / hours - 1.0,
        usd_per_hour=usd / hours, extra_usd_per_hour=usd / hours - 100.0,
        time_s=hours * 3600.0, time_change=hours / 100.0 - 1.0, total_usd=usd,
        total_change_usd=usd - 10_000.0, price_source="", assumption=ASSUMPTIONS["add_server"])


def test_decide_takes_the_same_choice_as_the_shared_rule():
    """decide's ``_choose`` (its recommendation and add-server option) and ``cheapest.choose``
    (goal's) pick the same of the same plans, with the same plainer key (fewer devices)."""
    plans = [(16, 62.4, 4030.0), (1000, 1.006, 4120.0), (1024, 0.982, 4120.0),
             (2048, 0.5, 4200.0)]
    ctx = SimpleNamespace(error=DATA_PARALLEL_MEDIAN_ERROR, words=nouns_for("A100"),
                          profile=default_profile(), now=SimpleNamespace(fits=True,
                                                                        global_batch=1))
    options = [_option("add_server", *p) for p in plans]
    picked = _choose(ctx, options, plainer=lambda o: o.devices)
    shared = choose([p[2] for p in plans], [p[1] for p in plans], lambda i: (plans[i][0],),
                    DATA_PARALLEL_MEDIAN_ERROR)
    assert picked is options[shared] and picked.devices == 1000


def test_goals_efa_row_takes_the_plainer_of_equal_speed_and_says_its_count_is_the_bound(capsys):
    """README's default at 3 days / $50,000: the EFA row was 1,024 devices, 59 min, $4,120
    (the soonest of its same money, the most devices searched); now 1,000 devices (125
    servers), 1.0 h, $4,120: 2.4 % slower, under ε = 3.0 %. Not the 16-device, 2.6-day,
    $4,030 plan: 2.2 % cheaper, the same money, and far slower. A note says the soonest plan
    of that money is at the most devices searched and how to cap them. The answer (40
    devices, 25.5 h, $3,751 in session 47) is $3,747 since session 48's straggler stretch.
    Session 56: the EFA row's plan is DDP, whose bucket copies (336e6 x 8 B / 1,555 GB/s = 1.73
    ms, less 0.16 ms for the reference's copies taken out of 8 x 128 samples' compute) add
    1.57 ms to its 1.93 s step: $4,119.88 -> $4,123.35; still 2.4 % slower than the 1,024-device
    lead, under ε = 2.8 %: the same tie. The answer, ZeRO-1, pays none."""
    code, out, err = run_cli(capsys, GOAL)
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["best"]["devices"], round(answer["best"]["cost_usd"])) == (40, 3747)
    efa = next(n for n in answer["networks"] if n["name"] == EFA)["plan"]
    assert (efa["devices"], efa["servers"], round(efa["cost_usd"])) == (1000, 125, 4123)
    assert 0.982 / 1.03 < efa["time_s"] / 3600 < 0.982 * 1.03
    assert "Cheapest faster network that meets the goal: " + EFA in answer["network_sentence"]
    assert "1,000 devices (125 servers)" in answer["network_sentence"]
    bound = [n for n in answer["notes"] if "the most searched" in n]
    assert bound == [f"for {EFA}'s row, 8 x 200 Gb/s HDR InfiniBand (as in a DGX A100)'s row "
                     "and 8 x 400 Gb/s NDR InfiniBand (as in a DGX H100)'s row, the soonest "
                     "plan of the same money runs on 1,024 devices, the most searched: that "
                     "count is the search's bound, not the goal's (more devices may be as "
                     "cheap and sooner still); give --max-devices the most devices you can "
                     "rent at once"], bound


def test_goals_answer_at_20h_is_the_plainer_of_equal_speed_and_a_note_names_the_lead(capsys):
    """At `--deadline 20h` the answer was 1,024 devices (128 servers), 1.03 h, $3,863; now
    1,000 (125 servers), 1.05 h, $3,860 ($3,850 since session 48's straggler stretch, the
    1,024-device plan's $3,853): the 1,024-device plan is 2.3 % sooner, under ε,
    so goal takes the plan on fewer devices, as decide takes the option with less to buy, and
    says so; that plan stays on the front, which the answer, within ε of it, is just off.
    Session 56: both are DDP, whose bucket copies add 1.73 - 0.16 (the reference's copies out
    of 8 x 128 samples) = 1.57 ms to a 1.931 s step, +0.081 %: $3,850.27 -> $3,853.40, the
    1,024-device plan $3,856, still 2.3 % sooner and $3.01 dearer, under ε = 2.8 %."""
    code, out, err = run_cli(capsys, [*GOAL[:4], "20h", *GOAL[5:]])
    assert code == 0, err
    answer = json.loads(out)
    best = answer["best"]
    assert (best["devices"], best["servers"], round(best["cost_usd"])) == (1000, 125, 3853)
    note = next(n for n in answer["notes"] if "the same speed and money" in n)
    assert note == ("1,024 devices (128 servers), micro-batch 128 x 8 accumulation, ddp, network "
                    "as is: 1.0 h for $3,856 is 2.3% sooner than the answer and $3.01 dearer, "
                    "within the model's median error of 2.8%: the same speed and money, so goal "
                    "takes the plainer plan (on fewer devices, fewer to rent at once), as decide "
                    "takes the option with less to buy"), note
    assert any(p["devices"] == 1024 and p["network"] == "as is" for p in answer["front"])
    # the answer is off the front (a plan within ε is both sooner and cheaper), and the front's
    # note says which plan of it the answer ties with, not "the answer's plan among them"
    assert best not in answer["front"]
    assert any(n.endswith("the plan the answer ties with in speed and money among them")
               for n in answer["notes"])
    assert any(n.startswith("for the answer, " + EFA + "'s row") for n in answer["notes"])
    code, text, _ = run_cli(capsys, [*GOAL[:4], "20h", *GOAL[5:-1]])
    assert text.startswith("Cheapest plan that meets the goal: 1,000 devices (125 servers)"), text


def test_a_device_cap_the_user_gives_bounds_every_row(capsys):
    """`--max-devices 64`: the EFA row is 64 devices (8 servers), 15.5 h, $4,062, within the
    cap; its note names 64 as the bound."""
    code, out, err = run_cli(capsys, [*GOAL, "--max-devices", "64"])
    assert code == 0, err
    answer = json.loads(out)
    efa = next(n for n in answer["networks"] if n["name"] == EFA)["plan"]
    assert (efa["devices"], round(efa["cost_usd"])) == (64, 4062)
    assert all(p["devices"] <= 64 for p in answer["front"])
    assert any("runs on 64 devices, the most searched" in n for n in answer["notes"])
