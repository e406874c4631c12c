"""calibrate --from-nccl-tests on published nccl-tests logs (tests/fixtures/nccl_tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scalesim import presets
from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.model import collectives as coll
from scalesim.predict import predict
from scalesim.profiles import default_profile, load_profile, profile_from_presets
from scalesim.schemas import Scenario
from scalesim.sources import nccl_tests
from scalesim.sources.calibrate_from import calibrate_from_sources

FIX = Path(__file__).parent / "fixtures" / "nccl_tests"
A100_2N = FIX / "a100_2node_16gpu_rdma_all_reduce.txt"
H100_1N = FIX / "h100_8gpu_all_reduce.txt"
H100_2N = FIX / "h100_2node_16gpu_all_reduce.txt"
EFA = FIX / "t4_efa_2node_all_reduce.txt"
TABLE = FIX / "a40_pcie_sys_4gpu_table_only.txt"
FAILED = FIX / "v100_dgx1_all_gather_failed.txt"
GATHER = FIX / "all_gather_2gpu_bf16_excerpt.txt"


@pytest.mark.parametrize("path, ranks, hosts, level, rows", [
    (A100_2N, 16, 2, "inter_node", 31),
    (H100_1N, 8, 1, "intra_node", 4),
    (H100_2N, 16, 2, "inter_node", 5),
    (EFA, 2, 2, "inter_node", 29),  # two 0-byte rows dropped; [1,0]<stdout>: prefixes
    (TABLE, 4, 0, "intra_node", 4),  # no header: ranks from busbw/algbw
])
def test_published_logs_parse(path, ranks, hosts, level, rows):
    run = nccl_tests.parse_file(path)
    assert run.op == "all_reduce"
    assert run.ranks == ranks and len(run.hosts) == hosts and run.level == level
    assert len(run.points) == rows
    for p in run.points:  # bus bandwidth recomputed from size and time matches the printed one
        assert p.ranks == ranks and p.busbw_GBps == pytest.approx(
            p.algbw_GBps * 2 * (ranks - 1) / ranks, rel=1e-9)


def test_all_gather_uses_the_out_of_place_column_and_its_bus_factor():
    run = nccl_tests.parse_file(GATHER)
    assert run.op == "all_gather" and run.ranks == 2 and run.level == "intra_node"
    assert any("2 ranks inferred" in n for n in run.notes)
    assert any("no 'Avg bus bandwidth' line" in n for n in run.notes)
    first = run.points[0]
    assert first.time_s == pytest.approx(108.8e-6)  # out-of-place, as all_gather_into_tensor
    assert first.busbw_GBps == pytest.approx(77.10, rel=2e-3)  # algbw * (n-1)/n
    (fit,) = nccl_tests.fit_runs([run]).values()
    assert set(fit.fits) == {"all_gather"}
    # alpha (from every size) and beta (refitted at the top) reproduce the largest rows' times
    for p in run.points[-2:]:
        model = coll.ring_reduce_scatter_s(p.size_bytes, 2, fit.link.latency_s, fit.link.busbw_GBps)
        assert float(model) == pytest.approx(p.time_s, rel=0.05)


def test_a_table_without_hosts_can_be_named_inter_server():
    (run,) = nccl_tests.load_runs([f"inter={TABLE}"])
    assert run.level == "inter_node" and run.nodes == 2
    assert not any("one server assumed" in n for n in run.notes)
    (plain,) = nccl_tests.load_runs([TABLE])
    assert plain.level == "intra_node" and any("inter=FILE" in n for n in plain.notes)
    fits = nccl_tests.fit_runs(nccl_tests.load_runs([f"inter={TABLE}", H100_1N]))
    assert set(fits) == {"intra_node", "inter_node"}


def test_all_reduce_uses_the_in_place_column_as_ddp_runs_it():
    run = nccl_tests.parse_file(H100_1N)
    last = run.points[-1]
    assert last.size_bytes == 2147483648 and last.time_s == pytest.approx(7985.2e-6)
    assert last.busbw_GBps == pytest.approx(470.63, rel=2e-3)  # the printed in-place busbw


@pytest.mark.parametrize("path, largest_busbw", [
    (A100_2N, 237.52), (H100_1N, 470.63), (H100_2N, 196.51), (EFA, 3.12), (TABLE, 1.35)])
def test_fitted_beta_matches_the_largest_messages(path, largest_busbw):
    fit = nccl_tests.fit_runs([nccl_tests.parse_file(path)])
    (level_fit,) = fit.values()
    assert level_fit.link.busbw_GBps == pytest.approx(largest_busbw, rel=0.03)
    assert level_fit.link.latency_s >= 0
    assert level_fit.calibration.measured and level_fit.calibration.points


def test_latency_of_a_sweep_from_8_bytes_is_microseconds():
    """The A100 sweep starts at 8 B (36 us for 16 ranks, 30 ring steps): alpha ~ 1 us per step."""
    (fit,) = nccl_tests.fit_runs([nccl_tests.parse_file(A100_2N)]).values()
    assert 0.2e-6 < fit.link.latency_s < 3e-6


def test_several_files_fit_each_level():
    fits = nccl_tests.fit_runs(nccl_tests.load_runs([H100_1N, H100_2N]))
    assert set(fits) == {"intra_node", "inter_node"}
    assert fits["intra_node"].link.busbw_GBps > fits["inter_node"].link.busbw_GBps
    assert "one server" in fits["intra_node"].link.source


def _mutated(tmp_path, src, name, change):
    text = change(src.read_text())
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, change, message", [
    ("cut.txt", lambda t: t[:t.index("  8589934592 ") + 70], "cut short"),
    ("wrong.txt", lambda t: t.replace("237.94      0", "237.94      3"), "#wrong is 3"),
    ("bcast.txt", lambda t: "# Collective test starting: broadcast_perf\n" + t.replace(
        "sum      -1", "sum       0"), "broadcast_perf output"),
    ("two.txt", lambda t: "./all_gather_perf -b 8\n./all_reduce_perf -b 8\n" + t, "several tests"),
    ("norows.txt", lambda t: t[:t.index("           8             2")], "no rows"),
    ("one.txt", lambda t: "\n".join(x for x in t.splitlines()
                                    if not x.strip()[:1].isdigit() or "8589934592" in x),
     "only 1 message size"),
    # fuzz findings: a time of 0 reached the fit (division by zero, a CollectivePoint error
    # naming no line); a 10^30 us time or a 10^30 GB/s bandwidth likewise
    ("zero.txt", lambda t: t.replace("    67689  126.90", "        0  126.90"),
     r"line 54: the time column \(0\): 0 is outside 1e-12 <= x"),
    ("huge.txt", lambda t: t.replace("    67689  126.90", f"  {'9' * 31}  126.90"),
     r"line 54: the time column \(9+\): [0-9.]+e24 is outside"),
    ("fast.txt", lambda t: t.replace("126.90  237.94", "126.90  1e30"),
     r"line 54: the busbw column \(1e30\): 1e30 is outside 0 <= x <= 100,000 GB/s"),
    # session 10: a size of 10^26 bytes (or 400 digits) reached CollectivePoint, whose error
    # named neither the file nor the line
    ("bigsize.txt", lambda t: t.replace("  8589934592    2147483648", f"  {'9' * 26}    2147483648"),
     r"line 54: the size column \(9+\): 1e26 is outside 1 <= x <= 1,099,511,627,776 bytes"),
    ("hugesize.txt", lambda t: t.replace("  8589934592    2147483648", f"  {'9' * 400}    2147483648"),
     r"line 54: the size column \(9{37}\.\.\.\): inf is not a finite number"),
    # session 12: a 4 MiB cell was quoted whole (one line, but 4 MiB of it), an ESC raw
    ("longcell.txt", lambda t: t.replace("    67689  126.90", f"  {'x' * 4_000_000}  126.90"),
     r"line 54: 'x{37}\.\.\.' is not a number in the time column"),
    ("esc.txt", lambda t: t.replace("    67689  126.90", "  1\x1b[31m  126.90"),
     r"line 54: '1\\x1b\[31m' is not a number in the time column"),
    # session 49: a size cell that algbw x time contradicts (1 TiB timed as nccl-tests timed
    # 8 GiB) fitted an intra link of 30,420 GB/s in silence; 126.90 GB/s x 67689 us = 8,589,734,100
    # bytes by hand, not 1,099,511,627,776
    ("garbled.txt", lambda t: t.replace("  8589934592    2147483648", " 1099511627776    2147483648"),
     r"line 54: its size is 1,099,511,627,776 bytes, but algbw x time \(126.90 GB/s x 67689 us\) "
     r"is 8,589,734,100 .*edited or garbled"),
    # session 49's audit, left by it: rows under 10 GB/s or 10 us went unchecked, so a small row
    # garbled (the 64 KiB row's 51.69 us as 15.69) was fitted. Each row is checked now within its
    # printed digits (half a unit each, by hand): 1.265 x 15.685 x 1e3 = 19,841.5 to
    # 1.275 x 15.695 x 1e3 = 20,011.1 bytes, and 1.27 x 15.69 x 1e3 = 19,926.3, not 65,536
    ("small_garbled.txt", lambda t: t.replace("16384     float     sum      -1    51.69",
                                              "16384     float     sum      -1    15.69"),
     r"line 37: its size is 65,536 bytes, but algbw x time \(1.27 GB/s x 15.69 us\) is 19,926 "
     r"\(19,842 to 20,011 as printed; .*edited or garbled"),
    # session 52 fuzz: a header column that lost its name paired one half's time with the
    # other half's algbw: an IndexError on h100_8gpu_all_reduce.txt (calibrate's traceback), a
    # row blamed as garbled here ('line 31: its size is 1,024 bytes, but ...'); a lost busbw
    # name was read in silence
    ("lost_algbw.txt", lambda t: t.replace("root     time   algbw", "root     time   nan"),
     r"line 22: the column header holds 2 time, 1 algbw, 2 busbw columns, where each half"),
    ("renamed_busbw.txt", lambda t: t.replace("busbw #wrong     time", "busbx #wrong     time"),
     r"line 22: the column header holds 2 time, 2 algbw, 1 busbw columns"),
])
def test_bad_logs_are_one_line_errors(tmp_path, name, change, message):
    path = _mutated(tmp_path, A100_2N, name, change)
    with pytest.raises(ScalesimError, match=message) as exc:
        nccl_tests.parse_file(path)
    assert "\n" not in str(exc.value)


def test_failed_validation_and_foreign_files_are_refused(tmp_path):
    with pytest.raises(ScalesimError, match="Out of bounds values : 2 FAILED"):
        nccl_tests.parse_file(FAILED)
    topo = Path(__file__).parent / "fixtures" / "nvidia_smi" / "h100_x8_nics_topo.txt"
    with pytest.raises(ScalesimError, match="not nccl-tests output"):
        nccl_tests.parse_file(topo)
    with pytest.raises(ScalesimError, match="no such file"):
        nccl_tests.parse_file(tmp_path / "missing.txt")


def test_a_new_profile_takes_links_and_server_from_the_log(tmp_path):
    out = tmp_path / "p.json"
    profile, report = calibrate_from_sources(out, [H100_1N])
    saved = load_profile(out)
    assert saved == profile
    hw = saved.hardware
    assert hw.devices_per_node == 8 and hw.device_name == "NVIDIA H100 80GB HBM3"
    assert hw.intra_node.busbw_GBps == pytest.approx(470.63, rel=0.03)
    assert "h100_8gpu_all_reduce.txt" in hw.intra_node.source
    # the default presets' GPU is an A100 40GB: the parts the log does not measure come from
    # the hardware preset of the log's GPU (dgx-h100), not the A100's under an H100's name
    h100 = profile_from_presets(presets.HARDWARE["dgx-h100"], default_profile().workload)
    assert hw.inter_node == h100.hardware.inter_node  # a one-server log: inter not measured
    assert (hw.peak_tflops, hw.memory_bandwidth_GBps, hw.device_memory_bytes) == (
        989.0, 3350.0, h100.hardware.device_memory_bytes)
    assert saved.compute == h100.compute and saved.workload == h100.workload
    assert any("hardware preset dgx-h100" in line for line in report)
    intra = [c for c in saved.links if c.level == "intra_node"]
    assert len(intra) == 1 and intra[0].measured and len(intra[0].points) == 4
    assert any("inter-server link not measured" in line for line in report)
    fp = saved.fingerprint
    assert (fp.device_name, fp.device_count, fp.nodes, fp.hostnames) == (
        "NVIDIA H100 80GB HBM3", 8, 1, ["host"])


def test_a_level_the_logs_did_not_measure_says_why_in_the_logs_words(tmp_path):
    """A new profile from a one-server log keeps the presets' inter-server link, whose record
    said 'not measured (a preset profile)': predict called an nccl-tests profile a preset one.
    It says the logs ran on no second server now; where the numbers came from stays."""
    from scalesim.cli.cmd_predict import unmeasured_link_notes

    profile, _ = calibrate_from_sources(tmp_path / "p.json", [H100_1N], write=False)
    inter = next(c for c in profile.links if c.level == "inter_node")
    assert not inter.measured
    assert inter.not_measured_because == "no nccl-tests log ran across servers"
    assert inter.numbers_from == profile.hardware.inter_node.source
    [note] = unmeasured_link_notes(profile, inter=True, intra=True)
    assert note.startswith("inter-server link not measured (no nccl-tests log ran across "
                           "servers); numbers from 8x400 Gb/s"), note


def test_a_log_of_a_gpu_no_preset_lists_keeps_the_presets_device_name(tmp_path):
    """A T4 log (no T4 hardware preset) wrote a profile named 'Tesla T4' whose peak, memory and
    compute were the default A100 40GB's; now the device stays the presets' and a note says
    so, with what to give instead."""
    profile, report = calibrate_from_sources(tmp_path / "p.json", [EFA])
    assert profile.hardware.device_name == default_profile().hardware.device_name
    assert profile.compute == default_profile().compute
    assert any("Tesla T4, which no hardware preset lists" in line and "--base" in line
               for line in report)


def test_updating_a_profile_replaces_only_the_measured_level(tmp_path):
    out = tmp_path / "p.json"
    first, _ = calibrate_from_sources(out, [H100_1N])
    second, _ = calibrate_from_sources(out, [H100_2N])
    assert second.hardware.intra_node == first.hardware.intra_node
    assert second.hardware.inter_node.busbw_GBps == pytest.approx(196.5, rel=0.03)
    assert second.compute == first.compute and second.workload == first.workload
    assert [c.level for c in second.links] == ["intra_node", "inter_node"]
    assert all(c.measured for c in second.links)
    # the predictions use the measured links: two servers cost more than one
    rows = predict(second, Scenario(devices=[8, 16]))
    assert rows[1].exposed_comm_s > rows[0].exposed_comm_s


def test_logs_of_another_gpu_than_the_profiles_are_said_not_taken_in_silence(tmp_path):
    """An existing H100 profile updated from an A100 cluster's log (a slip of the file name):
    the A100 network replaced the H100 profile's inter-server link and nothing said so, while
    --base PRESET of another GPU is refused and --from-trace of another GPU is said (audit of
    the calibration path)."""
    out, h100 = tmp_path / "p.json", tmp_path / "h100.json"
    calibrate_from_sources(h100, [H100_1N])
    profile, report = calibrate_from_sources(out, [A100_2N], base=str(h100))
    said = [n for n in profile.notes if "the logs ran on NVIDIA A100-SXM4-40GB" in n]
    assert len(said) == 1 and "H100" in said[0] and "another machine's" in said[0]
    assert any("the logs ran on NVIDIA A100-SXM4-40GB" in line for line in report)
    # logs of the profile's own GPU add no such words
    again, _ = calibrate_from_sources(tmp_path / "q.json", [H100_2N], base=str(h100))
    assert not any("another machine" in n for n in again.notes)


def test_a_bad_file_leaves_the_profile_as_it_was(tmp_path):
    out = tmp_path / "p.json"
    calibrate_from_sources(out, [H100_1N])
    before = out.read_bytes()
    with pytest.raises(ScalesimError):
        calibrate_from_sources(out, [H100_2N, FAILED])
    assert out.read_bytes() == before


def test_cli_writes_the_profile_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-nccl-tests", str(A100_2N), "--out", str(out)]) == 0
    assert load_profile(out).hardware.inter_node.busbw_GBps == pytest.approx(237.5, rel=0.03)
    text = capsys.readouterr().out
    assert "inter_node: busbw" in text and "profile written" in text
    assert main(["calibrate", "--from-nccl-tests", str(FAILED), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "FAILED" in err[0]


def test_a_header_that_lost_a_column_name_is_one_line_not_a_traceback(tmp_path, capsys):
    """Session 52 fuzz: calibrate raised IndexError where the out-of-place 'algbw' of this log's
    header (line 14) was overwritten: the in-place time had no algbw to pair with."""
    log = _mutated(tmp_path, FIX / "h100_8gpu_all_reduce.txt", "h.txt",
                   lambda t: t.replace("root     time   algbw", "root     time   nan"))
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-nccl-tests", str(log), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"scalesim calibrate: error: {log} line 14: the column header holds 2 time, "
                   "1 algbw, 2 busbw columns, where each half of the table (out-of-place, "
                   "in-place) has one of each; keep the header nccl-tests printed"]
    assert not out.exists()


@pytest.mark.parametrize("flag", [["--quick"], ["--nproc-per-node", "4"], ["--phases", "compute"],
                                  ["--resume"], ["--model", "gpt"], ["--block-hidden", "1024"],
                                  ["--backend", "gloo"], ["--inter-busbw", "50"]])
def test_a_measuring_flag_beside_from_is_refused_not_ignored(tmp_path, capsys, flag):
    """--from-nccl-tests (--from-trace, --from-topo) reads files and measures nothing: --quick,
    --nproc-per-node 4, --model gpt, --inter-busbw 50 ... were accepted and changed nothing.
    One line now, naming the flag; --out, --name, --base and --micro-batch still go with it."""
    out = tmp_path / "p.json"
    code = main(["calibrate", "--from-nccl-tests", str(H100_1N), *flag, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert flag[0] in err and "measure nothing" in err and not out.exists()


def test_base_without_a_from_source_is_refused_before_measuring(tmp_path, capsys):
    """--base PROFILE is the profile --from-... updates; without a --from-... source calibrate
    started a full measurement and never read it. One line now, before anything runs."""
    base = tmp_path / "base.json"
    assert main(["calibrate", "--from-nccl-tests", str(H100_1N), "--name", "lab",
                 "--out", str(base)]) == 0
    capsys.readouterr()
    code = main(["calibrate", "--base", str(base), "--out", str(tmp_path / "new.json")])
    err = capsys.readouterr().err
    assert code == 2 and "--base" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "new.json").exists()


@pytest.mark.parametrize("entries", [
    ["{log}", "{log}"],
    ["{log}", "{alias}"],  # the same file by another name
    ["{log}", "inter={log}"],  # and with a level prefix
])
def test_a_log_given_twice_is_refused_in_one_line(tmp_path, capsys, monkeypatch, entries):
    """`calibrate --from-nccl-tests a.txt a.txt` was accepted: each size counted twice in the
    link's fit and the log listed twice in its source. Refused as a trace given twice is, by
    the one helper both readers share (`errors.check_distinct_files`)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copy(A100_2N, "a.txt")
    argv = [e.format(log="a.txt", alias="./a.txt") for e in entries]
    assert main(["calibrate", "--from-nccl-tests", *argv, "--out", "p.json"]) == 2
    out, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "given twice" in err, err
    assert "give each log once" in err and not (tmp_path / "p.json").exists()
    # session 49's audit: a copy of one log under another name was fitted as a second run (each
    # size counted twice). Two runs never print the same bytes: refused as the same run twice
    shutil.copy(A100_2N, "b.txt")
    assert main(["calibrate", "--from-nccl-tests", "a.txt", "b.txt", "--out", "p.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("b.txt: the same bytes as a.txt (one run given twice under two names); "
                        "give each log once") and "\n" not in err
    # a log differing by one byte is another file: read
    Path("b.txt").write_text(A100_2N.read_text() + "\n")
    assert main(["calibrate", "--from-nccl-tests", "a.txt", "b.txt", "--out", "p.json"]) == 0


def _renamed(tmp_path, path: Path, gpu: str, extra: str = "") -> Path:
    """``path``'s log as if it ran on ``gpu``, with ``extra`` NCCL INFO lines before it."""
    out = tmp_path / f"{gpu.replace(' ', '_')}_{path.name}"
    out.write_text(extra + path.read_text().replace("NVIDIA H100 80GB HBM3", gpu))
    return out


@pytest.mark.parametrize("line, network", [
    ("host:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
     "infiniband"),
    ("host:1:1 [0] NCCL INFO Using network IB", "infiniband"),
    ("host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>", "ethernet"),
    ("host:1:1 [0] NCCL INFO Using network IB\nhost:1:1 [0] NCCL INFO NET/IB : Using "
     "[0]mlx5_0:1/RoCE ; OOB eth0", None),  # RoCE: IB verbs over Ethernet, neither kind
    ("", None),
])
def test_the_logs_nccl_transport_is_read(tmp_path, line, network):
    path = _renamed(tmp_path, H100_1N, "NVIDIA H100 80GB HBM3", line + "\n")
    assert nccl_tests.parse_file(path).network == network


def test_an_efa_log_names_no_preset_kind():
    assert nccl_tests.parse_file(EFA).network is None  # AWS Libfabric


def test_the_preset_follows_what_the_logs_say(monkeypatch):
    from scalesim.sources.calibrate_from import preset_for_logs

    pcie = "NVIDIA A100 80GB PCIe"
    assert preset_for_logs("NVIDIA H100 80GB HBM3") == ("dgx-h100", [], [])
    assert preset_for_logs("Tesla T4") == (None, [], [])
    # two presets of that GPU, told apart by the network only: nothing said, the first taken
    assert preset_for_logs(pcie) == ("pcie-8gpu-100gbe", [], ["pcie-8gpu-25gbe"])
    name, why, others = preset_for_logs(pcie, inter_busbw_GBps=1.5)  # a 25 GbE measurement
    assert name == "pcie-8gpu-25gbe" and not others and "nearest the logs' 1.5" in why[0]
    assert preset_for_logs(pcie, inter_busbw_GBps=9.0)[0] == "pcie-8gpu-100gbe"
    # GPUs per server and NCCL's transport pick among presets that differ in them
    ib4 = presets.HARDWARE["pcie-8gpu-100gbe"].model_copy(update={
        "devices_per_node": 4, "inter_node": presets.HARDWARE["dgx-a100"].inter_node})
    monkeypatch.setitem(presets.HARDWARE, "pcie-4gpu-ib", ib4)
    assert preset_for_logs(pcie, network="infiniband")[:2] == (
        "pcie-4gpu-ib", ["infiniband between servers, as NCCL's transport in the logs"])
    assert preset_for_logs(pcie, network="ethernet")[0] == "pcie-8gpu-100gbe"
    assert preset_for_logs(pcie, per_node=4)[:2] == ("pcie-4gpu-ib", ["4 GPUs per server"])
    assert preset_for_logs(pcie, per_node=8)[1] == ["8 GPUs per server"]


def test_the_note_names_the_preset_taken_and_base_takes_another(tmp_path):
    log = _renamed(tmp_path, H100_1N, "NVIDIA A100 80GB PCIe")  # one server: inter unmeasured
    profile, report = calibrate_from_sources(tmp_path / "a.json", [log])
    line = next(x for x in report[1:] if "hardware preset" in x)
    assert "pcie-8gpu-100gbe" in line and "do not tell it from pcie-8gpu-25gbe" in line
    assert line.endswith("give --base pcie-8gpu-25gbe")
    slow = presets.HARDWARE["pcie-8gpu-25gbe"]
    assert profile.hardware.inter_node == presets.HARDWARE["pcie-8gpu-100gbe"].inter_node
    code = main(["calibrate", "--from-nccl-tests", str(log), "--out", str(tmp_path / "b.json"),
                 "--base", "pcie-8gpu-25gbe"])
    chosen = load_profile(tmp_path / "b.json")
    assert code == 0 and chosen.hardware.inter_node == slow.inter_node
    assert chosen.hardware.device_name == "NVIDIA A100 80GB PCIe"
    assert chosen.hardware.intra_node == profile.hardware.intra_node  # measured either way
    with pytest.raises(ScalesimError, match="--base dgx-h100: its GPU is H100-SXM5 80GB, the "
                       "logs ran on NVIDIA A100 80GB PCIe; give a preset of that GPU"):
        calibrate_from_sources(tmp_path / "c.json", [log], base="dgx-h100")


def test_logs_of_two_different_gpus_are_refused_in_one_line(tmp_path, capsys):
    """Session 10: an H100 server's log and an A100 cluster's log made one profile named
    'NVIDIA A100-SXM4-40GB x8 (nccl-tests)' with the H100's NVLink (479 GB/s) beside the A100's
    InfiniBand, without a word. Logs naming two GPUs (also two in one log's rank lines) are
    refused, nothing written; two names of one device are one GPU."""
    out = tmp_path / "p.json"
    code = main(["calibrate", "--from-nccl-tests", str(H100_1N), str(A100_2N), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("2 different GPUs (NVIDIA A100-SXM4-40GB in a100_2node_16gpu_rdma_all_reduce.txt; "
            "NVIDIA H100 80GB HBM3 in h100_8gpu_all_reduce.txt)") in err
    assert not out.exists()
    mixed = _mutated(tmp_path, H100_1N, "mixed.txt",
                     lambda t: t.replace("device  1 [0x43] NVIDIA H100 80GB HBM3",
                                         "device  1 [0x43] NVIDIA A100-SXM4-40GB"))
    with pytest.raises(ScalesimError, match="2 different GPUs .* in mixed.txt; .* in mixed.txt"):
        calibrate_from_sources(out, [mixed], write=False)
    renamed = _mutated(tmp_path, H100_1N, "renamed.txt",
                       lambda t: t.replace("device  1 [0x43] NVIDIA H100 80GB HBM3",
                                           "device  1 [0x43] H100-SXM5 80GB"))
    profile, _ = calibrate_from_sources(out, [renamed, H100_2N], write=False)
    assert profile.hardware.device_memory_bytes == presets.HARDWARE["dgx-h100"].device_memory_bytes


def test_h800_logs_are_not_read_as_the_h100_preset(tmp_path):
    """An H800 has the H100 SXM's peak and bandwidth (presets.PEAK_TFLOPS, MEMORY_BANDWIDTH_GBPS)
    but NVLink cut to 400 GB/s: its logs are not rebased on dgx-h100 (whose NVSwitch figures they
    would keep for a level they do not measure) and are not merged with an H100's as one
    machine (presets.OWN_DEVICE_WORDS)."""
    h800 = _mutated(tmp_path, H100_1N, "h800.txt",
                    lambda t: t.replace("NVIDIA H100 80GB HBM3", "NVIDIA H800"))
    profile, report = calibrate_from_sources(tmp_path / "p.json", [h800], write=False)
    assert profile.hardware.device_name == default_profile().hardware.device_name
    assert any("NVIDIA H800, which no hardware preset lists" in line for line in report)
    with pytest.raises(ScalesimError, match="2 different GPUs"):
        calibrate_from_sources(tmp_path / "q.json", [h800, H100_2N], write=False)


# Session 15: users' real files (tests/fixtures/nccl_tests/README.md names each source)
SRUN = FIX / "h100_2node_srun_label_all_reduce.txt"
NVL72 = FIX / "gb200_nvl72_rack_all_reduce_excerpt.txt"
GB10 = FIX / "gb10_2node_v2_20_all_reduce_excerpt.txt"
APART = FIX / "h100_2node_separate_jobs_ranks.txt"


def test_an_srun_label_prefixed_log_is_read():
    # was: every row begins "0:", so none was read: "the table has no rows (truncated?)"
    run = nccl_tests.parse_file(SRUN)
    assert (run.op, run.ranks, run.hosts, run.level) == (
        "all_reduce", 16, ["node005", "node007"], "inter_node")
    assert len(run.points) == 11
    by_size = {p.size_bytes: p for p in run.points}
    # the 128 MiB row's in-place busbw as printed: 160.64 GB/s (1566.6 us)
    assert by_size[134217728].busbw_GBps == pytest.approx(160.64, abs=0.01)
    assert by_size[8589934592].busbw_GBps == pytest.approx(155.56, abs=0.01)
    assert any("-c 0" in n for n in run.notes)


def test_windows_line_endings_read_as_the_same_log(tmp_path):
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(SRUN.read_bytes().replace(b"\n", b"\r\n"))
    a, b = nccl_tests.parse_file(SRUN), nccl_tests.parse_file(crlf)
    assert [p.time_s for p in a.points] == [p.time_s for p in b.points]
    assert (a.ranks, a.hosts) == (b.ranks, b.hosts)


def test_a_cut_rank_list_counts_the_ranks_it_numbers():
    # was: "1 rank: a collective on one GPU measures no link" (one rank line kept of 72)
    run = nccl_tests.parse_file(NVL72)
    assert (run.ranks, run.level) == (72, "intra_node")
    by_size = {p.size_bytes: p for p in run.points}
    # busbw 2(n-1)/n S/t of the 8 GiB row's in-place 20006 us (printed to 5 digits): the
    # log's 846.82 GB/s, 846.81 from the printed time
    assert by_size[8589934592].busbw_GBps == pytest.approx(846.82, abs=0.02)
    assert any("lists 1 of ranks 0-71: 72 ranks taken" in n for n in run.notes)
    assert any(nccl_tests.ONE_SERVER_ASSUMED in n for n in run.notes)


def test_the_2_20_header_is_read():
    run = nccl_tests.parse_file(GB10)
    assert (run.op, run.ranks, run.level, run.devices) == (
        "all_reduce", 2, "inter_node", ["NVIDIA GB10"])
    by_size = {p.size_bytes: p for p in run.points}
    assert by_size[65536].busbw_GBps == pytest.approx(1.01, abs=0.01)  # 64.71 us in place


def test_jobs_that_ran_apart_are_refused_not_read_as_one(tmp_path):
    # was: 4 ranks on dgx01 and dgx02, an inter-server link fitted from one-GPU jobs
    lines = H100_1N.read_text().splitlines(keepends=True)
    table = "".join(lines[next(i for i, x in enumerate(lines) if "out-of-place" in x):])
    path = tmp_path / "apart.txt"
    path.write_text(APART.read_text() + table)
    with pytest.raises(ScalesimError, match=r"rank 0 is listed 12 times \(on dgx01, dgx02\): the "
                       r"file holds several nccl-tests jobs that ran apart.*make MPI=1"):
        nccl_tests.parse_file(path)
    # a log pasted twice into one file (the same rank lines: the tables tell)
    twice = tmp_path / "twice.txt"
    twice.write_text(H100_1N.read_text() + H100_1N.read_text())
    with pytest.raises(ScalesimError, match="holds 2 nccl-tests tables .*one run per file"):
        nccl_tests.parse_file(twice)


def _all_types(text: str, types=("float", "half")) -> str:
    """A -d all table as nccl-tests prints it: the sweep once per type under one header (each
    type's times doubled after the first, so a mix would be seen)."""
    lines = text.splitlines()
    rows = [x for x in lines if x.strip()[:1].isdigit()]
    head = lines[:lines.index(rows[0])]
    tail = lines[lines.index(rows[-1]) + 1:]
    out = []
    for k, t in enumerate(types):
        out += [r.replace(" bfloat16 ", f" {t:>8} ") if k else r for r in rows]
    return "\n".join(head + out + tail) + "\n"


def test_several_data_types_are_refused_in_one_line(tmp_path):
    path = tmp_path / "all_gather_dall.txt"
    path.write_text(_all_types(GATHER.read_text(), ("bfloat16", "int8", "float")))
    with pytest.raises(ScalesimError, match=r"holds 3 data types \(bfloat16, int8, float: -d "
                       r"all\?\) and a link is fitted from one: rerun with -d"):
        nccl_tests.parse_file(path)


def test_several_reduction_ops_keep_the_sum_rows(tmp_path):
    text = H100_1N.read_text()
    rows = [x for x in text.splitlines() if x.strip()[:1].isdigit()]
    prod = [r.replace("float     sum", "float    prod").replace("1117.4", "9999.9") for r in rows]
    path = tmp_path / "all_reduce_oall.txt"
    path.write_text(text.replace(rows[-1], "\n".join([rows[-1], *prod])))
    run, plain = nccl_tests.parse_file(path), nccl_tests.parse_file(H100_1N)
    assert [p.time_s for p in run.points] == [p.time_s for p in plain.points]
    assert any("the sum rows taken of 2 reduction ops (sum, prod: -o all)" in n for n in run.notes)
    only_prod = tmp_path / "all_reduce_prod_max.txt"
    only_prod.write_text(text.replace(rows[-1], "\n".join([*prod, *(
        r.replace("prod", " max") for r in prod)])).replace("\n".join(rows[:-1]) + "\n", ""))
    with pytest.raises(ScalesimError, match=r"2 reduction ops \(prod, max\) and none is sum"):
        nccl_tests.parse_file(only_prod)


def test_intra_on_a_log_across_hosts_is_one_server_of_all_its_ranks(tmp_path):
    # hosts that share one NVLink domain (GB200 NVL72 trays: 18 hosts of 4 GPUs); was: intra=
    # kept the hosts as servers, so a new profile got 8 GPUs per server of a 16-GPU domain
    (run,) = nccl_tests.load_runs([f"intra={H100_2N}"])
    assert (run.level, run.nodes, run.ranks) == ("intra_node", 1, 16)
    assert any("one server of 16 GPUs" in n for n in run.notes)
    out = tmp_path / "p.json"
    calibrate_from_sources(str(out), nccl_tests_files=[f"intra={H100_2N}"])
    assert load_profile(out).hardware.devices_per_node == 16


def test_a_rank_count_the_printed_digits_do_not_fix_is_refused():
    # 128 GPUs, rows of at most 2.22 GB/s busbw: was "101 ranks inferred" (a 101-GPU server in
    # a new profile); two printed decimals allow 87 to 261
    excerpt = FIX / "all_reduce_128gpu_error_column_excerpt.txt"
    with pytest.raises(ScalesimError, match=r"no rank list in the header, and busbw/algbw, "
                       r"printed to two decimals, fits anything from 87 to 261 ranks"):
        nccl_tests.parse_file(excerpt)
    # the counts the digits do fix still read: 4 ranks (A40 table), 2 (all-gather excerpt)
    assert nccl_tests.parse_file(TABLE).ranks == 4
    assert nccl_tests.parse_file(GATHER).ranks == 2


def test_a_rank_count_without_an_upper_bound_is_worded_as_one():
    # review of session 15: the 128-GPU excerpt's last row alone (2.15 / 1.08 GB/s) bounds the
    # count from below only; the refusal said "fits anything from 87 to more ranks"
    lines = (FIX / "all_reduce_128gpu_error_column_excerpt.txt").read_text().splitlines()
    with pytest.raises(ScalesimError) as refused:
        nccl_tests.parse_text("\n".join([*lines[:3], lines[-1]]), "last_row.txt")
    assert "fits 87 ranks or more;" in str(refused.value), str(refused.value)
    assert "to more" not in str(refused.value)


def _cpu_timed(text: str, cpu_us: float = 9.87) -> str:
    """The log as ``all_reduce_perf -C 1`` prints it: its header says ``cputime`` and every
    row's time cells are the host's enqueue time per iteration (``cpu_us``, "%7.2f" under
    100 us), while algbw and busbw stay the GPU-timed ones (nccl-tests src/common.cu lines
    767-796 and 858 at a0b82b22: ``getBw(..., deltaSec, ...)``, ``timeUsec = report_cputime ?
    cputimeSec : deltaSec``)."""
    header = next(line for line in text.splitlines() if " busbw " in line and " size " in line)
    lines = []
    for line in text.replace(header, header.replace(" time ", " cputime ")).splitlines():
        cells = line.split()
        if cells and cells[0].isdigit() and len(cells) == 13:
            cells[5] = cells[9] = f"{cpu_us:7.2f}"
            line = "  ".join(cells)
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_a_log_of_all_reduce_perf_dash_c_reads_its_times_from_algbw():
    """``all_reduce_perf -C 1`` heads its time columns ``cputime`` and prints the host's enqueue
    time there (9.87 us for every size here), its algbw from the GPU-timed time: was refused by
    the algbw x time size check (268,435,456 B against 239.71 GB/s x 9.87 us = 2,365,938 B), and
    before that check fitted 9.87 us as the collective's time. Each row's time is S / algbw:
    2147483648 B / 268.93 GB/s = 7985.1 us (the GPU-timed log prints 7985.2); each row within
    the two printings' rounding, at most 0.05 / 1117.4 + 0.005 / 240.24 = 6.6e-5 (256 MiB)."""
    text = H100_1N.read_text()
    cpu = _cpu_timed(text)
    assert "cputime" in cpu and "  9.87  " in cpu and "1117.4" not in cpu
    gpu_run, cpu_run = (nccl_tests.parse_text(t, "log.txt") for t in (text, cpu))
    assert cpu_run.ranks == gpu_run.ranks == 8 and cpu_run.cpu_timed and not gpu_run.cpu_timed
    assert [p.size_bytes for p in cpu_run.points] == [p.size_bytes for p in gpu_run.points]
    assert cpu_run.points[-1].time_s == pytest.approx(2147483648 / 268.93e9, rel=1e-12)
    for c, g in zip(cpu_run.points, gpu_run.points, strict=True):
        assert c.time_s == pytest.approx(g.time_s, rel=6.7e-5)
    assert any("printed times are CPU-side" in n and "nccl-tests -C" in n for n in cpu_run.notes)
    assert not any("CPU-side" in n for n in gpu_run.notes)
    # the profile's link source says so
    fit = nccl_tests.fit_runs([cpu_run])["intra_node"]
    assert "in-place times from algbw: log.txt printed CPU-side times (-C)" in fit.link.source


def test_a_dash_c_log_leaves_out_rows_whose_algbw_is_too_coarse_for_a_time():
    """The A100 2-server sweep printed with -C: rows whose algbw is under 0.5 GB/s are printed
    to more than 1 % of themselves ("%6.2f": 0.005 / 0.49 = 1.02 %) and carry no time; the rest
    are fitted from S / algbw. Counted by hand off the log's in-place algbw column."""
    gpu_run = nccl_tests.parse_file(A100_2N)
    cpu_run = nccl_tests.parse_text(_cpu_timed(A100_2N.read_text(), 25.31), "a100_c.txt")
    rows = [c for c in (x.split() for x in A100_2N.read_text().splitlines())
            if c and c[0].isdigit() and len(c) == 13 and int(c[0]) > 0]
    coarse = [c for c in rows if float(c[10]) < 0.5]
    assert 0 < len(coarse) < len(rows)
    assert len(cpu_run.points) == len(rows) - len(coarse) == len(gpu_run.points) - len(coarse)
    assert any(f"{len(coarse)} row(s) left out: their algbw is printed" in n
               for n in cpu_run.notes)
    kept = {p.size_bytes: p.time_s for p in gpu_run.points}
    for p in cpu_run.points:  # within the two printings' rounding (algbw >= 0.5: 1 %)
        assert p.time_s == pytest.approx(kept[p.size_bytes], rel=0.011)


# Session 16: a whole NVL72 log
def _whole_nvl72_log(tmp_path, hosts=18, per_host=4, device="NVIDIA GB200"):
    """The NVL72 excerpt with all its rank lines, ``per_host`` GPUs on each of ``hosts`` trays
    named as the excerpt's last one is (the excerpt keeps only rank 71's line), the GPU named
    ``device`` (current drivers name it "NVIDIA GB200"; the published log's early driver,
    "NVIDIA Graphics Device")."""
    text = NVL72.read_text()
    (line,) = [x for x in text.splitlines() if "Rank 71" in x]
    ranks = [line.replace("Rank 71", f"Rank {r:2d}").replace("-171 ", f"-{100 + r // per_host} ")
             .replace("device  3", f"device  {r % per_host}")
             .replace("NVIDIA Graphics Device", device) for r in range(hosts * per_host)]
    path = tmp_path / "nvl72_whole.txt"
    path.write_text(text.replace(line, "\n".join(ranks)))
    return path


def test_a_whole_nvl72_log_is_one_nvlink_domain_by_its_busbw(tmp_path):
    """Was: all 72 rank lines on 18 trays read as 18 servers of 4 GPUs joined by an 'inter-
    server network' of 847 GB/s busbw. No network of one 800 Gb/s NIC per GPU can carry that
    across hosts: whatever the algorithm, each tray sends and receives at least S, so busbw <=
    2 x (71/72) x 4 x 100 GB/s = 788.9 GB/s (hand-computed), and 847 is over 1.05 x that: the
    trays share one NVLink domain, one server of 72 GPUs, said in a note; inter= overrides."""
    path = _whole_nvl72_log(tmp_path)
    run = nccl_tests.parse_file(path)
    assert (run.ranks, len(run.hosts), run.nodes, run.level) == (72, 18, 1, "intra_node")
    assert nccl_tests.network_busbw_ceiling_GBps("all_reduce", 72, 18, 4, 100.0) == pytest.approx(
        788.889, abs=1e-3)
    (note,) = [n for n in run.notes if "NVLink domain" in n]
    assert "busbw reaches 847 GB/s across 18 hosts of up to 4 GPUs" in note
    assert "one server of 72 GPUs (say inter=FILE if not)" in note
    assert "one 800 Gb/s NIC per GPU (the fastest for NVIDIA GB200)" in note
    out = tmp_path / "p.json"
    calibrate_from_sources(str(out), nccl_tests_files=[str(path)])
    profile = load_profile(out)
    assert profile.hardware.devices_per_node == 72
    assert profile.hardware.intra_node.busbw_GBps > 700
    (said,) = nccl_tests.load_runs([f"inter={path}"])
    assert (said.nodes, said.level) == (18, "inter_node")
    assert not any("NVLink domain (multi-node" in n for n in said.notes)


def test_hosts_whose_busbw_a_network_allows_stay_servers(tmp_path):
    # two 8-GPU H100 servers at 160 GB/s busbw: the ceiling is 2 x (15/16) x 8 x 100 = 1,500
    run = nccl_tests.parse_file(SRUN)
    assert (run.nodes, run.level, run.one_domain) == (2, "inter_node", False)
    assert nccl_tests.network_busbw_ceiling_GBps("all_reduce", 16, 2, 8, 100.0) == pytest.approx(
        1500.0)
    # the NVL72 rows on hosts of 8 GPUs: ceiling 2 x (71/72) x 8 x 100 = 1,577.8 GB/s
    run = nccl_tests.parse_file(_whole_nvl72_log(tmp_path, hosts=9, per_host=8))
    assert (run.nodes, run.level) == (9, "inter_node")
    # all-gather / reduce-scatter: each host receives (sends) (N-1)/N S, no in-network shortcut
    assert nccl_tests.network_busbw_ceiling_GBps("all_gather", 72, 18, 4, 100.0) == pytest.approx(
        400 * 71 / 72 * 18 / 17)


def test_a_cell_is_known_to_half_a_unit_of_its_last_printed_digit():
    """nccl-tests prints time with 2, 1 or 0 decimals (under 100, 10,000 us, above) and algbw
    with 2: each cell's rounding, read off the cell itself."""
    assert nccl_tests.printed_half_unit("51.69") == pytest.approx(0.005)
    assert nccl_tests.printed_half_unit("1234.5") == pytest.approx(0.05)
    assert nccl_tests.printed_half_unit("67689") == pytest.approx(0.5)
    assert nccl_tests.printed_half_unit("1.5e+03") == pytest.approx(50.0)


def test_every_row_of_the_published_logs_holds_within_its_printed_digits():
    """The check reaches rows of 0.00 GB/s (8 B in 36.47 us: [0, 0.005] x [36.465, 36.475] x 1e3
    allows 0 to 182 bytes) and so must pass every published log whole, small rows included."""
    parsed = 0
    for path in sorted(FIX.glob("*.txt")):
        try:
            nccl_tests.parse_file(path)
            parsed += 1
        except ScalesimError as exc:  # the failed-run and two-jobs logs are refused for that
            assert "algbw x time" not in str(exc), exc
    assert parsed >= 8


def _slower(path, factor):
    """The log with every row's times ``factor`` times longer, algbw and busbw as nccl-tests
    prints them for that time: algbw = size / time (to two decimals of the printed time, which
    every row is checked against since session 49), busbw = algbw x the log's busbw/algbw (read
    off its fastest row, where the two decimals make it exact to 1e-5)."""
    text = path.read_text()
    rows = [c for c in (x.split() for x in text.splitlines()) if c and c[0].isdigit()
            and len(c) == 13]
    top = max(rows, key=lambda c: float(c[6]))
    ratio = float(top[7]) / float(top[6])
    lines = []
    for line in text.splitlines():
        cells = line.split()
        if cells and cells[0].isdigit() and len(cells) == 13:
            for t in (5, 9):
                cells[t] = f"{float(cells[t]) * factor:.1f}"
                algbw = float(cells[0]) / float(cells[t]) / 1e3  # bytes / us -> GB/s
                cells[t + 1], cells[t + 2] = f"{algbw:.2f}", f"{algbw * ratio:.2f}"
            line = "  ".join(cells)
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_busbw_that_in_network_reduction_allows_is_not_read_as_nvlink(tmp_path):
    """Session 16 review: the ceiling was the ring's, 2(N-1)/N S through each host's NICs, and a
    log over 1.25x it was read as one NVLink domain. With in-network reduction (SHARP: NCCL's
    CollNet, NVLS with IB SHARP) each host moves only S, so 18 hosts of 4 GPUs on 800 Gb/s NICs
    can show up to 788.9 GB/s: 650 GB/s (over 1.25 x the ring's 417.6) was read as one 72-GPU
    NVLink server. It stays 18 servers now."""
    run = nccl_tests.parse_file(_slower(_whole_nvl72_log(tmp_path), 847 / 650))
    assert 640 < max(p.busbw_GBps for p in run.points) < 660
    assert (run.nodes, run.level, run.one_domain) == (18, "inter_node", False)


def test_two_trays_of_multi_node_nvlink_are_one_domain(tmp_path):
    """Session 16 review: two hosts cannot beat the ring's bound by any algorithm (2(N-1)/N = 1),
    yet a 1.25 margin let NVLink pass for a network: the NVL72 rows on 2 trays of 4 GPUs show
    751 GB/s (847 x (7/8)/(71/72)), over the 700 GB/s of 2 x (7/8) x 400 but under 1.25 x 700,
    and were read as 2 servers on a 751 GB/s network (a published 2-tray GB200 MNNVL all-reduce
    reached 811 GB/s: lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test). Now one server of 8."""
    run = nccl_tests.parse_file(_whole_nvl72_log(tmp_path, hosts=2, per_host=4))
    assert max(p.busbw_GBps for p in run.points) == pytest.approx(751.4, abs=0.5)
    assert (run.ranks, run.nodes, run.level, run.one_domain) == (8, 1, "intra_node", True)
    assert nccl_tests.network_busbw_ceiling_GBps("all_reduce", 8, 2, 4, 100.0) == pytest.approx(
        700.0)


# Session 17: several NVLink domains; 1.6 Tb/s NICs
def test_two_nvl72_racks_are_refused_unless_the_log_is_given_a_level(tmp_path, capsys):
    """Session 16's "found and left": 36 GB200 trays of 4 (two NVL72 racks, 144 ranks) read as
    one server of 144 GPUs, though a GB200 NVLink domain holds at most 72 (NVL72). Refused in
    one line now; inter=FILE keeps the trays as servers, intra=FILE is one server as said."""
    path = _whole_nvl72_log(tmp_path, hosts=36)
    with pytest.raises(ScalesimError) as exc:
        nccl_tests.parse_file(path)
    text = str(exc.value)
    assert "across 36 hosts of up to 4 GPUs" in text and "\n" not in text
    assert ("but 144 GPUs (NVIDIA GB200) are more than one NVLink domain of them holds (72): the "
            "log spans several domains joined by a network") in text
    assert text.endswith("give it as inter=FILE to fit a network across the hosts, or one "
                         "domain's log as intra=FILE")
    assert main(["calibrate", "--from-nccl-tests", str(path), "--out",
                 str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    (inter,) = nccl_tests.load_runs([f"inter={path}"])
    assert (inter.nodes, inter.level) == (36, "inter_node")
    (intra,) = nccl_tests.load_runs([f"intra={path}"])
    assert (intra.nodes, intra.level) == (1, "intra_node")
    # one rack of them is one domain (72 <= 72); a GH200 domain holds up to 256 (DGX GH200)
    assert nccl_tests.parse_file(_whole_nvl72_log(tmp_path, hosts=18)).one_domain
    assert nccl_tests.nvlink_domain_gpus(["NVIDIA GH200 480GB"]) == 256
    assert nccl_tests.nvlink_domain_gpus(["NVIDIA GB300"]) == 72


def test_hosts_of_1_6_tbps_nics_are_not_read_as_nvlink(tmp_path):
    """Session 16's "found and left": the ceiling assumed 800 Gb/s per GPU, so two hosts on
    ConnectX-9 (1.6 Tb/s per GPU) could read as NVLink. A GPU the log does not name (or a newer
    one) gets the 1.6 Tb/s ceiling: 2 hosts of 8 at ~2,000 GB/s all-reduce busbw are over the
    1,500 GB/s of 800 Gb/s NICs (2 x 15/16 x 8 x 100) but within the 3,000 of 1.6 Tb/s ones,
    so they stay servers, said in a note; the same log of B200s (800 Gb/s platforms) is one
    NVLink domain."""
    unnamed = nccl_tests.parse_file(_slower(_whole_nvl72_log(
        tmp_path, hosts=2, per_host=8, device="NVIDIA Graphics Device"), 0.4))
    assert 1900 < max(p.busbw_GBps for p in unnamed.points) < 2100
    assert (unnamed.nodes, unnamed.level, unnamed.one_domain) == (2, "inter_node", False)
    assert nccl_tests.network_busbw_ceiling_GBps("all_reduce", 16, 2, 8) == pytest.approx(3000.0)
    (note,) = [n for n in unnamed.notes if "ConnectX-9" in n]
    assert ("over the 1500 GB/s one 800 Gb/s NIC per GPU allows but within the 3000 GB/s of "
            "1.6 Tb/s NICs (ConnectX-9)") in note
    assert "read as 2 servers on a network (say intra=FILE" in note
    b200 = nccl_tests.parse_file(_slower(_whole_nvl72_log(
        tmp_path, hosts=2, per_host=8, device="NVIDIA B200"), 0.4))
    assert (b200.nodes, b200.level, b200.one_domain) == (1, "intra_node", True)


def test_the_published_nvl72_log_names_no_gpu_and_reads_as_servers_with_a_note(tmp_path):
    """The published rack log's early driver names its GPUs "NVIDIA Graphics Device": its 847
    GB/s is 1.07x the 789 GB/s of 800 Gb/s NICs but 0.54x the 1,578 of 1.6 Tb/s ones, which
    the log does not rule out. It reads as 18 servers, the note saying intra=FILE; named
    "NVIDIA GB200" (current drivers) it is one domain (test above)."""
    path = _whole_nvl72_log(tmp_path, device="NVIDIA Graphics Device")
    run = nccl_tests.parse_file(path)
    assert (run.nodes, run.level, run.one_domain) == (18, "inter_node", False)
    (note,) = [n for n in run.notes if "ConnectX-9" in n]
    assert "busbw reaches 847 GB/s across 18 hosts of up to 4 GPUs, over the 789 GB/s" in note
    assert "within the 1578 GB/s of 1.6 Tb/s NICs" in note
    (said,) = nccl_tests.load_runs([f"intra={path}"])
    assert (said.nodes, said.level) == (1, "intra_node")
    assert not any("ConnectX-9" in n for n in said.notes)


def test_a_device_name_with_an_escape_still_writes_a_profile(tmp_path, capsys):
    """A log whose GPU name carries a terminal escape (a colouring launcher) wrote no profile:
    the escape went into the profile's name, refused as 'a value outside its bounds'. The name
    is now kept with the escape written out, and the profile is written."""
    log = tmp_path / "all_reduce_colour.txt"
    log.write_text(H100_2N.read_text().replace("HBM3", "HBM3\x1b[0m"))
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-nccl-tests", str(log), "--out", str(out)]) == 0
    name = load_profile(out).name
    assert "\x1b" not in name and "\\x1b[0m" in name


def _with_units(text: str, two_cells: bool = False) -> str:
    """The log's sizes of 1 KiB and more written with the largest binary unit that divides
    them ('2K', '8G'; or '2 KiB' in two cells), as a table retyped into a report shows them."""
    out = []
    for line in text.splitlines():
        tokens = line.split(None, 1)
        if tokens and tokens[0].isdigit() and int(tokens[0]) >= 1024:
            size = int(tokens[0])
            unit, k = next((u, k) for u, k in (("G", 30), ("M", 20), ("K", 10))
                           if size % 2**k == 0)
            cell = f"{size >> k} {unit}iB" if two_cells else f"{size >> k}{unit}"
            line = f"{cell}  {tokens[1]}"
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("two_cells", [False, True])
def test_sizes_printed_with_units_are_read_as_nccl_tests_binary_units(tmp_path, two_cells):
    """Rows whose size carried a unit were skipped as not table rows: the published 8 B-8 GiB
    sweep fitted its beta from the seven rows under 1 KiB alone (a silent wrong number), or
    refused in words about the times; read as nccl-tests' -b reads a size (K = 1024)."""
    path = tmp_path / "all_reduce_perf_units.txt"
    path.write_text(_with_units(A100_2N.read_text(), two_cells))
    bytes_run, unit_run = nccl_tests.parse_file(A100_2N), nccl_tests.parse_file(path)
    assert [(p.size_bytes, p.time_s) for p in unit_run.points] == \
        [(p.size_bytes, p.time_s) for p in bytes_run.points]
    assert len(unit_run.points) == 31
    assert any("24 size(s) printed with a unit, read in binary units" in n
               for n in unit_run.notes)
    fit = nccl_tests.fit_runs([unit_run])["inter_node"].link
    assert fit.busbw_GBps == nccl_tests.fit_runs([bytes_run])["inter_node"].link.busbw_GBps


def test_sizes_in_decimal_units_are_refused_in_one_line(tmp_path, capsys):
    """A size written in decimal megabytes ('268M' for 268,435,456 bytes) read in binary units
    is 4.7 % off what its algbw x time say: refused, not fitted 4.7 % fast."""
    text = A100_2N.read_text().replace("   268435456      67108864", "268M      67108864")
    assert "268M" in text
    path = tmp_path / "all_reduce_perf_mb.txt"
    path.write_text(text)
    with pytest.raises(ScalesimError, match=r"is 281,018,368 bytes, but algbw x time .* not "
                                            r"nccl-tests' \(K = 1000\?\)"):
        nccl_tests.parse_file(path)
    half = tmp_path / "half.txt"
    half.write_text(A100_2N.read_text().replace("     1048576", "       1.3K"))
    assert main(["calibrate", "--from-nccl-tests", str(half), "--out",
                 str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'1.3K' is not a whole number of bytes" in err[0]


def _rows(text: str) -> list[list[str]]:
    """The table rows of a log (size in bytes first), as cells."""
    return [c for c in (x.split() for x in text.splitlines()) if c and c[0].isdigit()]


@pytest.mark.parametrize("path, ranks, per_rank_count", [
    (A100_2N, 16, False), (H100_1N, 8, False), (H100_2N, 16, False), (GATHER, 2, True)])
def test_nccl_tests_prints_each_size_in_bytes_as_count_times_element_bytes(path, ranks,
                                                                           per_rank_count):
    """Session 50: nccl-tests prints the size column in bytes in every version ("%12li", size
    then count: src/*.cu from 2017, src/common.cu, src/util.cu to a0b82b22), and the size is
    count x bytes per element exactly, x the ranks for all-gather (its count is one rank's
    share): 16777216 = 4194304 bf16 x 2 B x 2 ranks. The count check of sizes printed with a
    unit rests on it."""
    from scalesim.trace_comm_calls import dtype_bytes

    rows = [c for c in _rows(path.read_text()) if int(c[0]) > 0]
    assert rows and all(c[0].isdigit() and c[1].isdigit() for c in rows)
    for c in rows:
        assert int(c[0]) == int(c[1]) * dtype_bytes(c[2]) * (ranks if per_rank_count else 1)
    assert _rows(GATHER.read_text())[0][:3] == ["16777216", "4194304", "bfloat16"]


def test_a_dash_c_table_in_decimal_units_is_refused_by_its_count(tmp_path, capsys):
    """A -C table's times are CPU-side, so its sizes were not checked at all (session 49 left
    the algbw x time check off such tables): '268M' written for 268,435,456 bytes was read as
    268 x 2^20 = 281,018,368 bytes and its time taken as that over algbw, 4.7 % long. Its
    count, 67,108,864 floats x 4 B = 268,435,456 bytes, says the unit was not nccl-tests'."""
    text = _cpu_timed(H100_1N.read_text()).replace("268435456  67108864", "268M  67108864")
    assert "268M  67108864" in text
    log = tmp_path / "h100_c_mb.txt"
    log.write_text(text)
    code = main(["calibrate", "--from-nccl-tests", str(log), "--out", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert ("h100_c_mb.txt line 16: its size read with a binary unit (K = 1024 bytes, as "
            "nccl-tests reads -b) is 281,018,368 bytes, but its count of float elements is "
            "268,435,456 bytes" in err and "(K = 1000?)" in err)
    # the same table in binary units reads as the bytes table, every size checked
    units = nccl_tests.parse_text(_with_units(_cpu_timed(H100_1N.read_text())), "u.txt")
    plain = nccl_tests.parse_text(_cpu_timed(H100_1N.read_text()), "b.txt")
    assert [(p.size_bytes, p.time_s) for p in units.points] == \
        [(p.size_bytes, p.time_s) for p in plain.points]
    assert not any("not checked against K = 1000" in n for n in units.notes)


def test_an_all_gather_size_in_decimal_units_is_refused_by_its_per_rank_count(tmp_path):
    """All-gather prints one rank's count: 16M = 4194304 bf16 x 2 B x 2 ranks. The -C excerpt
    in binary units reads; its first size rounded to decimal megabytes ('17M': 17,825,792 B
    in binary units) is 2.125 x the count's 8,388,608 bytes, no whole number of ranks."""
    cpu = _with_units(_cpu_timed(GATHER.read_text()))
    assert "16M  4194304" in cpu
    run = nccl_tests.parse_text(cpu, "all_gather_c.txt")
    assert [p.size_bytes for p in run.points][:2] == [16777216, 33554432]
    with pytest.raises(ScalesimError, match=r"is 17,825,792 bytes, but its count of bfloat16 "
                                            r"elements is 8,388,608 bytes \(x the ranks"):
        nccl_tests.parse_text(cpu.replace("16M  4194304", "17M  4194304"), "all_gather_c.txt")


def _counts_with_units(text: str) -> str:
    """The log with each row's count written in K (256 -> '0.25K'): no whole count to check."""
    out = []
    for line in text.splitlines():
        cells = line.split()
        if cells and (cells[0][0].isdigit()) and len(cells) > 2 and cells[1].isdigit():
            cells[1] = f"{int(cells[1]) / 1024:g}K"
            line = "  ".join(cells)
        out.append(line)
    return "\n".join(out) + "\n"


def test_sizes_with_a_unit_that_nothing_tells_from_k_1000_are_said_in_the_note():
    """Without a whole count, a -C table's sizes with a unit are read as K = 1024 unchecked:
    the note says how many and the most they would be off (8G: 2^33 / 8e9 = 1.074, 7.4 %). In
    a GPU-timed table, algbw x time tells them apart where its digits allow: 1K's in-place
    0.03 GB/s x 40.56 us allows 1,014-1,420 B (1,000 out), 2K's 0.05 x 41.29 allows 1,858-2,271
    and its out-of-place 0.05 x 43.36 1,951-2,385 B (2,000 in both: 2,048 / 2,000 = 2.4 %), 1G's
    116.87 x 9187.8 about 1.074e9 (1e9 out)."""
    cpu = nccl_tests.parse_text(_counts_with_units(_with_units(_cpu_timed(A100_2N.read_text()))),
                                "c.txt")
    (note,) = [n for n in cpu.notes if "printed with a unit" in n]
    assert note.startswith("c.txt: 24 size(s) printed with a unit, read in binary units")
    assert ("24 of them not checked against K = 1000 (no whole count of a known type beside "
            "them, and a -C table's times are CPU-side, so algbw x time cannot tell): up to "
            "7.4% too large" in note)
    keep = {"512", "1024", "2048", "1073741824"}
    text = "\n".join(x for x in A100_2N.read_text().splitlines()
                     if not x.split() or not x.split()[0].isdigit() or x.split()[0] in keep)
    run = nccl_tests.parse_text(_counts_with_units(_with_units(text)), "g.txt")
    (note,) = [n for n in run.notes if "printed with a unit" in n]
    assert ("3 size(s) printed with a unit" in note and "; 1 of them not checked against K = "
            "1000" in note and "printed to too few digits to tell): up to 2.4% too large" in note)


def test_rows_of_another_collective_than_the_header_names_are_refused(tmp_path, capsys):
    """Session 49: the one-server H100 all-reduce log under an all_gather_perf header was fitted
    as all-gather, busbw (n-1)/n x algbw instead of 2(n-1)/n x: 239.8 GB/s written for the
    479.3 the log measured (half, 8 ranks: 0.875 / 1.75). Its rows' busbw/algbw is 1.75
    (419.49 / 239.71 ... 470.73 / 268.99), and no all-gather's (n-1)/n reaches 1."""
    log = tmp_path / "mixed.txt"
    log.write_text("# Collective test starting: all_gather_perf\n" + H100_1N.read_text())
    out = tmp_path / "p.json"
    code = main(["calibrate", "--from-nccl-tests", str(log), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not out.exists()
    assert ("mixed.txt: its header says all_gather, but its rows' busbw/algbw is 1.75" in err
            and "the rows are all_reduce" in err)


def test_a_file_named_after_all_reduce_holding_gather_rows_is_refused(tmp_path):
    """The published all-gather excerpt (busbw/algbw 0.5 on 2 GPUs) as a table alone in a file
    named after all_reduce: the file name names the op, and all-reduce's 2(n-1)/n is never
    below 1, so the name is wrong, said as such (was: 'cannot tell how many ranks ran')."""
    rows = "\n".join(x for x in GATHER.read_text().splitlines() if "_perf" not in x)
    log = tmp_path / "all_reduce_2gpu.txt"
    log.write_text(rows + "\n")
    with pytest.raises(ScalesimError, match=r"all_reduce_2gpu.txt: its file name says all_reduce, "
                       r"but its rows' busbw/algbw is 0.5,.*reduce_scatter or all_gather"):
        nccl_tests.parse_file(log)


@pytest.mark.parametrize("name", ["all_reduce_1gpu.txt", "all_gather_1gpu.txt"])
def test_a_one_rank_log_is_refused_as_one_rank_not_as_another_collective(tmp_path, capsys, name):
    """On one rank nccl-tests' busbw factors are 0 for every collective (2(n-1)/n and (n-1)/n at
    n = 1), so its rows' busbw/algbw is 0: the named-collective check (session 49) read an
    all_reduce_perf run on one GPU as 'the rows are reduce_scatter or all_gather'; it is refused
    as before that check, as one GPU that measures no link. The gather file's 0 is refused the
    same way (0 is no all-reduce's, but it is every collective's on one rank)."""
    rows = "\n".join(f"  {s:>10}  {s // 4:>12}     float     sum      -1  {t:7.2f}  {s / t / 1e3:6.2f}"
                     f"    0.00      0  {t:7.2f}  {s / t / 1e3:6.2f}    0.00      0"
                     for s, t in ((1048576, 10.5), (1073741824, 1000.0)))
    log = tmp_path / name
    log.write_text("#  Rank  0 Group  0 Pid  12345 on      host device  0 [0x07] NVIDIA A100\n"
                   + "\n".join(TABLE.read_text().splitlines()[:3]) + "\n" + rows + "\n")
    code = main(["calibrate", "--from-nccl-tests", str(log), "--out", str(tmp_path / "p.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith(f"{name}: 1 rank: a collective on one GPU measures no link"), err


def test_inter_on_a_log_of_every_rank_on_one_host_is_refused(tmp_path, capsys):
    """Session 49: the one-server H100 log (8 ranks, all on 'host') given as inter= was split
    into 2 'servers' of 4 (``nodes`` is at least 2 under inter=): a new profile of 4 GPUs per
    server whose network was that server's NVLink (inter busbw 479.3 GB/s, alpha 59.9 us), said
    only as 'taken as inter_node as inter= says'. The table alone (no rank list) stays readable
    as inter=, as a pasted table's level is the user's to say."""
    out = tmp_path / "p.json"
    code = main(["calibrate", "--from-nccl-tests", f"inter={H100_1N}", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and not out.exists()
    assert "inter= says it ran across servers, but its header lists all 8 ranks on one host (host)" in err
    table = tmp_path / "table.txt"
    table.write_text("\n".join(x for x in H100_1N.read_text().splitlines() if "Rank" not in x))
    (run,) = nccl_tests.load_runs([f"inter={table}"])
    assert (run.level, run.nodes, run.ranks) == ("inter_node", 2, 8)
