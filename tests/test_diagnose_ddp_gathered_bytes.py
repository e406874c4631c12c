"""What the workload diagnose fits from DDP runs sends (issue 10, session 46).

DDP runs exchange their gradients' reduction alone: under PyTorch's autocast fp32 gradients, 4
bytes each, the bytes the fit is told (``--wire-bytes``, or those predict charges
``--workload``). The fitted workload had them as its ``wire_bytes_per_param`` too, which is what
ZeRO's all-gathers send (the parameters), so the remedies that shard gathered 16-bit parameters
at 4 bytes. Now the measured bytes are its ``reduce_bytes_per_param`` and its wire the
parameters' dtype: the named workload's ``wire_bytes_per_param``, else 2 (16-bit training, as the
fitted workload's memory counts it; ``fit_runs.DDP_GATHERED_BYTES``). DDP's all-reduce still
charges the measured bytes, so no DDP prediction moves.
"""

import json

import pytest
from cli_harness import run_cli

from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.runs_model import runs_model
from scalesim.schemas import Profile, Scenario

BERT = {"layers": 24, "hidden": 1024, "heads": 16, "seq_len": 128, "vocab": 30522}
BERT_PARAMS = 333697024


def _hand_runs() -> str:
    """1-8 GPUs of one server, 32 samples each: 0.1 s of compute and a DDP all-reduce of a
    gradient whose transfer time S / busbw is 0.2 s, none of it overlapped (measured so)."""
    rows = ["devices,nodes,step_time_s,per_device_batch,comm_s"]
    for p in (1, 2, 4, 8):
        comm = 2 * (p - 1) / p * 0.2
        rows.append(f"{p},1,{0.1 + comm:.9g},32,{comm:.9g}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def hand_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("gathered") / "runs.csv"
    path.write_text(_hand_runs())
    return path


def _diagnosis(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, ["diagnose", *map(str, argv), "--json"])
    assert code == 0, err
    return json.loads(out)


def _remedy(report, key) -> dict:
    return next(r for r in report["remedies"] if r["key"] == key)


def test_the_zero1_remedy_of_ddp_runs_gathers_16_bit_parameters_by_hand(capsys, hand_report):
    """``--params 1e9`` at the default ``--wire-bytes`` 4: the fit reads S = 4 GB, its busbw
    4 GB / 0.2 s = 20 GB/s, no overlap (the measured comm is the whole all-reduce), latency 0
    (``fit_runs.INTRA_LATENCY_S``), no jitter. At 8 GPUs (ring, (p - 1)/p = 7/8):

        DDP, as measured:   0.1 + 2 * 7/8 * 4 GB / 20 GB/s          = 0.1 + 0.35   = 0.45 s
        Megatron ZeRO-1:    0.1 + 7/8 * (4 GB + 2 GB) / 20 GB/s     = 0.1 + 0.2625 = 0.3625 s
                            (reduce-scatter of the fp32 gradients, all-gather of the bf16
                            parameters: Ψ·4 + Ψ·2 bytes)
        gain                0.45 / 0.3625 - 1                                      = +24.1 %

    Before, the fitted workload gathered its parameters at the 4 bytes DDP reduced: 7/8 * 8 GB /
    20 GB/s = 0.35 s, the same step, "does not change the throughput here" (+0.0 %), and "sends
    the same bytes as now" where it sends 0.75x (6 against 2 x 4)."""
    report = _diagnosis(capsys, hand_report, "--params", "1e9")
    fit = report["details"]["fit"]
    assert fit["intra_busbw_GBps"] == pytest.approx(20.0, rel=0.005)
    assert fit["parameters"]["overlap"] < 0.02 and fit["parameters"]["jitter_cv"] < 1e-6
    workload = report["details"]["fitted_profile"]["workload"]
    assert (workload["params"], workload["reduce_bytes_per_param"],
            workload["wire_bytes_per_param"]) == (1e9, 4.0, 2.0)
    sharding = _remedy(report, "sharding")
    assert "ddp -> zero1" in sharding["title"]
    assert sharding["gain"] == pytest.approx(0.45 / 0.3625 - 1.0, abs=0.003)
    assert "sends 0.75x the bytes of now" in sharding["note"]
    assert any("the remedies' ZeRO gathers its parameters at 2 bytes each" in n
               for n in report["notes"])
    # DDP's own remedies charge the measured 4 bytes as before: a link of twice the busbw
    # halves the all-reduce, 0.45 / (0.1 + 0.175) - 1 = +63.6 %
    assert _remedy(report, "interconnect")["gain"] == pytest.approx(0.45 / 0.275 - 1, abs=0.003)


def test_a_stated_two_byte_all_reduce_gathers_the_same_two_bytes(capsys, hand_report):
    """``--wire-bytes 2`` (a DDP comm hook or a bf16 model): reduction and gather both 2 bytes,
    so ZeRO-1 sends 2 + 2 against DDP's 2 x 2, the same bytes; no note (nothing differs)."""
    report = _diagnosis(capsys, hand_report, "--params", "2e9", "--wire-bytes", "2")
    workload = report["details"]["fitted_profile"]["workload"]
    assert (workload["reduce_bytes_per_param"], workload["wire_bytes_per_param"]) == (2.0, 2.0)
    assert "sends the same bytes as now" in _remedy(report, "sharding")["note"]
    assert not any("the remedies' ZeRO gathers" in n for n in report["notes"])


def test_cpu_processes_gather_what_they_reduced(capsys, tmp_path):
    """CPU processes assume no mixed precision: PyTorch DDP reduces ``param.grad`` in the
    parameters' own dtype, so a gloo job all-reducing 4 bytes holds fp32 parameters and ZeRO
    gathers 4 (``fit_runs.ddp_gathered_bytes``). The session-44 user's own 2-process gloo job of
    1.585 M parameters (``tests/test_diagnose_nominal_gradient.py``) keeps ZeRO-1 at a loss,
    -10.5 % (read at 16-bit parameters it would gain +6.4 %), and no note."""
    path = tmp_path / "runs.csv"
    path.write_text("devices,nodes,step_time_s,per_device_batch,device\n"
                    "1,1,0.02522,32,cpu\n2,1,0.06192,32,cpu\n")
    report = _diagnosis(capsys, path, "--params", "1.585e6")
    workload = report["details"]["fitted_profile"]["workload"]
    assert (workload["reduce_bytes_per_param"], workload["wire_bytes_per_param"]) == (4.0, 4.0)
    sharding = _remedy(report, "sharding")
    assert sharding["verdict"] == "loses" and sharding["gain"] == pytest.approx(-0.105, abs=0.002)
    assert not any("the remedies' ZeRO gathers" in n for n in report["notes"])


@pytest.fixture(scope="module")
def workload_files(tmp_path_factory):
    where = tmp_path_factory.mktemp("gathered_files")
    bf16 = where / "bf16.json"
    bf16.write_text(json.dumps({"name": "bert bf16", "params": BERT_PARAMS,
                                "transformer": BERT}))
    fp32 = where / "fp32.json"  # fp32 training: parameters and gradients 4 bytes each
    fp32.write_text(json.dumps({"name": "bert fp32", "params": BERT_PARAMS,
                                "wire_bytes_per_param": 4, "param_bytes_per_param": 4,
                                "grad_bytes_per_param": 4, "transformer": BERT}))
    return bf16, fp32


@pytest.mark.parametrize("which, gathered", [(0, 2.0), (1, 4.0)])
def test_a_named_workload_gives_the_parameters_dtype(capsys, hand_report, workload_files,
                                                     which, gathered):
    """With ``--workload FILE`` the parameters gather at the file's ``wire_bytes_per_param``:
    2 for a 16-bit file stating nothing (the schema's default), 4 for fp32 training; both
    all-reduce fp32 under DDP (``memory.reduce_bytes_per_param_of``: max(grad bytes, 4)), the
    fitted reduction."""
    report = _diagnosis(capsys, hand_report, "--workload", workload_files[which],
                        "--gpu", "a100-sxm4-40gb")
    workload = report["details"]["fitted_profile"]["workload"]
    assert workload["reduce_bytes_per_param"] == pytest.approx(4.0)
    assert workload["wire_bytes_per_param"] == gathered
    assert any(f"the remedies' ZeRO gathers its parameters at {gathered:g} bytes each" in n
               for n in report["notes"])


def _as_before(profile: Profile) -> Profile:
    """The fitted profile with its workload gathering at the measured bytes (before session 46)."""
    wl = profile.workload
    return profile.model_copy(update={"workload": wl.model_copy(
        update={"wire_bytes_per_param": wl.reduce_bytes_per_param})})


@pytest.mark.parametrize("layout_model", [False, True])
def test_ddp_predictions_of_the_fitted_workload_do_not_move(layout_model):
    """The fitted DDP scenario predicted at 1-64 devices with its workload's wire at the
    parameters' 2 bytes and at the measured 4 (the old meaning): the same steps and bytes sent,
    on the data-parallel and the layout model's paths (GPT 1.7B on A100 PCIe 80GB)."""
    profile = resolve_profile(None, "pcie-8gpu-100gbe", "gpt-1.7b")
    rows = predict(profile, Scenario(devices=[8, 16, 32], micro_batch=1))
    csv = "devices,nodes,step_time_s,per_device_batch\n" + "".join(
        f"{r.devices},{r.nodes},{r.step_time_s:.9g},1\n" for r in rows)
    runs = parse_runs_text(csv, "runs.csv")
    model = runs_model("gpt-1.7b", "A100 PCIe 80GB") if layout_model else None
    report = diagnose_runs(runs, None if layout_model else model_params(), 4.0,
                           transformer=model)
    fitted = Profile.model_validate(report.details["fitted_profile"])
    scenario = Scenario.model_validate(report.details["fitted_scenario"])
    assert (fitted.workload.wire_bytes_per_param, fitted.workload.reduce_bytes_per_param) == (2, 4)
    scenario = scenario.model_copy(update={"devices": [1, 8, 16, 32, 64]})
    now, before = predict(fitted, scenario), predict(_as_before(fitted), scenario)
    for a, b in zip(now, before, strict=True):
        assert a.step_time_s == pytest.approx(b.step_time_s, rel=1e-12)
        assert a.exposed_comm_s == pytest.approx(b.exposed_comm_s, rel=1e-12, abs=1e-15)
        assert (a.comm_bytes, a.memory_bytes) == (b.comm_bytes, b.memory_bytes)
    assert now[-1].exposed_comm_s > 0.0  # an exchange to charge


def model_params() -> float:
    """GPT 1.7B's parameters as the preset counts them (its shape's)."""
    return float(resolve_profile(None, "pcie-8gpu-100gbe", "gpt-1.7b").workload.params)
