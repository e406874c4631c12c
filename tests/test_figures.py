"""One format for every link figure a command prints (session 17): ``figures.sig3``,
``figures.link_GBps`` and ``figures.latency_us``, three significant digits, whole numbers from
100, never the six digits of a fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_harness import run_cli

from scalesim.figures import either, latency_us, link_GBps, number, sig3
from scalesim.profiles import default_profile

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("value, text", [
    (197.154, "197"), (237.666, "238"), (1536.4, "1536"), (12.0, "12"), (11.9814, "12"),
    (6.77, "6.77"), (0.65246, "0.652"), (0.98993, "0.99"), (99.96, "100"), (0.001, "0.001")])
def test_three_significant_digits_whole_from_100(value, text):
    assert sig3(value) == text
    assert link_GBps(value) == f"{text} GB/s"


def test_a_latency_is_in_microseconds_at_three_digits():
    assert latency_us(8.8912e-6) == "8.89 us"
    assert latency_us(0.0010072740410229145) == "1007 us"  # a gloo fit: was 1007.27 us
    assert latency_us(2e-6) == "2 us"


def test_the_hardware_line_prints_a_fitted_link_as_the_log_reported_it(tmp_path, capsys):
    """`calibrate --from-nccl-tests h100_2node.txt`, then `predict --profile`: the hardware line
    said `inter 197.154 GB/s busbw` (`:g` of the fit; the log's report said 197.2), and the
    calibrate line `busbw 197.2 GB/s` (`.4g`): one figure at two precisions. Now both 197."""
    log = FIXTURES / "nccl_tests" / "h100_2node_16gpu_all_reduce.txt"
    out_path = tmp_path / "p.json"
    code, out, err = run_cli(capsys, ["calibrate", "--from-nccl-tests", str(log),
                                      "--out", str(out_path)])
    assert code == 0, err
    # the ring's 8.89 us per step, 2 servers x 8 (dgx-h100's intra hops at 2 us):
    # 15 x 8.89 - 14 x 2 = 105 us per server-boundary hop (collectives.ring_inter_latency_s)
    assert "inter_node: busbw 197 GB/s, alpha 105 us per server-boundary hop" in out + err
    code, out, err = run_cli(capsys, ["predict", "--profile", str(out_path), "--devices", "16"])
    assert code == 0, err
    # a measured link: no NIC count to sum over (``cmd_predict.nics_words``)
    assert "whole server's busbw: intra 370 GB/s, inter 197 GB/s)" in out
    assert "197.154" not in out


def test_a_cpu_calibrations_slow_link_keeps_three_digits():
    """A CPU calibration's intra link (0.65246 GB/s) was `intra 0.65246 GB/s`; the partial-server
    words of predict and the whole-server line use the same three digits."""
    from scalesim.cli.cmd_predict import hardware_line

    profile = default_profile()
    hw = profile.hardware
    hw = hw.model_copy(update={
        "intra_node": hw.intra_node.model_copy(update={"busbw_GBps": 0.65246}),
        "inter_node": hw.inter_node.model_copy(update={"busbw_GBps": 6.8123})})
    line = hardware_line(hw)
    assert "intra 0.652 GB/s, inter 6.81 GB/s over its NIC)" in line


@pytest.mark.parametrize("value, text", [
    (999999.4, "999999"), (1.4e7, "1.4e+07"), (1e300, "1e+300"), (-1.234e9, "-1.23e+09"),
    (-150.4, "-150"), (0.0, "0"), (5e-324, "4.94e-324"), (float("nan"), "n/a"),
    (float("inf"), "n/a"), (float("-inf"), "n/a")])
def test_huge_and_non_numbers_never_print_hundreds_of_digits_or_nan(value, text):
    """A fitted busbw at its bound (diagnose: gradient bytes over a microsecond, ~1e7 GB/s) was
    printed whole, and 1e300 as 301 digits; NaN printed 'nan'."""
    assert sig3(value) == text
    assert "nan" not in link_GBps(value) and len(link_GBps(value)) < 16


@pytest.mark.parametrize("value, text", [
    (1e6, "1,000,000"), (16777216, "16,777,216"), (2**53, "9,007,199,254,740,992"),
    (1e20, "1e20"), (1e-9, "1e-9"), (5e-324, "5e-324"), (100000.5, "100,000.5"),
    (-1234.25, "-1,234.25"), (-0.5, "-0.5"), (-0.0, "0"), (0.001, "0.001"),
    (float("nan"), "nan"), (float("-inf"), "-inf")])
def test_a_number_in_a_sentence_is_exact_and_separated_never_1e_plus(value, text):
    """``figures.number`` writes bounds and the values they refuse (session 19): not ':g'
    ('1.67772e+07' for 2**24) nor Python's float text ('1e+20', '1000000.0')."""
    assert number(value) == text


def test_either_lists_alternatives_once_each_with_a_semicolon_between_thousands():
    """``figures.either``: the alternatives of a refusal naming every count (session 43)."""
    assert either([8]) == "8"
    assert either([1, 2, 2, 4]) == "1, 2 or 4"
    assert either([67108864, 33554432, 512]) == "67,108,864; 33,554,432 or 512"
