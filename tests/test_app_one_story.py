"""Session 39: the planner tells one story: what its grid, headline, tables and charts show
agree with each other and with the CLI, in the states where they did not."""

from __future__ import annotations

import re

from scalesim.app.charts import chart_text
from scalesim.app.plan import build_scenario, device_counts, make_plan, story
from scalesim.app.state import decode_query, default_state, preset_profile


def test_a_thinned_server_grid_keeps_the_counts_a_model_split_runs():
    # 16,384 devices of 8 per server: 2,048 servers, more than a curve's 256 points. Thinned
    # from the first server (1, 9, 17 ... servers) no count but the largest was a multiple of
    # tp 8 x pp 4 = 32, so the curve was one point ("no knee: there is only one"). Now a
    # point every 8 servers (2,048 / 256), 64 devices, a multiple of 32: 64, 128 ... 16,384.
    state = default_state().model_copy(update={
        "hw": "dgx-h100", "wl": "gpt-7.5b", "grid": "server", "dmax": 16384, "tp": 8, "pp": 4})
    scenario, notes = build_scenario(state, preset_profile(state))
    assert scenario.devices == list(range(64, 16384 + 1, 64))
    assert notes[0] == ("every server: 2,048 servers thinned to one point every 8 servers up to "
                        "16,384 devices, the first and the largest kept (260 points)")
    assert ("Tensor parallel 8 x Pipeline stages 4 = 32 does not divide the devices: the rows on "
            "1, 2, 4 and 8 devices are left out; give counts that are multiples of 32"
            ) in notes  # "tp x pp = 32 ..." before session 49: notation no control shows


def test_the_thinned_stride_is_a_multiple_of_the_servers_whole_replicas_fill():
    # 10,000 devices: 1,250 servers; 1,250 / 256 -> 5, a power of two: 8 servers; tp 8 x pp 3
    # = 24 devices fill whole replicas every 3 servers: lcm(8, 3) = 24 servers, 192 devices
    counts, notes = device_counts(default_state().model_copy(update={
        "grid": "server", "dmax": 10000, "tp": 8, "pp": 3}), 8)
    assert counts == [1, 2, 4, 8, *range(192, 9984 + 1, 192), 10000]
    assert "one point every 24 servers" in notes[0] and "(57 points)" in notes[0]
    # a data-parallel grid that fits on one curve is every server, as before
    assert device_counts(default_state().model_copy(update={"grid": "server", "dmax": 40}),
                         8)[0] == [1, 2, 4, 8, 16, 24, 32, 40]


def test_the_efficiency_chart_in_words_names_the_knee_the_story_tells_of():
    # gpt-7b, ZeRO-3 on a2-highgpu-8g, every server to 256: 35 counts, 1 and 2 do not fit,
    # 33 run (4, 8, 16, 24 ... 256). Past 12 the words listed the first, middle and last only,
    # "4 devices 105%, 128 devices 20%, 256 devices 19%": no drop, while the story says
    # "grows almost linearly to 8 devices (106% efficiency), then drops to 21% at 16". Now
    # the knee's two counts and the focus (16) are named too, in device order.
    state, profile, messages = decode_query({"v": "13", "wl": "gpt-7b", "strat": "zero3",
                                             "dmax": "256", "grid": "server"})
    assert messages == []
    plan = make_plan(profile, state)
    assert (plan.knee.devices_before, plan.knee.devices_after, plan.focus.devices) == (8, 16, 16)
    words = chart_text(plan, "efficiency")
    listed = [int(n) for n in re.findall(r"(\d+) devices \d+%", words)]
    assert listed == [4, 8, 16, 128, 256]  # first, knee (8 -> 16, also the focus), middle, last
    eff = {r.devices: f"{r.efficiency:.0%}" for r in plan.rows}
    assert f"8 devices {eff[8]}, 16 devices {eff[16]}" in words
    assert f"to 8 devices ({eff[8]} efficiency), then drops to {eff[16]} at 16" in story(plan)
