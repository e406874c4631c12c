"""The sharding remedy under DeepSpeed with a pipeline: DeepSpeed refuses ZeRO-2/3 with pp > 1
(docs/model.md §16) and predict refuses such a scenario, but the remedy's scenario (a
``model_copy``, unvalidated) asked for ZeRO-3 there, and decide offered "shard optimizer state,
gradients and parameters (ddp -> zero3, DeepSpeed stage 3)" at dp 16 x pp 2. It now shards as
far as DeepSpeed runs a pipeline (ZeRO-1), or says why it does not apply."""

from __future__ import annotations

from scalesim.profiles import resolve_profile
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario, ScenarioLayout


def _sharding(strategy: str, framework: str, pp: int = 2):
    profile = resolve_profile(None, "dgx-a100", "gpt-18.4b")
    scenario = Scenario(devices=[32], strategy=strategy, zero_framework=framework,
                        layout=ScenarioLayout(pp=pp))
    _, results = rank_remedies(profile, scenario, 32)
    return next(r for r in results if r.key == "sharding")


def test_ddp_that_does_not_fit_under_a_deepspeed_pipeline_is_offered_zero1_not_zero3():
    r = _sharding("ddp", "deepspeed")
    assert r.scenario.strategy == "zero1" and "ddp -> zero1" in r.title, r.title
    assert r.applicable and r.prediction is not None and r.prediction.pp == 2


def test_zero1_under_a_deepspeed_pipeline_has_no_sharding_remedy():
    r = _sharding("zero1", "deepspeed")
    assert not r.applicable
    assert "DeepSpeed refuses ZeRO-2/3 with pipeline parallelism" in r.reason


def test_fsdp_and_deepspeed_without_a_pipeline_keep_zero3():
    assert _sharding("ddp", "fsdp").scenario.strategy == "zero3"  # FSDP runs it (as ZeRO-2)
    assert _sharding("ddp", "deepspeed", pp=1).scenario.strategy == "zero3"
