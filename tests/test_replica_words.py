"""A profile fitted from runs that split the model counts model replicas: its sentences say
replicas wherever they count the profile's devices (``device_nouns.REPLICA_NOUNS``)."""

import pytest

from scalesim.billing import billing_words
from scalesim.decision import decide
from scalesim.device_nouns import named_count, replica_device_name
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Profile, Scenario

RUNS = """devices,nodes,step_time_s,per_device_batch,accumulation,tp,pp
8,1,1.50,8,4,2,2
16,2,1.55,8,4,2,2
32,4,1.62,8,4,2,2
"""


def test_a_replica_is_counted_by_its_noun_and_its_split_follows():
    """'8 model replica (tp 2 x pp 2 x cp 1) of measured replicas give ...' read as nonsense."""
    name = replica_device_name("tp 2 x pp 2 x cp 1", "measured")
    assert named_count(8, name) == "8 replicas (tp 2 x pp 2 x cp 1 of measured)"
    assert named_count(1, name) == "One replica (tp 2 x pp 2 x cp 1 of measured)"
    assert named_count(1024, "NVIDIA H100") == "1,024 NVIDIA H100 devices"
    assert named_count(2, "CPU: AMD EPYC") == "2 CPU: AMD EPYC processes"


def test_decide_on_a_fitted_replica_profile_says_replicas_and_bills_them():
    """The profile's server holds 4 replicas (tp 2 on 8-GPU servers, the pipeline's stages on
    other servers, Megatron's order) and its price is per replica-hour: billing had said 'per
    whole server of 4 GPUs'."""
    report = diagnose_runs(parse_runs_text(RUNS, "r.csv"), params=7e9)
    profile = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"]).model_copy(
        update={"price_per_device_hour": 10.0, "train_samples": 1e7})
    assert profile.hardware.devices_per_node == 4
    card = decide(profile, scenario, 8)
    assert card.question.startswith("8 replicas (tp 2 x pp 2 x cp 1 of ")
    # one of the fit's servers (4 replicas, 16 GPUs) is 2 of the job's 8-GPU servers: what is
    # bought is said in those ('Add one server (8 -> 12 replicas)' had added 16 GPUs)
    assert card.added is not None
    assert card.added.option.title.startswith("Add 2 servers (8 -> 12 replicas)")
    assert card.now.price_source.endswith(
        "billed per 2 replicas (the devices of one of the runs' servers)")
    assert billing_words(4, None, profile.hardware.device_name) \
        == "billed per whole server of 4 replicas"


def test_replica_servers_follow_megatron_placement():
    """tp innermost, pp outermost on servers of 8: a tp 2 x pp 2 replica spans 2 servers (its
    stages), and so do the 4 replicas one server holds; tp 2 alone stays in one; tp 8 x pp 2:
    2; a job of one server: 1."""
    from scalesim.layout import replica_servers

    assert replica_servers(2, 1, 2, 8, 1, 8) == 2
    assert replica_servers(2, 1, 2, 8, 4, 8) == 2
    assert replica_servers(2, 1, 1, 8, 4, 8) == 1
    assert replica_servers(8, 1, 2, 4, 1, 8) == 2
    assert replica_servers(2, 1, 2, 2, 2, 8) == 1


def test_a_faster_network_is_priced_on_every_server_the_replicas_span():
    """The fitted profile's server of 4 tp 2 x pp 2 replicas exchanges over 2 servers' NICs
    (stage 0's gradients over one, stage 1's over the other): 8 x 200 Gb/s HDR InfiniBand a
    server is 2 x 192 GB/s for it. It had been priced at one server's 192 GB/s."""
    from scalesim.network_upgrades import UPGRADES_BY_KEY, per_node, upgrades_for
    from scalesim.remedies import rank_remedies

    report = diagnose_runs(parse_runs_text(RUNS, "r.csv"), params=7e9)
    profile = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    assert profile.hardware.nic_servers_per_node == 2
    hdr = UPGRADES_BY_KEY["ib-8x200"]
    assert per_node(hdr, 2).link().busbw_GBps == 2 * hdr.link().busbw_GBps
    _, ranked = rank_remedies(profile, scenario, 8)
    network = next(r for r in ranked if r.key == "interconnect")
    assert network.prediction is not None
    assert "-> 384 GB/s busbw" in network.title and "span 2 servers" in network.reason
    ups = upgrades_for(profile.hardware.device_name, profile.hardware.inter_node.busbw_GBps, 2)
    assert {u.key: u.nics_per_node for u in ups}["ib-8x200"] == 16
    note = report.details.get("notes") or report.notes
    assert any("priced on all 2 servers' NICs" in n for n in note)


def test_predict_table_on_a_fitted_replica_profile_heads_its_counts_replicas(tmp_path, capsys):
    """Audit: predict on the fitted profile of split runs headed its count column 'devices'
    (2, 4, 8: replicas, 8-32 GPUs) where a CPU replica profile's said 'replicas'."""
    import json

    from scalesim.cli.main import main
    from scalesim.device_nouns import REPLICA_NOUNS

    assert (REPLICA_NOUNS.header("devices"), REPLICA_NOUNS.header("GPUs"),
            REPLICA_NOUNS.header("nodes")) == ("replicas", "replicas", "nodes")
    report = diagnose_runs(parse_runs_text(RUNS, "r.csv"), params=7e9)
    (tmp_path / "p.json").write_text(json.dumps(report.details["fitted_profile"]))
    (tmp_path / "s.json").write_text(json.dumps(report.details["fitted_scenario"]))
    main(["predict", "--profile", str(tmp_path / "p.json"), "--scenario", str(tmp_path / "s.json"),
          "--devices", "2,4,8"])
    header = next(line for line in capsys.readouterr().out.splitlines() if "step ms" in line)
    assert header.split()[:2] == ["replicas", "nodes"]


def test_a_fitted_replica_profile_bills_the_runs_servers_not_pp_of_them():
    """Audit: the runs put 2 replicas (tp 2 x pp 2, 8 GPUs) on one 8-GPU server, but the
    fitted profile's server is the 4 data-parallel ranks one server holds (16 GPUs, 2 servers),
    and predict billed 2 replicas as 4: twice their cost. Billed per 2 replicas now."""
    from scalesim.predict import predict

    report = diagnose_runs(parse_runs_text(RUNS, "r.csv"), params=7e9)
    profile = Profile.model_validate(report.details["fitted_profile"])
    assert profile.hardware.instance_sizes == [2]
    scenario = Scenario.model_validate(report.details["fitted_scenario"]).model_copy(
        update={"devices": [1, 2, 4, 8], "price_per_device_hour": 10.0, "train_samples": 1e6})
    rows = predict(profile, scenario)
    assert [r.billed_devices for r in rows] == [2, 2, 4, 8]
    two = rows[1]  # 1e6 samples / throughput hours, 2 replicas at $10 a replica-hour
    assert two.cost_usd == pytest.approx(1e6 / two.samples_per_s / 3600 * 2 * 10.0, rel=1e-9)
