"""Session 19, a CPU user's words, the rest of them: the layout refusals (tp inside a host,
whole hosts), plan's refusals, the slow-process notes, the fit hints, --gpus-per-node's help and
the app's memory and cost sentences say processes and hosts for a CPU calibration's profile
(``device_nouns.nouns_for``); each GPU command beside them keeps its words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_harness import open_app, run_clean, upload_profile
from cli_harness import run_cli
from h200_gpt import H200
from scalesim.app.plan import (
    against_now_text,
    build_scenario,
    headline,
    make_plan,
    memory_sentence,
    remedy_gain_text,
)
from scalesim.app.report import report_html
from scalesim.app.state import default_state, with_profile_defaults
from test_cpu_words import cpu_profile

from scalesim.device_nouns import CPU_NOUNS
from scalesim.layout import ParallelLayout, check_layout, layout_problems
from scalesim.profiles import load_profile

GPU_WORDS = ("GPU", "server", "device")


def _cpu_block(tmp_path) -> str:
    """The H200 block-fit profile as a CPU calibration of 2 processes per host names it (a
    profile whose model splits: tp and pp are planned on it)."""
    data = json.loads(Path(H200).read_text())
    data["hardware"].update(device_name="CPU: some Xeon", devices_per_node=2)
    data["model_parallel"].update(peak_tflops=None, matmul_efficiency=None)
    path = tmp_path / "cpu_block.json"
    path.write_text(json.dumps(data))
    return str(path)


def _refusal(capsys, argv: list[str]) -> str:
    """The one line a refused command prints (exit 2, no traceback)."""
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, out, err)
    assert "Traceback" not in err
    return err.strip()


def test_the_layout_rules_say_processes_per_host():
    """Was 'tp 4 does not divide the 6 GPUs per server' and '6 devices (...) do not fill whole
    servers of 4' for a CPU profile."""
    odd = ParallelLayout(dp=3, tp=4, pp=1, global_batch=12, micro_batch=1)
    cpu = layout_problems(odd, 6, nouns=CPU_NOUNS)
    assert cpu[0] == ("tp 4 does not divide the 6 processes per host; use tp 1, 2, 3 or 6, or 4 "
                      "processes per host")  # session 45: the devices per server tp divides
    assert layout_problems(odd, 6)[0] == ("tp 4 does not divide the 6 GPUs per server; use tp 1, "
                                          "2, 3 or 6, or 4 GPUs per server")
    wide = ParallelLayout(dp=3, tp=2, pp=1, global_batch=6, micro_batch=1)
    assert layout_problems(wide, 4, nouns=CPU_NOUNS)[0] == (
        "6 processes (dp 3 x tp 2 x pp 1 x cp 1) do not fill whole hosts of 4")
    assert layout_problems(wide, 4)[0] == (
        "6 devices (dp 3 x tp 2 x pp 1 x cp 1) do not fill whole servers of 4")
    with pytest.raises(Exception, match=r"^tp 4 > 2 processes per host \(tensor parallelism stays "
                                        r"inside one host\); use tp <= 2$"):
        check_layout(odd, 2, CPU_NOUNS)


def test_predict_sweep_decide_refuse_a_layout_in_processes_and_hosts(capsys, tmp_path):
    cpu = _cpu_block(tmp_path)
    assert _refusal(capsys, ["predict", "--profile", cpu, "--devices", "4", "--tp", "4"]).endswith(
        "error: tp 4 > 2 processes per host (tensor parallelism stays inside one host); use tp <= 2")
    assert _refusal(capsys, ["decide", "--profile", cpu, "--devices", "4", "--tp", "4"]).endswith(
        "error: tp 4 > 2 processes per host (tensor parallelism stays inside one host); use tp <= 2")
    assert _refusal(capsys, ["predict", "--profile", cpu, "--devices", "3", "--tp", "2"]).endswith(
        "error: 3 processes do not fill whole hosts of 2; use a multiple of 2 above 2, or set "
        "--gpus-per-node")
    # no count of the list is a multiple of 4: every one named (session 43: the first alone)
    assert _refusal(capsys, ["predict", "--profile", cpu, "--devices", "1,2", "--tp", "2",
                             "--pp", "2"]).endswith(
        "error: processes 1 and 2 are not divisible by tp x pp = 4; give process counts that are "
        "multiples of it (4)")  # session 44: no 'or a tp x pp that divides 1
    # 4 runs, 1 and 2 are left out in one note, in processes (the list was refused)
    code, out, err = run_cli(capsys, ["predict", "--profile", cpu, "--devices", "1,2,4", "--tp",
                                      "2", "--pp", "2"])
    assert code == 0, err
    assert ("note: tp x pp = 4 does not divide the processes: the rows on 1 and 2 processes are "
            "left out; give counts that are multiples of 4") in out.splitlines()
    # a one-value tp no count runs: sweep says predict's line (session 43: its first dropped
    # row); a swept one keeps the dropped row's example, in processes
    assert _refusal(capsys, ["sweep", "--profile", cpu, "--devices", "6", "--tp", "4"]).endswith(
        "error: tp 4 > 2 processes per host (tensor parallelism stays inside one host); use tp <= 2")
    assert "(e.g. tp 4 x pp 1 on 6 processes: tp x pp does not divide the processes)" in _refusal(
        capsys, ["sweep", "--profile", cpu, "--devices", "6", "--tp-values", "4"])
    gpu = _refusal(capsys, ["predict", "--profile", str(H200), "--gpus-per-node", "8", "--devices",
                            "16", "--tp", "16"])
    assert gpu.endswith("error: tp 16 > 8 GPUs per server (tensor parallelism stays inside one "
                        "server); use tp <= 8, or hardware whose server (one NVLink domain) "
                        "holds 16 GPUs: the preset gb200-nvl72 at 64 GPUs per rack, or a "
                        "hardware file with devices_per_node a multiple of 16")  # session 45
    assert _refusal(capsys, ["predict", "--profile", str(H200), "--gpus-per-node", "8", "--devices",
                             "12"]).endswith("error: 12 devices do not fill whole servers of 8; use "
                                             "a multiple of 8 above 8, or set --gpus-per-node")


def test_plan_refuses_counts_and_batches_in_processes_and_hosts(capsys, tmp_path):
    """Was 'devices 3 do not fill whole servers of 2 GPUs; give a multiple of 2 above one
    server' and 'no valid layout ... on servers of 2 ...; add devices' on a CPU profile."""
    cpu = _cpu_block(tmp_path)
    assert _refusal(capsys, ["plan", "--profile", cpu, "--devices", "3", "--global-batch", "12"]).endswith(
        "error: processes 3 do not fill whole hosts of 2 processes; give a multiple of 2 above one host")
    big = _refusal(capsys, ["plan", "--profile", cpu, "--devices", "2", "--global-batch", "100000000"])
    assert "no valid layout for processes 2 and global batch 100000000 on hosts of 2:" in big
    assert big.endswith("add processes or lower the global batch")
    assert _refusal(capsys, ["plan", "--profile", str(H200), "--gpus-per-node", "8", "--devices", "12",
                             "--global-batch", "48"]).endswith(
        "error: devices 12 do not fill whole servers of 8 GPUs; give a multiple of 8 above one server")


def test_the_slow_process_and_the_conditions_are_named_as_processes(capsys, tmp_path):
    """Was 'device 5 computes 2x slower', 'no slow device at 2 devices (device 5 is not among
    them)' and predict's 'device 3 is not among the 1, 2 devices of those rows'."""
    cpu = _cpu_block(tmp_path)
    code, out, err = run_cli(capsys, ["plan", "--profile", cpu, "--devices", "2", "--global-batch",
                                      "16", "--top", "1", "--slow-device", "5", "--slow-factor", "2",
                                      "--gpus-per-node", "2"])
    assert code == 0, err
    (ranked,) = [line for line in out.splitlines() if line.startswith("ranked with: ")]
    assert ranked.startswith(
        "ranked with: 2 processes per host (--gpus-per-node), process 5 computes 2x slower")
    assert ranked.endswith("no slow process at 2 processes (process 5 is not among them)")
    assert "each process updates" in out and "each device updates" not in out
    code, out, err = run_cli(capsys, ["predict", "--profile", _cpu_file(tmp_path), "--devices", "1,2",
                                      "--slow-device", "3", "--slow-factor", "1.5"])
    assert code == 0, err
    assert ", process 3 computes 1.5x slower" in out
    assert "note: process 3 is not among the 1 and 2 processes of those rows: no slow process there" in out
    code, out, err = run_cli(capsys, ["decide", "--profile", _cpu_file(tmp_path), "--devices", "2",
                                      "--slow-device", "3", "--slow-factor", "2"])
    assert code == 0, err
    assert ("note: process 3 is not among the 2 processes of the decision ('As is'): no slow "
            "process there") in out
    code, out, err = run_cli(capsys, ["goal", "--profile", _cpu_file(tmp_path), "--train-samples", "1e6",
                                      "--deadline", "3d", "--budget", "500", "--price", "0.05",
                                      "--max-devices", "4", "--slow-device", "8", "--slow-factor", "2"])
    assert code == 0, err
    assert ("note: process 8 is not among the 4 processes of any plan searched (--max-devices): no "
            "slow process there") in out
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--devices", "8", "--global-batch",
                                      "16", "--top", "1", "--gpus-per-node", "8", "--slow-device", "9",
                                      "--slow-factor", "2"])
    assert code == 0, err
    assert ("ranked with: 8 GPUs per server (--gpus-per-node), device 9 computes 2x slower" in out
            and "no slow device at 8 devices (device 9 is not among them)" in out)


def _cpu_file(tmp_path) -> str:
    path = tmp_path / "cpu.json"
    path.write_text(cpu_profile().model_dump_json())
    return str(path)


def test_the_fit_hint_and_the_batch_refusals_say_processes(capsys, tmp_path):
    """Was 'try more devices per model replica' and 'does not split evenly over 4 devices'."""
    cpu = _cpu_file(tmp_path)
    code, out, err = run_cli(capsys, ["predict", "--profile", cpu, "--workload", "gpt-7b", "--devices",
                                      "1,2", "--strategy", "zero3", "--batch", "1"])
    assert code == 0, err
    assert "try more processes per model replica" in out
    code, out, err = run_cli(capsys, ["predict", "--workload", "gpt-7b", "--devices", "1,2",
                                      "--strategy", "zero3", "--batch", "1"])
    assert code == 0, err
    assert "try more devices per model replica" in out
    batch = _refusal(capsys, ["predict", "--profile", cpu, "--devices", "4", "--global-batch", "6"])
    assert batch.endswith(
        "does not split evenly over 4 processes x 1 accumulation steps; pick a global batch "
        "divisible by processes x accumulation: 4 or 8")
    # 6 splits over 2 processes, not 4: 2 runs and 4 is left out, said in processes (session
    # 43: the list was refused); the multiples of lcm(2, 4) = 4 nearest 6 split over both
    code, out, err = run_cli(capsys, ["predict", "--profile", cpu, "--devices", "2,4",
                                      "--global-batch", "6"])
    assert code == 0, err
    assert ("note: global batch 6 does not split evenly over processes x accumulation 4: the row "
            "on 4 processes is left out; --global-batch 4 or 8 runs every count, or give counts "
            "whose processes x accumulation divides it") in out.splitlines()
    assert _refusal(capsys, ["predict", "--profile", cpu, "--devices", "4", "--strategy", "zero1",
                             "--shard-group", "3"]).startswith("scalesim predict: error: at 4 processes, ")
    # 2 is within the group (full sharding) and runs; 4 is left out, said in processes
    # (session 43: the whole list was refused)
    code, out, err = run_cli(capsys, ["predict", "--profile", cpu, "--devices", "2,4",
                                      "--strategy", "zero1", "--shard-group", "3"])
    assert code == 0, err
    assert ("note: shard group 3 does not divide dp 4: the row on 4 processes is left out; give "
            "counts whose dp it divides") in out.splitlines()
    code, out, err = run_cli(capsys, ["predict", "--profile", cpu, "--devices", "2,4", "--strategy",
                                      "zero1", "--shard-group", "2"])
    assert code == 0, err
    assert "replicated across processes / shard group copies, where the processes exceed it" in out


def test_goal_refuses_a_layout_no_host_holds(capsys, tmp_path):
    err = _refusal(capsys, ["goal", "--profile", _cpu_block(tmp_path), "--tp", "4", "--train-samples",
                            "1e6", "--deadline", "1d", "--budget", "100", "--price", "0.1",
                            "--max-devices", "4"])
    # session 45: predict's refusal, as predict, sweep and decide say it (was 'no process count
    # up to 4 can run the layout tp 4 x pp 1: ... (tp x pp must divide the processes, tp stays
    # in a host, ...); change --tp/--pp or --max-devices', where no max-devices helps)
    assert err.endswith("error: tp 4 > 2 processes per host (tensor parallelism stays inside one "
                        "host); use tp <= 2"), err


def test_the_gpus_per_node_help_names_cpu_processes(capsys):
    for command in ("predict", "plan", "decide", "goal", "sweep"):
        code, out, _ = run_cli(capsys, [command, "--help"])
        assert code == 0
        assert "devices (GPUs, or CPU processes) per server/host" in " ".join(out.split()), command


def _cpu_block_plan(tmp_path, **changes):
    profile = load_profile(_cpu_block(tmp_path))
    state = with_profile_defaults(default_state(), profile).model_copy(update=changes)
    return make_plan(profile, state)


def test_the_app_sentences_of_a_run_that_does_not_fit_say_processes(tmp_path):
    """Was 'not runnable: needs X GiB per device', 'does not fit in device memory at 4 devices'
    and 'left out 3: above 2 devices a count must fill whole servers' for a CPU profile."""
    plan = _cpu_block_plan(tmp_path, grid="list", dlist="1,2,3,4", slow=9, sf=1.5, mb=100000)
    assert "left out 3: above 2 processes a count must fill whole hosts (a multiple of 2)" in plan.notes
    assert ("process 9 is not among the 1, 2 and 4 processes of those rows: no slow process "
            "there") in plan.notes
    h = headline(plan)
    assert h["runnable"].startswith("not runnable: needs ") and " GiB per process, " in h["runnable"]
    assert h["not_runnable"] == "does not fit in the host's memory at 1, 2 and 4 processes (not runnable)"
    assert h["knee"] == ("none: none of the process counts fits in the host's memory, and a knee "
                         "lies between two that do")
    assert memory_sentence(plan.focus, 2**30, plan.words).endswith("GiB per process, 1 GiB available")
    assert against_now_text(1.0, plan.focus, plan.words).endswith(
        "/s (today's layout does not fit in the host's memory)")
    unfit = next(r for r in plan.remedies if r.prediction is not None and not r.prediction.fits)
    assert remedy_gain_text(unfit, plan.words) == "not runnable (does not fit in the host's memory)"
    html = report_html(plan, "http://example/?v=1")
    assert "Where each training step&#x27;s time goes at each process count." in html
    assert "<h2>Prediction per process count</h2>" in html and "Processes in focus" in html
    gpu = with_profile_defaults(default_state(), load_profile(H200))
    gpu_plan = make_plan(load_profile(H200), gpu.model_copy(update={"mb": 100000, "dmax": 2}))
    assert " GiB per device, " in headline(gpu_plan)["runnable"]
    assert "does not fit in device memory at" in headline(gpu_plan)["not_runnable"]
    assert "at each device count." in report_html(gpu_plan, "http://example/?v=1")


def test_the_app_refuses_tp_past_a_host_and_bills_processes(tmp_path):
    """The app with the CPU profile uploaded: the tp control past the host said 'tp 4 > 2 GPUs per
    server'; the cost tab said 'Cost counts the devices a cloud bills'."""
    at = upload_profile(open_app(), load_profile(_cpu_block(tmp_path)))
    at.session_state["k_tab"] = "Hours & cost"
    run_clean(at)
    captions = " ".join(c.value for c in at.caption)
    assert "Cost counts the processes a cloud bills: billed per whole host of 2 processes" in captions
    at.sidebar.number_input(key="k_tp").set_value(4)
    run_clean(at)
    errors = [e.value for e in at.error]
    assert any("Cannot predict this scenario: Tensor parallel 4 \\> 2 processes per host (tensor "
               "parallelism "
               "stays inside one host)" in e for e in errors), errors
    assert not any(w in e for e in errors for w in GPU_WORDS), errors


def test_the_app_gpu_cost_caption_keeps_its_words():
    at = open_app({"tab": "cost"})
    at.session_state["k_tab"] = "Hours & cost"
    run_clean(at)
    assert any(c.value.startswith("Cost counts the devices a cloud bills: ") for c in at.caption)


def test_app_strong_scaling_notes_say_processes(tmp_path):
    profile = load_profile(_cpu_block(tmp_path))
    state = with_profile_defaults(default_state(), profile).model_copy(
        update={"tp": 2, "grid": "list", "dlist": "1,2,4"})
    _, notes = build_scenario(state, profile)
    # the page's control labels since session 49 (was 'tp x pp = 2 does not divide ...')
    assert ("Tensor parallel 2 x Pipeline stages 1 = 2 does not divide the processes: the row on 1 "
            "process is left out; "
            "give counts that are multiples of 2") in notes
