"""Session 41: runs on 1 GPU of each server (a cheap scaling test: 1 GPU on each of 2, 4, 8
servers) are diagnosed on servers of the size the user gives (``diagnose --gpus-per-node N``).

The fitted profile's server held only the GPUs the runs used (devices / nodes = 1), so the named
faster network (8 x 200 Gb/s HDR InfiniBand, 192 GB/s for a whole server) was given all of its
NICs, 192 GB/s to the job's one GPU a server, which reaches one NIC of eight, 24 GB/s
(``presets.partial_server_inter_busbw_GBps``); and whole servers could not be asked for. With
``--gpus-per-node 8`` the fitted server holds 8, the job 1 of each, and the remedy runs at its
share; without it a note says how the runs used their servers.
"""

from __future__ import annotations

import json

import diagnose_cases as cases
import pytest
from cli_harness import diagnose_file, fitted_of, run_cli

from scalesim.diagnosis_text import render_text
from scalesim.network_upgrades import UPGRADES_BY_KEY
from scalesim.predict import predict
from scalesim.runs import parse_runs_text
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Scenario

PARAMS = 336e6  # BERT-large's gradient elements
HDR_GBPS = 192.0  # 8 x 200 Gb/s x 0.96 (presets.inter_link), a whole server's busbw
ONE_NIC_OF_8_GBPS = HDR_GBPS / 8  # one GPU of 8 sits beside one NIC of the 8: 24 GB/s
NOTE = "runs used 1 GPU per server; give --gpus-per-node N if your servers have more"


def _csv() -> str:
    """BERT-large at 32 a GPU on 1 GPU of each of 1, 2, 4, 8 servers of 25 Gb/s Ethernet, made
    by the model (each GPU reaches the server's one NIC)."""
    profile = cases._profile("pcie-8gpu-25gbe", "bert-large")
    return cases.to_csv(cases._rows(profile, Scenario(devices=[1, 2, 4, 8], devices_per_node=1,
                                                      micro_batch=32)))


def _report(**kwargs):
    return diagnose_runs(parse_runs_text(_csv(), "runs.csv"), params=PARAMS, **kwargs)


def _network(report):
    return next(r for r in report.remedies if r.key == "interconnect")


def test_without_the_flag_a_note_says_how_the_runs_used_their_servers():
    report = _report()
    assert any(n.startswith(NOTE) for n in report.notes)
    profile, scenario = fitted_of(report)
    assert profile.hardware.devices_per_node == 1  # today's reading, kept
    assert [e["nodes"] for e in report.details["extrapolation"]] == [16, 32, 64]


def test_with_gpus_per_node_the_faster_network_runs_at_the_jobs_nic_share():
    without, report = _report(), _report(gpus_per_node=8)
    assert not any(n.startswith(NOTE) for n in report.notes)
    assert any(n.startswith("--gpus-per-node 8: the runs used at most 1 of each server's 8 GPUs")
               for n in report.notes)
    profile, scenario = fitted_of(report)
    assert profile.hardware.devices_per_node == 8
    assert scenario.devices == [8] and scenario.devices_per_node == 1  # 1 of 8 on 8 servers
    remedy = _network(report)
    assert "8 x 200 Gb/s HDR InfiniBand" in remedy.title
    # the title says what the job's GPU reaches (figures.busbw_words); the fitted link has no
    # NIC count, so today's figure is the GPU's and today's whole server is not known
    assert remedy.title.endswith("(3.31 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server "
                                 "(whole server 192))")
    # predict's on the fitted profile, its one GPU a server given one NIC of HDR's eight by hand
    # (the fitted link has no NIC count, so a figure given is what the GPU reaches)
    link = UPGRADES_BY_KEY["ib-8x200"].link()
    assert link.busbw_GBps == pytest.approx(HDR_GBPS)
    now = predict(profile, scenario)[0]
    upgraded = predict(profile, scenario.model_copy(update={
        "inter_busbw_GBps": ONE_NIC_OF_8_GBPS, "inter_latency_s": link.latency_s}))[0]
    assert remedy.gain == pytest.approx(upgraded.samples_per_s / now.samples_per_s - 1.0,
                                        rel=1e-9)
    # without the flag the one GPU was given all 192 GB/s: a larger gain
    assert _network(without).gain > remedy.gain * 1.5


def test_with_gpus_per_node_the_extrapolation_fills_whole_servers():
    report = _report(gpus_per_node=8)
    rows = report.details["extrapolation"]  # 2x, 4x, 8x the largest run: 16, 32, 64 GPUs
    assert [(e["devices"], e["nodes"]) for e in rows] == [(16, 2), (32, 4), (64, 8)]
    # 12 GPUs do not fill servers of 8: refused in one line, as predict refuses them
    with pytest.raises(Exception, match="12 devices do not fill whole servers of 8"):
        _report(gpus_per_node=8, extrapolate_to=[12])


def test_the_runs_filling_their_servers_get_no_note():
    csv = "devices,nodes,step_time_s\n1,1,0.1\n8,1,0.11\n16,2,0.13\n"
    report = diagnose_runs(parse_runs_text(csv, "runs.csv"))
    assert not any("--gpus-per-node" in n for n in report.notes)


def test_the_cli_takes_gpus_per_node_and_refuses_bad_values_in_one_line(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(_csv())
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--params", "336e6",
                                      "--gpus-per-node", "8", "--json"])
    assert code == 0, err
    assert json.loads(out)["details"]["fitted_profile"]["hardware"]["devices_per_node"] == 8
    # 4 GPUs on 2 servers: 2 a server; a server of 1 cannot have held them
    path.write_text("devices,nodes,step_time_s\n2,1,0.1\n4,2,0.12\n")
    for flags, message in (
        (["--gpus-per-node", "1"], "--gpus-per-node 1: the run on 2 devices over 1 server put 2 "
                                   "on each; give at least 2"),
        (["--gpus-per-node", "0"], "--gpus-per-node: 0 is outside 1 <= x <= 1,024"),
        (["--gpus-per-node", "2.5"], "not a whole number"),
    ):
        code, out, err = run_cli(capsys, ["diagnose", str(path), *flags])
        assert code == 2 and out == ""
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gpus_per_node_is_for_a_runs_file_and_data_parallel_runs(tmp_path, capsys):
    code, out, err = diagnose_file(capsys, tmp_path,
                                   "devices,nodes,step_time_s,tp\n8,1,0.1,8\n16,2,0.12,8\n",
                                   "--gpus-per-node", "8")
    assert code == 2 and "not for runs that split the model (tp 8 x pp 1 x cp 1)" in err
    assert len(err.strip().splitlines()) == 1
    trace = tmp_path / "rank0.json"
    trace.write_text('{"traceEvents": []}')
    code, out, err = run_cli(capsys, ["diagnose", "--trace", str(trace), "--gpus-per-node", "8"])
    assert code == 2 and "--gpus-per-node: for a runs file" in err


def test_without_the_flag_the_fitted_scenario_is_the_largest_run_as_it_ran():
    """8 GPUs on 1 server, then 16 on 4 (4 of each): a server holds 8 (the most a run put in
    one), but the largest run used 4 of each of its 4. The fitted scenario had been 16 on 2
    servers of 8 (``devices_per_node`` the server's 8), so predict's today on the fitted
    profile was 0.4257 s a step against the run's measured 0.7800 s, and every remedy's gain
    was taken from that; now 16 on 4 servers, predict within the fit's residual of the run."""
    profile = cases._profile("pcie-8gpu-25gbe", "bert-large")  # one NIC: no NIC share
    rows = (cases._rows(profile, Scenario(devices=[1, 8], devices_per_node=8, micro_batch=32))
            + cases._rows(profile, Scenario(devices=[16], devices_per_node=4, micro_batch=32)))
    assert [(r["devices"], r["nodes"]) for r in rows] == [(1, 1), (8, 1), (16, 4)]
    report = diagnose_runs(parse_runs_text(cases.to_csv(rows), "runs.csv"), params=PARAMS)
    fitted, scenario = fitted_of(report)
    assert fitted.hardware.devices_per_node == 8 and scenario.devices_per_node == 4
    today = predict(fitted, scenario)[0]
    assert today.nodes == 4  # was 2
    # the fit's overlap share (0.994) is rounded to on in the scenario: within 0.1 %
    assert today.step_time_s == pytest.approx(rows[-1]["step_time_s"], rel=1e-3)
    # the extrapolation fills whole servers of 8 (2x, 4x, 8x 16 GPUs), and a note says the
    # inter-server link is the figure 4 GPUs a server reached, taken as it is for whole servers
    assert [(e["devices"], e["nodes"]) for e in report.details["extrapolation"]] == [
        (32, 4), (64, 8), (128, 16)]
    note = next(n for n in report.notes if n.startswith("the runs across servers used at most 4"))
    assert "16 on 4 servers" in note and "with 4 GPUs a server, taken as it is" in note


def _csv_with_column(servers_of: int = 8) -> str:
    """``_csv``'s runs with the runs file's own ``gpus_per_node`` in every row."""
    lines = _csv().splitlines()
    return "\n".join([lines[0] + ",gpus_per_node"]
                     + [f"{line},{servers_of}" for line in lines[1:]]) + "\n"


def test_a_gpus_per_node_column_is_the_flag(tmp_path, capsys):
    """The runs file's ``gpus_per_node`` (one value, as ``device``) diagnoses the runs as
    ``--gpus-per-node`` does: the same report, and the flag beside it must agree."""
    flagged = _report(gpus_per_node=8)
    column = diagnose_runs(parse_runs_text(_csv_with_column(), "runs.csv"), params=PARAMS)
    assert column.notes == flagged.notes
    assert column.details["extrapolation"] == flagged.details["extrapolation"]
    assert column.details["fitted_profile"] == flagged.details["fitted_profile"]
    assert [(r.key, r.gain) for r in column.remedies] == [(r.key, r.gain)
                                                           for r in flagged.remedies]
    assert _network(column).gain == pytest.approx(_network(flagged).gain, rel=0.0)
    path = tmp_path / "runs.csv"
    path.write_text(_csv_with_column())
    argv = ["diagnose", str(path), "--params", "336e6", "--json"]
    code, same, err = run_cli(capsys, [*argv, "--gpus-per-node", "8"])
    assert code == 0, err
    code, alone, err = run_cli(capsys, argv)
    assert code == 0, err
    assert json.loads(alone) == json.loads(same)
    assert [(e["devices"], e["nodes"]) for e in json.loads(alone)["details"]["extrapolation"]] \
        == [(16, 2), (32, 4), (64, 8)]
    code, out, err = run_cli(capsys, [*argv, "--gpus-per-node", "4"])
    assert code == 2 and out == ""
    assert err.strip().endswith(f"--gpus-per-node 4, but {path} gives gpus_per_node 8; give "
                                "one, or the same in both")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("text", "message"), [
    ("devices,nodes,step_time_s,gpus_per_node\n1,1,0.1,8\n2,2,0.12,\n",
     "runs.csv: run 2 has no gpus_per_node; give it in every row or in none"),
    ("devices,nodes,step_time_s,gpus_per_node\n1,1,0.1,8\n2,2,0.12,4\n",
     "runs.csv: run 1 gives gpus_per_node 8, run 2 4; one server size per runs file"),
    ("devices,nodes,step_time_s,gpus_per_node\n4,1,0.1,2\n8,2,0.12,2\n",  # 4 in one server
     "runs.csv: run 1: gpus_per_node 2, but its 4 devices on 1 node put 4 in each; give at "
     "least 4"),
    ("devices,nodes,step_time_s,gpus_per_node\n1,1,0.1,0\n2,2,0.12,0\n",
     "runs.csv: run 1: field 'gpus_per_node': 0 given; allowed: 1 <= x <= 1,024"),
    ("devices,nodes,step_time_s,gpus_per_node,tp\n8,1,0.1,8,8\n16,2,0.12,8,8\n",
     "runs.csv: gpus_per_node 8: not for runs that split the model (tp 8 x pp 1 x cp 1)"),
])
def test_a_gpus_per_node_column_is_refused_in_one_line(tmp_path, capsys, monkeypatch, text,
                                                        message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs.csv").write_text(text)
    code, out, err = run_cli(capsys, ["diagnose", "runs.csv"])
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_diagnose_page_takes_gpus_per_node_as_the_cli(capsys, tmp_path, monkeypatch):
    """The Diagnose page's "GPUs per server" control (0: not given) is ``--gpus-per-node``: at
    8, the page's report is the CLI's with ``--gpus-per-node 8``, HDR at the GPU's NIC share.
    Before: ``DiagnoseOptions`` carried it, but the page had no control to set it."""
    from app_harness import open_diagnose_page, run_clean, upload_file

    monkeypatch.chdir(tmp_path)  # the CLI names the runs 'runs.csv', as the page the upload
    text = _csv()
    (tmp_path / "runs.csv").write_text(text)
    at = open_diagnose_page()
    at.file_uploader(key="dg_runs").set_value(("runs.csv", text.encode(), "text/csv"))
    at.number_input(key="dg_params").set_value(PARAMS)
    assert at.number_input(key="dg_gpus_per_node").value == 0
    at.number_input(key="dg_gpus_per_node").set_value(8)
    run_clean(at)
    assert not at.error
    page = next(c.value for c in at.code if c.value.startswith("Diagnosis of"))
    code, out, err = run_cli(capsys, ["diagnose", "runs.csv", "--params", "336e6",
                                      "--gpus-per-node", "8"])
    assert code == 0, err
    assert page == out.rstrip("\n")
    assert "(3.31 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server" in page
    # below a run's devices / nodes: the CLI's one line, as an error on the page
    at.number_input(key="dg_gpus_per_node").set_value(1)
    run_clean(at)
    assert not at.error  # 1 GPU a server: the runs' own, allowed
    (tmp_path / "two.csv").write_text("devices,nodes,step_time_s\n2,1,0.1\n4,2,0.12\n")
    at = upload_file(at, "dg_runs", "two.csv", "devices,nodes,step_time_s\n2,1,0.1\n4,2,0.12\n")
    # the page names its control, the CLI its flag (session 48: the page said the flag)
    assert [e.value for e in at.error] == [
        '"GPUs per server" 1: the run on 2 devices over 1 server put 2 on each; give at least 2']
    code, out, err = run_cli(capsys, ["diagnose", "two.csv", "--gpus-per-node", "1"])
    assert code == 2 and err.strip().endswith(
        "--gpus-per-node 1: the run on 2 devices over 1 server put 2 on each; give at least 2")


def test_extrapolated_rows_on_an_assumed_intra_server_link_say_so_and_hold_it_in_the_band():
    """With --gpus-per-node 8, runs on 1 GPU of each server never measure the intra-server
    link (held at its start value, 12.7 GB/s here); the extrapolation's rows of 8 a server rest
    on it. Each says so, and its band holds the prediction with that link anywhere from the
    inter-server link's busbw (3.31 GB/s) to 20x it. Before: no flag, and 16 GPUs on 2 servers
    read 1,198 samples/s [1,007 .. 1,271] where the fitted profile with the intra link at
    3.31 GB/s predicts 654."""
    report = _report(gpus_per_node=8)
    rows = report.details["extrapolation"]
    assert [e["assumed"] for e in rows] == [
        "intra-server link assumed: no run put two GPUs in one server"] * 3
    profile, scenario = fitted_of(report)
    inter = profile.hardware.inter_node.busbw_GBps

    def at_intra(busbw_GBps):  # predict on the fitted profile, whole servers of 8
        hw = profile.hardware.model_copy(update={"intra_node": profile.hardware.intra_node
                                                 .model_copy(update={"busbw_GBps": busbw_GBps})})
        return [r.samples_per_s for r in predict(
            profile.model_copy(update={"hardware": hw}),
            scenario.model_copy(update={"devices": [16, 32, 64], "devices_per_node": 8}))]

    held = at_intra(profile.hardware.intra_node.busbw_GBps)
    # the fit's overlap share is rounded to on in the scenario: 0.995 within 0.1 % before
    # session 56; the runs now pay DDP's bucket copies on 2-8 GPUs (336e6 x 8 B at the GPU's
    # memory bandwidth, docs/model.md §4), which a fit without that bandwidth (--params alone:
    # no optimizer step, so no copies) reads as less overlap, 0.963: within 0.4 %
    for e, centre, slow, fast in zip(rows, held, at_intra(inter), at_intra(20.0 * inter),
                                     strict=True):
        assert e["samples_per_s"] == pytest.approx(centre, rel=4e-3)  # the centre: held link
        assert e["low"] <= min(slow, fast) * (1 + 1e-3)
        assert e["high"] >= max(slow, fast) * (1 - 1e-3)
    assert at_intra(inter)[0] < 0.6 * held[0]  # 16 on 2: the intra link matters there
    assert rows[0]["low"] < 0.6 * rows[0]["samples_per_s"]
    # the text table says it beside each row
    text = render_text(report)
    assert text.count("(intra-server link assumed: no run put two GPUs in one server)") == 3


def test_runs_that_measured_the_intra_server_link_flag_no_row():
    csv = "devices,nodes,step_time_s\n1,1,0.1\n8,1,0.11\n16,2,0.13\n"
    report = diagnose_runs(parse_runs_text(csv, "runs.csv"))
    assert [e["assumed"] for e in report.details["extrapolation"]] == ["", "", ""]
