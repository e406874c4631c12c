"""The help of the Goal tab's largest device count says the counts goal searches on the hardware
shown (``goal.device_grid``), where it said "powers of two below one server, then whole servers"
whatever the hardware: on a GB200 NVL72 (racks of 72 in trays of 4) goal searches 128 and 256
beside the whole racks 72, 144 and 216 (session 52)."""

from __future__ import annotations

from app_harness import open_app, preset_query
from scalesim.app.planner_page import goal_max_help

from scalesim.device_nouns import GPU_NOUNS, hardware_nouns
from scalesim.presets import HARDWARE

# 8 a server: 1, 2, 4 below it, then every whole server (8 apart); the largest last
DGX_COUNTS = "1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, ..., 1,024"
# racks of 72 in trays of 4: powers of two up to 64, then the whole racks 72, 144, 216 and the
# powers of two in whole trays past one rack, 128 and 256
GB200_COUNTS = "1, 2, 4, 8, 16, 32, 64, 72, 128, 144, 216, 256, ..., 1,024"


def test_the_help_lists_the_counts_goal_searches_on_dgx_and_gb200():
    dgx = goal_max_help(8, 8, 1024, GPU_NOUNS)
    assert dgx.startswith(f"How far the Goal tab searches: the device counts {DGX_COUNTS} on this "
                          "hardware (8 devices a server), up to this count")
    rack = goal_max_help(72, 4, 1024, hardware_nouns(HARDWARE["gb200-nvl72"]))
    assert f"the device counts {GB200_COUNTS} on this hardware (72 devices a rack)" in rack
    assert "powers of two" not in dgx + rack


def test_a_short_search_lists_every_count():
    assert "the device counts 1, 2, 4, 8, 16, 24 on this hardware" in goal_max_help(
        8, 8, 24, GPU_NOUNS)


def test_the_page_says_the_counts_of_its_hardware():
    gb200 = open_app(preset_query(hw="gb200-nvl72", wl="llama3-70b"))
    assert f"counts {GB200_COUNTS} on this hardware (72 devices a rack)" in (
        gb200.sidebar.number_input(key="k_gmax").help)
    dgx = open_app(preset_query(hw="dgx-h100", wl="llama3-70b", gmax=64))
    assert "counts 1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64 on this hardware (8 devices a server)" in (
        dgx.sidebar.number_input(key="k_gmax").help)
