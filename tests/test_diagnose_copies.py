"""Diagnose prices PyTorch DDP's bucket copies (docs/model.md §4 "Their copies, in time") at the
datasheet memory bandwidth of the GPU the runs' ``device`` column names, as it does for
``--workload --gpu``; a CPU, an unlisted GPU, no column or no batch leaves them in the fitted
exchange, as before, and a note says how to name the GPU (session 58)."""

from __future__ import annotations

import diagnose_cases as cases
import pytest

from scalesim.fit_runs import ddp_copies_s, fit_runs
from scalesim.profiles import default_profile
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import device_column_bandwidth_GBps, diagnose_runs
from scalesim.schemas import Scenario

PARAMS = 336e6  # the default profile's BERT-large, fp16 gradients (2 bytes each)
A100_40GB_GBPS = 1555.0  # NVIDIA A100 datasheet
# 2 copies (into the bucket, back) × (read + write) × 2 bytes of fp16 bucket = 8 bytes a param
COPIES_S = PARAMS * 8.0 / (A100_40GB_GBPS * 1e9)  # 1.7286 ms


@pytest.fixture(scope="module")
def rows():
    """BERT-large at 32 a GPU on 1-32 A100 40GB of a2-highgpu-8g, as predict gives them: the
    default profile charges the copies at 1,555 GB/s on every multi-GPU run."""
    return cases._rows(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=32))


def _runs(rows, device=None, drop=()):
    extra = {} if device is None else {"device": device}
    return parse_runs_text(cases.to_csv([{**{k: v for k, v in r.items() if k not in drop},
                                          **extra} for r in rows]), "runs.csv")


def _copies_notes(report):
    return [n for n in report.notes if "bucket copies" in n]


def test_the_device_column_names_the_bandwidth(rows):
    assert pytest.approx(1.7286e-3, rel=1e-4) == COPIES_S
    runs = _runs(rows, "NVIDIA A100-SXM4-40GB")
    assert device_column_bandwidth_GBps(runs, None) == A100_40GB_GBPS
    assert device_column_bandwidth_GBps(runs, 900.0) == 900.0  # an exchange that states one
    report = diagnose_runs(runs, PARAMS, 2.0)
    [note] = _copies_notes(report)
    assert "1,555 GB/s datasheet memory bandwidth of NVIDIA A100-SXM4-40GB" in note
    assert "1.73 ms a step at 32 devices" in note
    # the remedy the probe measured (tests/test_ddp_bucket_copies.py: 8 of 16 B a parameter)
    assert "DDP(gradient_as_bucket_view=True) skips the copy back, half of them" in note
    # the fitted profile carries it, so the remedies charge the copies as the fit did
    assert report.details["fitted_profile"]["hardware"]["memory_bandwidth_GBps"] == A100_40GB_GBPS


def test_the_fit_charges_them_on_multi_device_runs_only(rows):
    from scalesim.fit_runs import RunsExchange

    runs = _runs(rows, "NVIDIA A100-SXM4-40GB")
    fit = fit_runs(runs, PARAMS, 2.0, RunsExchange(wire_bytes_per_param=2.0,
                                                   memory_bandwidth_GBps=A100_40GB_GBPS))
    copies = ddp_copies_s(fit)
    assert copies[0] == 0.0  # one GPU runs no DDP
    assert copies[1:] == pytest.approx([COPIES_S] * 5, rel=1e-9)
    assert ddp_copies_s(fit_runs(runs, PARAMS, 2.0)).tolist() == [0.0] * 6  # not known: none


def test_pricing_them_recovers_the_runs_compute_better(rows):
    """The runs were made with the copies at 1,555 GB/s: the fit that prices them there misses
    the runs by less than the one that reads them as exchange."""
    plain = diagnose_runs(_runs(rows), PARAMS, 2.0)
    priced = diagnose_runs(_runs(rows, "NVIDIA A100-SXM4-40GB"), PARAMS, 2.0)
    [hint] = _copies_notes(plain)  # not priced: how to name the GPU, and what they move
    assert "are read as exchange, not charged to compute" in hint
    # 336e6 parameters × 8 B (two copies, read and write, of fp16 buckets) = 2.69 GB
    assert "2.69 GB read and written a step at 32 devices" in hint
    assert "the runs have no device column" in hint
    assert "Name the GPU as torch.cuda.get_device_name writes it" in hint
    assert "--workload with --gpu" in hint
    assert plain.details["fitted_profile"]["hardware"]["memory_bandwidth_GBps"] is None
    # the fit has no optimizer step: a sample of the runs' 32 a step carries 1/32 of it
    compute = default_profile().compute
    truth = compute.per_sample_s + compute.optimizer_step_s / 32  # 1.9264 ms
    per_sample = [r.details["fitted_profile"]["compute"]["per_sample_s"] for r in (plain, priced)]
    assert per_sample[0] == pytest.approx(truth, rel=5e-3)  # 1.9305 ms: the copies inside
    assert per_sample[1] == pytest.approx(truth, rel=1e-3)  # 1.9257 ms
    assert abs(per_sample[1] / truth - 1) < abs(per_sample[0] / truth - 1) / 5


@pytest.mark.parametrize("device, said", [
    ("cpu", None),  # CPU processes run no GPU copies to price: no word of them
    ("NVIDIA Graphics Device", "the runs' device column names 'NVIDIA Graphics Device', which "
                               "the datasheet tables do not list"),
    ("", "the runs have no device column")])
def test_no_listed_gpu_prices_none_and_the_note_says_how_to_name_one(rows, device, said):
    runs = _runs(rows, device or None)
    assert device_column_bandwidth_GBps(runs, None) is None
    notes = _copies_notes(diagnose_runs(runs, PARAMS, 2.0))
    assert notes == [] if said is None else (len(notes) == 1 and said in notes[0]
                                             and "are read as exchange" in notes[0])


def test_without_params_or_a_step_in_seconds_none_are_priced(rows):
    """Without --params the gradient is nominal; from samples_per_s without a batch column a
    run's time is of a unit of work, not of a step: a step's copies have no place in either.
    Step times without a batch are steps: priced."""
    named = _runs(rows, "NVIDIA A100-SXM4-40GB")
    assert _copies_notes(diagnose_runs(named, None, 2.0)) == []
    timed = _runs(rows, "NVIDIA A100-SXM4-40GB", drop=("per_device_batch", "accumulation"))
    assert not timed.batch_known and timed.steps_timed
    [note] = _copies_notes(diagnose_runs(timed, PARAMS, 2.0))
    assert "1.73 ms a step at 32 devices" in note
    per_unit = _runs([{"devices": r["devices"], "nodes": r["nodes"],
                       "samples_per_s": r["devices"] / r["step_time_s"]} for r in rows],
                     "NVIDIA A100-SXM4-40GB")
    assert not per_unit.steps_timed
    assert _copies_notes(diagnose_runs(per_unit, PARAMS, 2.0)) == []
    from scalesim.runs_model import runs_model

    shaped = diagnose_runs(per_unit, None, 2.0, transformer=runs_model("bert-large", "A100 40GB"))
    assert _copies_notes(shaped) == []


def test_with_workload_the_note_names_the_gpu_flag(rows):
    """--workload --gpu prices them at the named GPU's bandwidth (session 56); the note says so
    by the flag, which the Diagnose page writes as its control."""
    from scalesim.runs_model import runs_model

    model = runs_model("bert-large", "A100 40GB")
    [note] = _copies_notes(diagnose_runs(_runs(rows), None, 2.0, transformer=model))
    assert "1,555 GB/s datasheet memory bandwidth of A100 40GB (--gpu)" in note
    copies_s = model.params * 8.0 / (A100_40GB_GBPS * 1e9)  # the preset's parameter count
    assert f"{copies_s * 1e3:.3g} ms a step at 32 devices" in note


def test_copies_longer_than_a_measured_step_are_refused_in_one_line(capsys, tmp_path):
    """A parameter count whose copies alone outlast a run's measured step is not the runs' model
    (or the GPU is not theirs): refused with the numbers, not fitted into a 10,000 % misfit
    (session 58; before, 1e12 parameters on runs of 100 ms steps printed a +22,899 % first
    remedy). Runs at 8 a GPU (steps of ~16 ms): their copies can outlast a step at a count the
    GPU's 40 GB could hold (below, the memory refusal comes first)."""
    from cli_harness import run_cli

    from scalesim.errors import ScalesimError

    rows = cases._rows(default_profile(), Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=8))
    runs = _runs(rows, "NVIDIA A100-SXM4-40GB")
    shortest = min(r["step_time_s"] for r in rows if r["devices"] > 1)
    # copies = params × 8 B / 1,555 GB/s: just under the shortest multi-GPU step is fitted,
    # just over it refused
    at_step = shortest * A100_40GB_GBPS * 1e9 / 8.0
    diagnose_runs(runs, 0.9 * at_step, 2.0)
    with pytest.raises(ScalesimError) as refused:
        diagnose_runs(runs, 1.1 * at_step, 2.0)
    said = str(refused.value)
    assert "PyTorch DDP's bucket copies of the gradients alone take" in said
    assert f"{1.1 * shortest * 1e3:.3g} ms a step at the 1,555 GB/s" in said
    assert "check --params (the model's parameter count) and --wire-bytes" in said
    # the CLI: exit 2 and one line
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv([{**r, "device": "NVIDIA A100-SXM4-40GB"} for r in rows]))
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--params", f"{1.1 * at_step:g}",
                                      "--wire-bytes", "2"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "bucket copies" in err


def test_a_count_the_named_gpu_could_not_hold_under_ddp_is_refused(rows, capsys, tmp_path):
    """DDP keeps every parameter and its gradient on each GPU: at least 2 x the wire bytes a
    parameter. A count past the named GPU's memory (40 GiB for NVIDIA A100-SXM4-40GB) is refused
    before any fit; one just under it is fitted; without a named GPU nothing is refused."""
    from cli_harness import run_cli

    from scalesim.errors import ScalesimError

    limit = 40 * 2**30 / (2 * 2.0)  # parameters whose fp16 weights and gradients fill 40 GiB
    named = _runs(rows, "NVIDIA A100-SXM4-40GB")
    with pytest.raises(ScalesimError) as refused:
        diagnose_runs(named, 1.01 * limit, 2.0)
    said = str(refused.value)
    assert "under DDP every device holds each parameter and its gradient" in said
    assert ("at least 2 x 2 bytes a parameter (--wire-bytes), 40.4 GiB, more than its 40.0 GiB"
            in said)
    # just under: fitted (its copies, 54.7 ms a step, under the runs' ~62 ms steps)
    assert _copies_notes(diagnose_runs(named, 0.99 * limit, 2.0))
    # no GPU named: no memory to hold it to; the note says how to name one
    [hint] = _copies_notes(diagnose_runs(_runs(rows), 1.01 * limit, 2.0))
    assert "the runs have no device column" in hint
    path = tmp_path / "runs.csv"
    path.write_text(cases.to_csv([{**r, "device": "NVIDIA A100-SXM4-40GB"} for r in rows]))
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--params", "1e12"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "7,450.6 GiB, more than its 40.0 GiB" in err


def test_the_diagnose_page_shows_the_refusal_in_its_error_box_with_its_controls():
    """The page says the memory refusal in its error box, naming its own controls where the CLI
    names flags, and keeps working (session 58)."""
    from app_harness import open_diagnose_page, run_clean
    from scalesim.app.diagnose_page import example_runs_csv

    lines = example_runs_csv().splitlines()
    named = "\n".join([lines[0] + ",device"] + [f"{x},NVIDIA A100-SXM4-40GB" for x in lines[1:]])
    at = open_diagnose_page(named + "\n")
    at.number_input(key="dg_params").set_value(1e12)
    (box,) = run_clean(at).error
    assert box.value.startswith('"Model parameters" 1e+12 on NVIDIA A100-SXM4-40GB')
    assert "more than its 40.0 GiB" in box.value and "--" not in box.value
    at.number_input(key="dg_params").set_value(3.3e8)  # the runs' own BERT-large: a report
    assert not run_clean(at).error
