"""Diagnose names the inter- / intra-server ratio only where the runs pin it (session 23).

Before, the inter-server evidence printed the ratio of the two fitted transfer times whatever
their uncertainty: NVSwitch servers hide the intra-server exchange behind backward, the runs
cannot show it (+-1,279 % on the seed's inter-server case), and the line said "29.9x slower".
"""

from __future__ import annotations

import re

import diagnose_cases as cases
import pytest

from scalesim.diagnosis import RATIO_PINNED_FACTOR
from scalesim.diagnosis_text import render_text
from scalesim.runs import runs_from_records
from scalesim.runs_diagnosis import diagnose_runs
from scalesim.schemas import Scenario


def _link_line(rows, params=None) -> str:
    text = render_text(diagnose_runs(runs_from_records(rows, "runs"), params=params))
    lines = [line for line in text.splitlines() if "gradient transfer" in line and "- fitted" in line]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("params", [None, 25.6e6])
def test_a_ratio_the_runs_do_not_pin_is_not_printed(params):
    line = _link_line(cases.inter_server(), params)
    assert "slower than" not in line
    assert "do not pin the ratio" in line
    assert f"wider than {RATIO_PINNED_FACTOR:g}x" in line


def test_a_pinned_ratio_comes_with_its_band_and_the_band_holds_the_links_ratio():
    # 8 PCIe 4.0 GPUs a server, one 100 Gb/s Ethernet NIC: busbw 25.2 and 6.8 GB/s (the preset)
    profile = cases._profile("pcie-8gpu-100gbe", "bert-large")
    rows = cases._rows(profile, Scenario(devices=[1, 2, 4, 8, 16, 32], micro_batch=8))
    line = _link_line(rows)
    found = re.search(r"([\d.]+)x slower than intra-server \(95%: ([\d.]+)-([\d.]+)x", line)
    assert found, line
    ratio, low, high = (float(g) for g in found.groups())
    assert low < ratio < high and high / low <= RATIO_PINNED_FACTOR**2
    links = profile.hardware.intra_node.busbw_GBps / profile.hardware.inter_node.busbw_GBps
    assert low <= links <= high
