"""A split model's micro-batch is per replica of tp x pp devices: goal, decide and the layout
rows say the layout with it (session 17; session 16's user read goal's `micro-batch 4 x 8` of
`--tp 2` as per device, twice the global batch)."""

from __future__ import annotations

from scalesim.decision import decide
from scalesim.goal import GoalPlan, describe, seek
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

DAY_S = 86400.0


def test_goal_words_a_split_plan_with_its_layout_and_global_batch():
    """`goal --workload gpt-1.7b --tp 2 --train-samples 2e7 --deadline 3d --budget 50000` said
    `16 devices (2 servers), micro-batch 4 x 8 accumulation`; the 4 is per replica of 2 GPUs
    (global batch 4 x 8 x dp 8 = 256, not 512)."""
    profile = resolve_profile(None, None, "gpt-1.7b")
    base = Scenario(train_samples=2e7, layout=ScenarioLayout(tp=2))
    answer = seek(profile, base, 3 * DAY_S, 50000.0)
    best = answer.best
    assert best is not None and best.tp == 2 and best.pp == 1
    dp = best.devices // 2
    assert best.global_batch == best.micro_batch * best.accumulation * dp
    assert (f"{best.devices} devices ({best.servers} servers) as dp {dp} x tp 2 x pp 1, "
            f"micro-batch {best.micro_batch} per replica x {best.accumulation} accumulation "
            f"(global batch {best.global_batch:,})") in answer.sentence
    assert all(p.tp == 2 for p in answer.front)


def test_goal_words_an_unsplit_plan_as_before():
    plan = GoalPlan(devices=16, servers=2, micro_batch=4, accumulation=8, global_batch=512,
                    strategy="ddp", network="as is", samples_per_s=1.0, time_s=1.0,
                    cost_usd=1.0, meets=True)
    assert describe(plan).startswith("16 devices (2 servers), micro-batch 4 x 8 accumulation, ")
    split = GoalPlan(**{**plan.__dict__, "global_batch": 128, "tp": 2, "pp": 2})
    assert describe(split).startswith("16 devices (2 servers) as dp 4 x tp 2 x pp 2, micro-batch "
                                      "4 per replica x 8 accumulation (global batch 128), ")


def test_decide_says_the_layout_it_starts_from_and_the_replica_batch():
    """`decide --workload gpt-1.7b --tp 2 --devices 16` said `As is: 16 devices` and `Double the
    per-device batch`; the batch is per replica of 2 devices."""
    profile = resolve_profile(None, None, "gpt-1.7b")
    scenario = Scenario(devices=[16], train_samples=2e7, layout=ScenarioLayout(tp=2))
    card = decide(profile, scenario, 16)
    assert card.now.title == "As is: 16 devices (dp 8 x tp 2 x pp 1)"
    titles = [o.title for o in card.options] + card.notes
    assert not any("per-device batch" in t for t in titles)
    split = [o.title for o in card.options if o.title.startswith("Split the model")]
    assert all(" per replica x " in t for t in split)
    unsplit = decide(profile, Scenario(devices=[16], train_samples=2e7), 16)
    assert unsplit.now.title == "As is: 16 devices"


def test_the_bigger_batch_remedy_of_a_split_model_doubles_the_replica_batch():
    from scalesim.remedies import rank_remedies

    profile = resolve_profile(None, None, "gpt-1.7b")
    titles = {}
    for tp in (2, 1):
        _, ranked = rank_remedies(profile, Scenario(devices=[16], layout=ScenarioLayout(tp=tp)),
                                  16)
        titles[tp] = next(r.title for r in ranked if r.key == "bigger_batch")
    assert titles == {2: "Double the per-replica batch (1 -> 2)",
                      1: "Double the per-device batch (1 -> 2)"}


def test_one_helper_writes_every_layout_dp_first():
    """Session 18: goal wrote 'tp 2 x pp 1 x dp 8' where plan rows and decide wrote 'dp 8 x tp 2
    x pp 1'; every layout's degrees now come from ``layout.split_words``, in one order."""
    from scalesim.layout import split_words

    assert split_words(8, 2, 1) == "dp 8 x tp 2 x pp 1"
    assert split_words(None, 2, 4) == "tp 2 x pp 4"  # the split the user asks, before any dp
    assert split_words(2, 2, 2, 2) == "dp 2 x tp 2 x pp 2 x cp 2"
    plan = GoalPlan(devices=32, servers=4, micro_batch=1, accumulation=2, global_batch=8,
                    strategy="zero1", network="as is", samples_per_s=1.0, time_s=1.0,
                    cost_usd=1.0, meets=True, tp=4, pp=2)
    assert " as dp 4 x tp 4 x pp 2, " in describe(plan)


def test_a_layout_is_named_only_where_it_splits_the_model():
    """Session 19: decide's 'As is' row, its more-devices title and its best layout each wrote
    ``split_words(...) if tp * pp > 1 else ""`` by hand; ``layout.model_split_words`` is that rule
    once (and ``asked_split``'s, which read ``splits_model``)."""
    import inspect

    from scalesim import decision
    from scalesim.layout import model_split_words
    from scalesim.layout_predict import asked_split

    assert model_split_words(4, 2, 2) == "dp 4 x tp 2 x pp 2"
    assert model_split_words(None, 1, 2) == "tp 1 x pp 2"
    assert model_split_words(8, 1, 1) == "" and model_split_words(None, 1, 1) == ""
    assert asked_split(Scenario(layout=ScenarioLayout(tp=2))) == ["tp 2 x pp 1"]
    assert asked_split(Scenario(layout=ScenarioLayout(recompute_style="op-sac"))) == []
    assert "split_words(" not in inspect.getsource(decision).replace("model_split_words(", "")
    profile = resolve_profile(None, None, "llama3-70b")
    for layout, as_is in ((ScenarioLayout(tp=8), "As is: 8 devices (dp 1 x tp 8 x pp 1)"),
                          (ScenarioLayout(), "As is: 8 devices")):
        d = decide(profile, Scenario(layout=layout), 8)
        assert d.now.title == as_is
        more = next(o for o in d.options if o.key == "more_devices")  # 70B fits on no 8 GPUs
        assert more.title.startswith("Add devices (8 -> ") and " devices, tp 8 x pp " in more.title
