"""predict's and plan's hardware line said 'intra 720 GB/s, inter 3456 GB/s busbw' on a GB200
NVL72 with no word of what each figure is: a whole rack's ring against one GPU's NVLink, the
rack's NICs together against one NIC. It now says both are the whole server's (rack's) bus
bandwidth and the NICs the inter figure is summed over, with each one's share
(``cmd_predict.hardware_line``, ``nics_words``)."""

from __future__ import annotations

import pytest

from scalesim import presets
from scalesim.cli.cmd_predict import hardware_line


@pytest.mark.parametrize(("name", "said"), [
    # 72 NICs of 400 Gb/s x 0.96 = 72 x 48 = 3456 GB/s
    ("gb200-nvl72", "GB200, 72 per rack; whole rack's busbw: intra 720 GB/s, inter 3456 GB/s "
                    "over its 72 NICs (48 each)"),
    ("dgx-h100", "H100-SXM5 80GB, 8 per server; whole server's busbw: intra 370 GB/s, "
                 "inter 384 GB/s over its 8 NICs (48 each)"),
    # 4 EDR NICs: 4 x 100 Gb/s x 0.96 = 48 GB/s, 12 each
    ("dgx1-v100", "Tesla V100-SXM2 16GB, 8 per server; whole server's busbw: intra 120 GB/s "
                  "(2 GPUs 20, 4 GPUs 80), inter 48 GB/s over its 4 NICs (12 each)"),
    ("a2-highgpu-8g", "A100-SXM4 40GB, 8 per server; whole server's busbw: intra 230 GB/s, "
                      "inter 6.8 GB/s over its NIC"),
])
def test_the_hardware_line_says_whose_busbw_and_over_which_nics(name, said):
    assert hardware_line(presets.get_hardware(name)) == f"hardware: {name} ({said})"


def test_a_link_without_a_nic_count_is_said_without_nics():
    """A calibrated or fitted inter level records no NICs: its figure alone."""
    hw = presets.get_hardware("dgx-h100")
    hw = hw.model_copy(update={"inter_node": hw.inter_node.model_copy(
        update={"nics_per_node": None, "busbw_GBps": 197.0})})
    assert hardware_line(hw).endswith("whole server's busbw: intra 370 GB/s, inter 197 GB/s)")
