"""Session 41: a link's line rate typed for a bus bandwidth ('--inter-busbw 100Gbps', as NICs are
sold and the presets name them) was refused with "give the number alone, in GB/s", which a user
answers with 100: 100 GB/s, eight times the line rate and about 15x the 6.8 GB/s the presets take
for one 100 Gb/s Ethernet NIC. The refusal now gives the bytes and the presets' bus bandwidths.
Hand values: 100 / 8 = 12.5 GB/s; x 0.544 (NCCL over TCP sockets) = 6.8; x 0.96 (InfiniBand,
RoCE) = 12; 400 Gb/s: 50, 27.2, 48."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

LEAD = "is not a number; give the bus bandwidth alone, in GB/s: "


@pytest.mark.parametrize("typed, words", [
    ("100Gbps", "100 Gb/s is a line rate in bits, 12.5 GB/s, and a link's bus bandwidth is "
                "below it (one NIC of 100 Gb/s: 6.8 GB/s over TCP sockets, 12 GB/s over "
                "InfiniBand or RoCE"),
    ("100 Gb/s", "100 Gb/s is a line rate in bits, 12.5 GB/s,"),
    ("400gbps", "400 Gb/s is a line rate in bits, 50 GB/s, and a link's bus bandwidth is below "
                "it (one NIC of 400 Gb/s: 27.2 GB/s over TCP sockets, 48 GB/s over"),
    ("25Gbit/s", "25 Gb/s is a line rate in bits, 3.125 GB/s"),
])
def test_a_line_rate_in_gigabits_gets_its_bytes_and_the_presets_bus_bandwidth(capsys, typed,
                                                                              words):
    code, out, err = run_cli(capsys, ["predict", "--inter-busbw", typed])
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"'{typed}' {LEAD}{words}" in err


def test_the_same_hint_on_a_sweep_axis_and_calibrate(capsys):
    for argv in (["sweep", "--inter-busbw-values", "100Gbps,200"],
                 ["calibrate", "--inter-busbw", "100Gbps", "--out", "never-written.json"]):
        code, _, err = run_cli(capsys, argv)
        assert code == 2 and f"'100Gbps' {LEAD}100 Gb/s is a line rate in bits, 12.5 GB/s" in err


def test_bytes_a_second_keep_their_number(capsys):
    """'GB/s' and 'GBps' are the flag's own unit: the number is offered (before, 'GBps' got
    no number)."""
    for typed in ("100GB/s", "100GBps"):
        code, _, err = run_cli(capsys, ["predict", "--inter-busbw", typed])
        assert code == 2 and f"'{typed}' is not a number; give the number alone, in GB/s: 100 (" in err
