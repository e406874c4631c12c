"""Session 41: an upgrade of more NICs than the server has says so.

The upgrades were offered to any server: a DGX-1 (V100, 4 x 100 Gb/s EDR, one NIC per two GPUs)
was offered 8 x 200 and 8 x 400 Gb/s InfiniBand with no word that it ships with 4 NIC ports.
The presets know the NICs a server ships with, not its free slots, so the upgrade is kept (its
figure still answers "what would 8 NICs give") and its words say 'needs 8 NICs per server (this
server has 4)' in decide's option, goal's networks and the faster-network remedy's note. AWS
p4d's EFA is another server rented with its 4 NICs (``rented_server``): no words on the default
profile's one NIC; nor where the count is not known (a fitted level) or the server has as many.
"""

from __future__ import annotations

import json

from cli_harness import whole_lines

from scalesim.cli.main import main
from scalesim.network_upgrades import UPGRADES_BY_KEY, network_scenario, nics_needed_words
from scalesim.presets import get_hardware, get_workload
from scalesim.profiles import profile_from_presets
from scalesim.remedies import rank_remedies
from scalesim.schemas import Scenario

DGX1_WORDS = "needs 8 NICs per server (this server has 4)"


def test_the_words_by_hand():
    dgx1, a2 = get_hardware("dgx1-v100"), get_hardware("a2-highgpu-8g")
    assert nics_needed_words(UPGRADES_BY_KEY["ib-8x200"], dgx1) == DGX1_WORDS
    assert nics_needed_words(UPGRADES_BY_KEY["ib-8x400"], dgx1) == DGX1_WORDS
    assert nics_needed_words(UPGRADES_BY_KEY["ib-8x200"], a2) == (
        "needs 8 NICs per server (this server has 1)")
    # EFA is AWS p4d rented with its NICs: the a2 server's one NIC does not limit it
    assert nics_needed_words(UPGRADES_BY_KEY["efa-4x100"], a2) == ""
    # a DGX A100 has 8 NICs: 8 x 400 fits in them
    assert nics_needed_words(UPGRADES_BY_KEY["ib-8x400"], get_hardware("dgx-a100")) == ""
    # a level with no NIC count (calibrated, fitted): nothing to compare with
    fitted = dgx1.model_copy(update={"inter_node": dgx1.inter_node.model_copy(
        update={"nics_per_node": None})})
    assert nics_needed_words(UPGRADES_BY_KEY["ib-8x200"], fitted) == ""


def test_decide_goal_and_the_remedy_say_it_for_a_dgx1(capsys):
    profile = profile_from_presets(get_hardware("dgx1-v100"), get_workload("bert-large"))
    # the card shows the network here: micro-batch 2 since session 56 (at 4, DDP's bucket copies,
    # 336e6 x 8 B / 900 GB/s = 2.99 ms a step, made ZeRO-1's layout, which has none, +55.2 %
    # against the network's +48.1 %, and the card's best 3 left the network out; at 2 the
    # network's +54.4 % leads ZeRO-1's +52.7 %)
    scenario = Scenario(devices=[32], micro_batch=2)
    assert network_scenario(profile, scenario, UPGRADES_BY_KEY["ib-8x200"]).nics_needed == \
        DGX1_WORDS
    assert main(["decide", "--hardware", "dgx1-v100", "--devices", "32", "--batch", "2",
                 "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    row = next(o for o in card["options"] if o["key"] == "network")
    assert row["title"] == ("Network: 8 x 200 Gb/s HDR InfiniBand (as in a DGX A100), "
                            f"48 -> 192 GB/s busbw, {DGX1_WORDS}")
    _, ranked = rank_remedies(profile, scenario, 32)
    link = next(r for r in ranked if r.key == "interconnect")
    assert link.upgrade.key == "ib-8x200" and DGX1_WORDS in link.reason
    args = ["goal", "--hardware", "dgx1-v100", "--train-samples", "2e8", "--deadline", "3d",
            "--budget", "50000", "--max-devices", "64"]
    assert main(args) == 0
    out = whole_lines(capsys.readouterr().out)  # each table row on one line again
    assert f"(8 x 200 Gb/s, 192 GB/s busbw, 6 us, {DGX1_WORDS}; no public price" in out
    assert f"(8 x 400 Gb/s, 384 GB/s busbw, 6 us, {DGX1_WORDS}; no public price" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["nics_needed"] for n in data["networks"]] == [DGX1_WORDS, DGX1_WORDS]
