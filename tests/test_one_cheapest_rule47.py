"""Session 47: "the cheapest" is one rule for decide and goal (``scalesim.cheapest``): totals
within the model's median error of the lowest are the same money, and the soonest of them is
taken (docs/model.md §20 step 4, §21). Before, goal took the strictly lowest total, so on the
default scenario it answered 16 devices in 2.6 days for $3,650 where decide's rule, on the same
two plans, takes 40 devices in 25.5 h for $3,751 (2.8 % dearer, under the 3.0 % error)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
from app_harness import open_app
from cli_harness import run_cli

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR
from scalesim.cheapest import cheapest, same_money
from scalesim.decision import ASSUMPTIONS, DecisionOption, _choose
from scalesim.device_nouns import nouns_for
from scalesim.goal import GoalAnswer, GoalNetwork, GoalPlan, network_answer
from scalesim.profiles import default_profile

GOAL = ["goal", "--train-samples", "2e9", "--deadline", "3d", "--budget", "50000"]


def test_same_money_is_within_the_error_of_the_lowest_and_the_cheapest_is_the_soonest_of_it():
    """$100, $102.9, $103 and $110 at ε = 3 %: 102.9 / 100 - 1 = 2.9 % < 3 % is the same
    money, 3.0 % is not (strictly under, as decide's tie); of $100 (10 h) and $102.9 (5 h) the
    sooner is taken; equal times go to the cheaper; at ε = 0 the lowest; a lowest of $0 is the
    same money only as itself."""
    money, hours = np.array([110.0, 103.0, 102.9, 100.0]), np.array([1.0, 2.0, 5.0, 10.0])
    assert same_money(money, 0.03).tolist() == [False, False, True, True]
    assert cheapest(money, hours, 0.03) == 2
    assert cheapest(money, hours, 0.0) == 3
    assert cheapest([101.0, 100.0], [5.0, 5.0], 0.03) == 1
    assert same_money([0.0, 0.01], 0.03).tolist() == [True, False]


def _option(devices: int, hours: float, usd: float) -> DecisionOption:
    """A decide option that finishes in ``hours`` for ``usd`` in total against today's run of
    100 h for $10,000 (both gain far more than the error over it)."""
    return DecisionOption(
        key="add_server", title=f"{devices} devices", devices=devices, servers=devices // 8,
        runnable=True, samples_per_s=1.0, throughput_gain=100.0 / hours - 1.0,
        usd_per_hour=usd / hours, extra_usd_per_hour=usd / hours - 100.0,
        time_s=hours * 3600.0, time_change=hours / 100.0 - 1.0, total_usd=usd,
        total_change_usd=usd - 10_000.0, price_source="", assumption=ASSUMPTIONS["add_server"])


def test_goal_answers_what_decide_takes_of_the_same_plans(capsys):
    """The default scenario (a2-highgpu-8g, bert-large, data parallel: ε = 3.0 %, 2.8 % since
    session 56). Before: goal
    answered the strictly lowest total (16 devices, 2.6 days, $3,650) while decide's rule, given
    the same two plans, takes 40 devices (25.5 h, $3,751): two "cheapest" answers. Now goal
    answers 40 devices, and a note names the plan $101 (2.8 %) cheaper and why it is not it
    ($97.51, 2.7 %, since session 48's straggler stretch: the answer $3,747). Session 56: the
    16-device plan is DDP, whose bucket copies, 336e6 x 8 B / 1,555 GB/s = 1.73 ms once in its
    1.833 s step of 8 micro-steps, make it 0.094 % dearer ($3,649.94 -> $3,653.06; both plans
    0.009 % cheaper for the reference's copies taken out); the answer, ZeRO-1, pays none
    ($3,747.13): $94.08, 2.6 %, still under ε = 2.8 %: the same money, the same rule."""
    code, out, err = run_cli(capsys, [*GOAL, "--json"])
    assert code == 0, err
    answer = json.loads(out)
    best = answer["best"]
    meets = [p for p in answer["front"] if p["meets"]]
    lowest = min(meets, key=lambda p: p["cost_usd"])
    error = DATA_PARALLEL_MEDIAN_ERROR
    assert answer["model_error"] == error
    # the scenario tells the rules apart: the lowest total is not the answer
    assert lowest is not best and lowest["devices"] == 16 and best["devices"] == 40
    assert 0 < best["cost_usd"] / lowest["cost_usd"] - 1 < error
    assert best["time_s"] < lowest["time_s"] / 2
    # of the plans that meet the goal within the error of the lowest, none is sooner
    same = [p for p in meets if p["cost_usd"] / lowest["cost_usd"] - 1 < error]
    assert min(p["time_s"] for p in same) == best["time_s"]
    # decide's choice among the same two plans (its rule, ``decision._choose``) is goal's answer
    ctx = SimpleNamespace(error=error, words=nouns_for("A100"), profile=default_profile(),
                          now=SimpleNamespace(fits=True, global_batch=1))
    options = [_option(p["devices"], p["time_s"] / 3600.0, p["cost_usd"]) for p in (lowest, best)]
    assert _choose(ctx, options, plainer=lambda o: 0).devices == best["devices"]
    note = next(n for n in answer["notes"] if "within the model's median error" in n)
    assert note.startswith("16 devices (2 servers), micro-batch 128 x 8 accumulation, ddp, "
                           "network as is: 2.6 days for $3,653 costs $94.08 (2.6%) less than the "
                           "answer, within the model's median error of 2.8%: the same money, so "
                           "goal takes the sooner plan, as decide does"), note
    code, text, _ = run_cli(capsys, GOAL)
    assert code == 0
    assert text.startswith("Cheapest plan that meets the goal: 40 devices (5 servers), "
                           "micro-batch 128 x 8 accumulation, zero1, network as\n  is: 25.5 h for "
                           "$3,747."), text[:200]
    assert "\n2.6 days   3,653    yes  16 devices (2 servers)" in text  # kept on the front


def test_the_app_goal_tab_answers_as_the_cli_does():
    """The planner's goal tab (the same ``seek``) answers the same 40 devices and says why the
    $101 cheaper plan is not the answer, in its notes."""
    at = open_app({"v": "1", "train": "2000000000", "dl": "72", "bud": "50000", "tab": "goal"})
    assert any(s.value.startswith("Cheapest plan that meets the goal: 40 devices (5 servers)")
               for s in at.success), [s.value for s in at.success]
    assert any("less than the answer, within the model's median error of 2.8%: the same money"
               in c.value for c in at.caption)


def _plan(network: str, devices: int, hours: float, usd: float) -> GoalPlan:
    return GoalPlan(devices=devices, servers=devices // 8, micro_batch=32, accumulation=1,
                    global_batch=32 * devices, strategy="ddp", network=network,
                    samples_per_s=1.0, time_s=hours * 3600.0, cost_usd=usd, meets=True)


def test_the_faster_network_answer_and_todays_words_take_the_same_rule():
    """Networks meeting a 100 h, $100 goal: one at $90 in 80 h, one at $92 (2.2 % dearer, under
    3 %) in 40 h: the sooner answers; at ε = 1 % the $90 one. A best plan on a faster network
    that costs more than today's, within the error, is said so, not "for $-2 less"."""
    slow = GoalNetwork(name="a", nics_per_node=8, gbit_per_nic=200.0, busbw_GBps=192.0,
                       latency_s=6e-6, extra_usd_per_server_hour=1.0, price_source="",
                       plan=_plan("a", 16, 80.0, 90.0))
    fast = GoalNetwork(name="b", nics_per_node=8, gbit_per_nic=400.0, busbw_GBps=384.0,
                       latency_s=6e-6, extra_usd_per_server_hour=2.0, price_source="",
                       plan=_plan("b", 32, 40.0, 92.0))
    assert network_answer([slow, fast], 100 * 3600.0, 100.0, 0.03) is fast
    assert network_answer([slow, fast], 100 * 3600.0, 100.0, 0.01) is slow
    answer = GoalAnswer(deadline_s=100 * 3600.0, budget_usd=100.0, goal="time to train",
                        train_samples=1e9, reference_batch=256, best=fast.plan, closest=None,
                        front=[], evaluated=2, runnable=2, today=_plan("as is", 16, 80.0, 90.0),
                        model_error=0.03)
    assert answer.sentence.endswith(
        "Today's network is enough: 16 devices (2 servers), micro-batch 32 x 1 accumulation, "
        "ddp, network as is: 3.3 days for $90.00; b costs $2.00 more, within the model's "
        "median error of 3.0%: the same money, and its plan is sooner."), answer.sentence

