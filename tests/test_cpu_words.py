"""Session 18, a CPU user's pass: a CPU calibration's devices are processes on one host that
share its cores and exchange through gloo over loopback TCP; every sentence shown for them says
so (``scalesim.device_nouns``), and a GPU profile's sentences keep their words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_harness import open_app, run_clean, upload_profile
from cli_harness import run_cli
from test_traces import gpu_trace, write

from scalesim.cli.cmd_predict import hardware_line, unmeasured_link_notes
from scalesim.decision import CPU_ASSUMPTIONS, decide
from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS, nouns_for
from scalesim.goal import seek
from scalesim.network_upgrades import CPU_NO_UPGRADES, upgrades_for
from scalesim.predict import server_use_words
from scalesim.profiles import default_profile, load_profile
from scalesim.remedies import CPU_FASTER_NETWORK, CPU_NOT_APPLICABLE, rank_remedies
from scalesim.schemas import LinkCalibration, Scenario

TRACES = [str(Path(__file__).parent / "fixtures" / "traces" / f"cpu_ddp_rank{r}.json.gz") for r in (0, 1)]
GPU_WORDS = ("GPU", "server", "NVLink", "InfiniBand")


def cpu_profile(per_host: int = 2):
    """The default profile as a CPU calibration names its device ('CPU: AMD EPYC'), with an
    inter-host link that calibration did not measure (one host)."""
    base = default_profile()
    hw = base.hardware.model_copy(
        update={
            "device_name": "CPU: AMD EPYC",
            "devices_per_node": per_host,
            "price_per_device_hour": None,
            "instance_sizes": None,
        }
    )
    links = [
        LinkCalibration(
            level="inter_node",
            measured=False,
            note="one node",
            not_measured_because="this calibration ran on one node",
            numbers_from="preset ethernet:1x100",
        )
    ]
    return base.model_copy(update={"hardware": hw, "links": links})


def test_one_helper_gives_the_nouns():
    assert nouns_for("CPU: AMD EPYC") is CPU_NOUNS and nouns_for("NVIDIA H100") is GPU_NOUNS
    assert CPU_NOUNS.count(1) == "1 process" and CPU_NOUNS.count(4) == "4 processes"
    assert CPU_NOUNS.count(2, "server") == "2 hosts" and GPU_NOUNS.count(2, "server") == "2 servers"
    assert GPU_NOUNS.count(16) == "16 devices" and GPU_NOUNS.link("intra_node") == "intra-server link"
    assert CPU_NOUNS.link("inter_node") == "inter-host link"


def test_diagnose_on_a_cpu_trace_offers_no_gpu_remedy(capsys):
    """The recorded 2-rank gloo DDP trace: was 'Faster intra-server links (2x the fitted
    bandwidth)' ranked +20 % as a remedy, 'per-device batch', 'Replace or fix the slow device',
    and the Hopper kernel / TP overlap left out for reasons that hold on a GPU."""
    code, out, err = run_cli(capsys, ["diagnose", "--json", "--trace", *TRACES])
    assert code == 0, err
    remedies = {r["key"]: r for r in json.loads(out)["remedies"]}
    link = remedies["interconnect"]
    assert link["title"].startswith("Faster intra-host links")
    assert not link["applicable"] and link["note"] == CPU_NOT_APPLICABLE["intra_link"]
    for key in ("attention_kernel", "tp_overlap", "fp8"):
        assert not remedies[key]["applicable"] and remedies[key]["note"] == CPU_NOT_APPLICABLE[key]
    assert remedies["bigger_batch"]["title"].startswith("Double the per-process batch")
    assert remedies["slow_device"]["title"].startswith("Fix the slow process")
    assert remedies["slow_device"]["note"] == "no slow process in the scenario"
    assert "each of the 2 processes" in remedies["sharding"]["note"]
    helping = [r["title"] for r in remedies.values() if r["helps"]]
    assert helping and not any(w in t for t in helping for w in GPU_WORDS)
    code, text, err = run_cli(capsys, ["diagnose", "--trace", *TRACES])
    assert code == 0 and "process idle" in text and "intra-server" not in text


def test_diagnose_on_a_gpu_trace_keeps_its_words(tmp_path, capsys):
    paths = [str(write(tmp_path, f"rank{r}.json", gpu_trace(r, slow_us=50.0 * r))) for r in (0, 1)]
    code, out, err = run_cli(capsys, ["diagnose", "--json", "--trace", *paths])
    assert code == 0, err
    remedies = {r["key"]: r for r in json.loads(out)["remedies"]}
    assert remedies["interconnect"]["title"].startswith("Faster intra-server links")
    assert remedies["slow_device"]["title"] == "Replace or fix the slow device"
    assert remedies["bigger_batch"]["title"].startswith("Double the per-device batch")
    assert remedies["interconnect"]["note"] != CPU_NOT_APPLICABLE["intra_link"]


def test_a_faster_network_for_cpu_processes_is_twice_todays_not_infiniband():
    """Two hosts of CPU processes: was 'Faster inter-server network: 8 x 200 Gb/s HDR InfiniBand
    (6.8 -> 192 GB/s busbw)', a figure of NCCL over RDMA that gloo over TCP never reaches."""
    cpu = cpu_profile()
    _, ranked = rank_remedies(cpu, Scenario(devices=[4]), 4)
    (net,) = [r for r in ranked if r.key == "interconnect"]
    assert net.title.startswith(f"Faster inter-host network: {CPU_FASTER_NETWORK} (")
    assert net.scenario.inter_busbw_GBps == pytest.approx(2 * cpu.hardware.inter_node.busbw_GBps)
    _, gpu_ranked = rank_remedies(default_profile(), Scenario(devices=[16]), 16)
    (gpu_net,) = [r for r in gpu_ranked if r.key == "interconnect"]
    assert gpu_net.title.startswith("Faster inter-server network: 8 x 200 Gb/s HDR InfiniBand")
    assert upgrades_for("CPU: AMD EPYC", 1.0) == [] and upgrades_for("A100-SXM4 40GB", 1.0)


def test_decide_on_cpu_processes_says_processes_and_hosts():
    """Was '2 CPU: AMD EPYC devices give 1.8x one device', 'As is: 2 devices', 'Add one server
    (2 -> 4 devices)' with 'the extra server's devices ... inter-server link' as assumption."""
    cpu = cpu_profile()
    card = decide(cpu, Scenario(devices=[1, 2, 4], train_samples=1e6, price_per_device_hour=0.1), 2)
    assert card.question.startswith("2 CPU: AMD EPYC processes give ")
    assert card.question.endswith("x one process: what should we do?")
    assert card.now.title == "As is: 2 processes"
    shown = [o.title for o in card.options] + card.notes
    assert any("Add one host (2 -> 4 processes)" in t for t in shown)
    for o in [card.now, *card.options]:
        assert not any(w in o.title or w in o.assumption for w in ("server", "NVLink", "GPU"))
        if o.key == "add_server":
            assert o.assumption.startswith(CPU_ASSUMPTIONS["add_server"])
    filled = decide(cpu, Scenario(devices=[1, 2], train_samples=1e6), 1)
    fill = [o for o in filled.options if o.key == "add_server"]
    assert all(o.title.startswith("Fill the host (1 -> 2 processes)") for o in fill)
    assert all(o.assumption.startswith(CPU_ASSUMPTIONS["fill_server"]) for o in fill)
    slow = decide(cpu, Scenario(devices=[4], slow_device=1, slow_factor=1.3), 4)
    fix = next(o for o in slow.options if o.key == "fix_device")
    assert fix.title == "Move other work off the slow process's cores (rank 1, 1.3x slower)"
    assert fix.assumption == CPU_ASSUMPTIONS["fix_device"]
    big = decide(cpu, Scenario(devices=[4], micro_batch=10**6), 4)
    assert "GiB per process needed" in big.question
    assert big.recommendation.endswith("today's layout does not fit in the host's memory.")
    gpu = decide(default_profile(), Scenario(devices=[1, 2, 4, 8, 16], train_samples=2e9), 16)
    assert gpu.now.title == "As is: 16 devices" and "devices give" in gpu.question
    assert any("Add one server (16 -> 24 devices)" in n for n in gpu.notes)


def test_goal_on_cpu_processes_plans_hosts_and_leaves_out_gpu_networks():
    """Was '2 devices (1 server)' and 'note: 8 x 200 Gb/s HDR InfiniBand (as in a DGX A100)
    left out: no public price' for processes that exchange over TCP."""
    answer = seek(
        cpu_profile(), Scenario(devices=[1], train_samples=1e6, price_per_device_hour=0.05), 86400.0, 100.0
    )
    plan = answer.best or answer.closest
    assert f"{CPU_NOUNS.count(plan.devices)} ({CPU_NOUNS.count(plan.servers, 'server')})" in (answer.sentence)
    assert CPU_NO_UPGRADES in answer.notes
    assert not any("InfiniBand" in n for n in answer.notes)
    assert "words" not in answer.to_dict()
    gpu = seek(default_profile(), Scenario(devices=[1], train_samples=2e9), 3 * 86400.0, 5e4)
    assert "devices (" in gpu.sentence and "server" in gpu.sentence
    assert CPU_NO_UPGRADES not in gpu.notes


def test_predict_says_hosts_for_cpu_processes():
    cpu = cpu_profile()
    assert "(CPU: AMD EPYC, 2 per host; whole host's busbw: intra " in hardware_line(cpu.hardware)
    (note,) = unmeasured_link_notes(cpu, inter=True, intra=False)
    assert note.startswith("inter-host link not measured") and "several hosts" in note
    more = server_use_words(cpu.hardware, Scenario(devices=[4], devices_per_node=4))
    assert more.startswith("4 processes per host (--gpus-per-node), more than the 2 of ")
    assert "its intra-host link" in more
    fewer = server_use_words(cpu.hardware, Scenario(devices=[4], devices_per_node=1))
    assert fewer.startswith("1 of 2 processes per host: ") and "whole host of 2 processes" in fewer
    gpu = default_profile()
    assert " per server; whole server's busbw: intra " in hardware_line(gpu.hardware)
    assert server_use_words(gpu.hardware, Scenario(devices=[4], devices_per_node=4)).startswith(
        "4 of 8 GPUs per server: "
    )


def test_the_app_says_host_and_processes_for_an_uploaded_cpu_profile():
    """Was '(CPU: AMD EPYC, 2 per server; ...)' in the sidebar, '**intra-server link**' in its
    sources, and 'billed per whole server of 2 GPUs' on the cost tab (the app passed no device
    name to the billing words)."""
    at = upload_profile(open_app(), cpu_profile())
    info = " ".join(i.value for i in at.sidebar.info)
    assert "(CPU: AMD EPYC, 2 per host;" in info
    texts = " ".join(m.value for m in [*at.markdown, *at.caption])
    assert "**intra-host link**" in texts and "**intra-server link**" not in texts
    at.session_state["k_tab"] = "Hours & cost"
    run_clean(at)
    texts = " ".join(m.value for m in at.caption)
    assert "billed per whole host of 2 processes" in texts and "of 2 GPUs" not in texts
    at.session_state["k_tab"] = "Remedies"
    run_clean(at)
    remedies = " ".join(at.dataframe[-1].value["remedy"])
    assert "Faster intra-host links" in remedies or "Faster inter-host network" in remedies
    assert not any(w in remedies for w in ("server", "Replace or fix the slow device"))


def test_the_calibration_summary_says_processes_of_a_host():
    """`scalesim calibrate --nproc-per-node 2` on CPU printed 'co-location: 2 devices of one
    server computing at once'; a GPU run keeps that line."""
    from h200_gpt import H200
    from scalesim.calibration.results import ComputeResult, PhaseRecord
    from scalesim.calibration.summary import render

    curve = load_profile(H200).compute.model_copy(
        update={"colocated_devices": 2, "colocation_slowdown": 0.05}
    )
    result = ComputeResult(
        model_name="gpt",
        params=1,
        element_bytes=4,
        optimizer="adam",
        optimizer_state_elements=2,
        precision="fp32",
        curve=curve,
        backward_fraction=0.6,
    )
    records = {
        "compute": PhaseRecord(
            phase="compute", signature={}, wall_s=1.0, result=result.model_dump(mode="json")
        )
    }
    assert "co-location: 2 processes of one host computing at once" in render(records, set(), CPU_NOUNS)
    assert "co-location: 2 devices of one server computing at once" in render(records, set())


def test_plan_counts_processes_on_a_cpu_profile(tmp_path, capsys):
    """`plan --profile` of a CPU calibration with a block fit headed its count column 'GPUs'."""
    from h200_gpt import H200

    data = json.loads(Path(H200).read_text())
    data["hardware"].update(device_name="CPU: some Xeon", devices_per_node=2)
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    argv = ["plan", "--profile", str(path), "--devices", "2", "--global-batch", "16", "--top", "1"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    (header,) = [line for line in out.splitlines() if line.lstrip().startswith("#")]
    assert header.split()[:2] == ["#", "procs"]
    code, out, err = run_cli(capsys, ["plan", "--profile", str(H200), *argv[3:]])
    assert code == 0, err
    (header,) = [line for line in out.splitlines() if line.lstrip().startswith("#")]
    assert header.split()[:2] == ["#", "GPUs"]
