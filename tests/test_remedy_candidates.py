"""The remedies before they are predicted (``remedies._candidates``) are ``Candidate`` records
read by field name: they were 6- or 7-element tuples unpacked by position in ``rank_remedies``
(``key, title, scn, prof, reason, caveat, *hardware``), where a field added to one candidate's
tuple, or two swapped, would have moved another into the wrong slot with no error."""

from __future__ import annotations

from scalesim import presets
from scalesim.network_upgrades import UPGRADES_BY_KEY
from scalesim.profiles import profile_from_presets
from scalesim.remedies import Candidate, _candidates, _one, rank_remedies
from scalesim.schemas import Scenario

# today's order of the candidates of a model that fits (fit_memory is added where it does not)
ORDER = ["bigger_batch", "overlap", "accumulation", "loader", "sharding", "interconnect",
         "split_model", "attention_kernel", "fp8", "tp_overlap", "slow_device"]


def _resnet_on_100gbe():
    return profile_from_presets(presets.get_hardware("a2-highgpu-8g"),
                                presets.get_workload("resnet50"))


def test_every_candidate_is_a_named_record_in_the_listed_order():
    profile, scenario = _resnet_on_100gbe(), Scenario(devices=[16], micro_batch=32)
    now = _one(profile, scenario, 16)
    found = _candidates(profile, scenario, now)
    assert all(isinstance(c, Candidate) for c in found)
    assert [c.key for c in found] == ORDER
    by_key = {c.key: c for c in found}
    # the fields land where they are named: the overlap flag is on by default, no slow device
    assert by_key["overlap"].reason == "overlap is already on"
    assert by_key["slow_device"].reason == "no slow device in the scenario"
    assert by_key["bigger_batch"].scenario.micro_batch == 64  # 2 x 32
    assert by_key["bigger_batch"].caveat == "check time-to-quality"
    assert by_key["accumulation"].scenario.accumulation == 4  # 4 x today's 1


def test_only_the_named_network_carries_its_hardware_into_the_result():
    """The 7th element (the named network a faster-network remedy runs on) was read as
    ``hardware[0] if hardware else None``: now ``Candidate.upgrade``, None by default."""
    profile = _resnet_on_100gbe()
    _, ranked = rank_remedies(profile, Scenario(devices=[16], micro_batch=32), 16)
    upgrades = {r.key: r.upgrade for r in ranked}
    # 1 x 100 Gb/s TCP: 8 x 200 Gb/s HDR InfiniBand is more than twice today's network
    assert upgrades.pop("interconnect") == UPGRADES_BY_KEY["ib-8x200"]
    assert set(upgrades.values()) == {None}
    # one server: the intra-server link doubled, no named hardware
    _, ranked = rank_remedies(profile, Scenario(devices=[8], micro_batch=32), 8)
    assert next(r for r in ranked if r.key == "interconnect").upgrade is None
