"""`diagnose --workload PRESET` fits at the bytes predict charges the preset (session 45): it
fitted every preset at `--wire-bytes`' default 4, so runs of bert-large (whose preset states
reduce_bytes_per_param 2: DLE all-reduces fp16) read their inter-server link at about twice its
bus bandwidth. One rule for a preset and a file: `runs_model.gradient_bytes_of`
(`memory.reduce_bytes_per_param_of`)."""

import json

import pytest
from cli_harness import run_cli

from scalesim import presets
from scalesim.fit_runs import RunsExchange
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.runs_model import gradient_bytes_of
from scalesim.schemas import Scenario

DEVICES = [1, 2, 4, 8, 16, 32, 64]


def _runs(where, strategy: str):
    """Runs predicted on the default profile (a2-highgpu-8g, bert-large, 6.8 GB/s busbw between
    servers) under ``strategy``."""
    rows = predict(default_profile(), Scenario(devices=DEVICES, strategy=strategy))
    path = where / f"runs_{strategy}.csv"
    path.write_text("devices,nodes,samples_per_s,per_device_batch\n" + "".join(
        f"{r.devices},{r.nodes},{r.samples_per_s:.6g},32\n" for r in rows))
    return path


def _fitted_inter_busbw(capsys, runs, strategy, *extra):
    code, out, err = run_cli(capsys, ["diagnose", str(runs), "--workload", "bert-large",
                                      "--gpu", "a100-sxm4-40gb", "--strategy", strategy,
                                      "--json", *extra])
    assert code == 0, err
    report = json.loads(out)
    return report["details"]["fitted_profile"]["hardware"]["inter_node"]["busbw_GBps"], report


@pytest.mark.parametrize("strategy", ["ddp", "zero1"])
def test_runs_of_a_preset_fit_back_to_the_profiles_link(capsys, tmp_path, strategy):
    truth = default_profile().hardware.inter_node.busbw_GBps
    assert truth == 6.8 and default_profile().workload.name == "bert-large"
    busbw, report = _fitted_inter_busbw(capsys, _runs(tmp_path, strategy), strategy)
    # before: fitted at 4 bytes per gradient, 12.7 GB/s (both strategies); now 6.36
    assert busbw == pytest.approx(truth, rel=0.10)
    assert any("stated reduce_bytes_per_param 2" in n and "bert-large" in n
               for n in report["notes"])
    four, _ = _fitted_inter_busbw(capsys, _runs(tmp_path, strategy), strategy,
                                  "--wire-bytes", "4")  # the flag still overrides
    assert four / busbw == pytest.approx(2.0, rel=0.02)


def test_the_bytes_are_predicts_for_each_preset_and_strategy():
    """bert-large states 2 for every strategy; a transformer preset states none: DDP (and
    Megatron-Core's ZeRO-1) reduce fp32, the rest the 16-bit wire."""
    assert presets.get_workload("bert-large").reduce_bytes_per_param == 2
    assert gradient_bytes_of("bert-large", RunsExchange("ddp")).wire == 2
    zero1 = gradient_bytes_of("bert-large", RunsExchange("zero1"))
    assert (zero1.wire, zero1.reduce) == (2, 2)
    assert gradient_bytes_of("gpt-1.7b", RunsExchange("ddp")).wire == 4
    zero3 = gradient_bytes_of("gpt-1.7b", RunsExchange("zero3"))
    assert (zero3.wire, zero3.reduce) == (2, None)
