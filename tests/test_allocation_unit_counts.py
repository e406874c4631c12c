"""Every command reads the allocation unit's count rule (docs/reliability.md, session 44).

Session 44 let ``plan`` and ``validate`` run GB200 NVL72 jobs of 128 and 256 GPUs (4-GPU trays
of a 72-GPU NVLink rack); ``predict``, ``sweep``, ``goal`` and the app still refused them ('128
devices do not fill whole servers of 72'). They now read the one rule
(``layout.runs_on_count`` with ``Hardware.allocation_for``, ``predict.job_unit``), refuse 130 in
``layout.count_problem``'s words naming the tray, and on every other preset (the server is the
unit) give what they gave before.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from scalesim.device_nouns import hardware_nouns
from scalesim.errors import in_words_of
from scalesim.goal import device_grid
from scalesim.layout import count_problem
from scalesim.presets import HARDWARE

GB200 = HARDWARE["gb200-nvl72"]
# the one refusal of 130 GPUs on 72-GPU racks of 4-GPU trays, every command's
# (the rack's nouns: its server is the NVLink rack, session 52)
REFUSAL_130 = str(count_problem(130, 72, 4, hardware_nouns(GB200)))
# ... as the page says it (session 48: its template, without the hardware file's
# devices_per_allocation, which the page takes no file of)
PAGE_REFUSAL_130 = str(in_words_of(count_problem(130, 72, 4, hardware_nouns(GB200)), str))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "scalesim.cli.main", *args],
                          capture_output=True, text=True)


def test_the_refusal_names_the_tray_and_a_count_that_runs():
    assert REFUSAL_130.startswith("130 devices do not fill whole allocation units of 4 GPUs")
    assert "e.g. 128 or 132" in REFUSAL_130
    assert "72 to a rack)" in REFUSAL_130  # was '72 to a server' before session 52
    assert REFUSAL_130.replace("the hardware's devices_per_allocation: ", "") == PAGE_REFUSAL_130


def test_predict_runs_128_and_256_gb200_gpus_data_parallel_and_split():
    out = _cli("predict", "--workload", "gpt-7b", "--hardware", "gb200-nvl72", "--devices",
               "128,256", "--strategy", "zero1", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["devices"], r["nodes"]) for r in rows] == [(128, 2), (256, 4)]  # 72 + 56 ...
    split = _cli("predict", "--workload", "llama3-70b", "--hardware", "gb200-nvl72",
                 "--devices", "128,256", "--tp", "4", "--pp", "4", "--json")
    assert split.returncode == 0, split.stderr
    assert [r["dp"] for r in json.loads(split.stdout)] == [8, 16]


@pytest.mark.parametrize("command", [
    ("predict", "--workload", "gpt-7b", "--devices", "128,130"),
    ("predict", "--workload", "llama3-70b", "--devices", "130", "--tp", "2"),
    ("sweep", "--workload", "gpt-7b", "--devices", "128,130", "--strategy-values", "zero1"),
    ("sweep", "--workload", "llama3-70b", "--devices", "130", "--tp-values", "2"),
    ("plan", "--workload", "llama3-70b", "--devices", "130", "--global-batch", "260"),
])
def test_130_is_refused_in_the_same_words_by_every_command(command):
    out = _cli(*command, "--hardware", "gb200-nvl72")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"scalesim {command[0]}: error: {REFUSAL_130}"]


def test_sweep_runs_128_and_256_gb200_gpus():
    out = _cli("sweep", "--workload", "llama3-70b", "--hardware", "gb200-nvl72", "--devices",
               "128,256", "--tp-values", "4", "--pp-values", "4")
    assert out.returncode == 0, out.stderr
    rows = [line.split(",") for line in out.stdout.splitlines()]
    devices = rows[0].index("devices")
    assert sorted({int(r[devices]) for r in rows[1:]}) == [128, 256]


def test_goal_searches_128_and_256_gb200_gpus_beside_whole_racks():
    assert device_grid(72, 256, 4) == [1, 2, 4, 8, 16, 32, 64, 72, 128, 144, 216, 256]
    assert device_grid(72, 256) == [1, 2, 4, 8, 16, 32, 64, 72, 144, 216]  # the rack the unit
    out = _cli("goal", "--workload", "gpt-7b", "--hardware", "gb200-nvl72", "--price", "10",
               "--max-devices", "256", "--deadline", "30d", "--budget", "1e9", "--json")
    assert out.returncode == 0, out.stderr
    counts = {p["devices"] for p in json.loads(out.stdout)["front"]}
    assert 256 in counts  # the soonest: 4 racks, 72 + 72 + 72 + 40 GPUs


@pytest.mark.parametrize("g", [1, 2, 4, 6, 8, 16, 72])
def test_goal_grid_where_the_server_is_the_unit_is_as_before(g):
    """The old grid: powers of two below one server, then the whole servers."""
    for top in (1, 5, 8, 64, 100, 1000, 5000, 70000):
        most = top // g
        servers = set(range(1, min(most, 256) + 1))
        n = 256
        while n < most:
            n = min(n + n // 256, most)
            servers.add(n)
        old = sorted({2**i for i in range(20) if 2**i < g and 2**i <= top}
                     | {n * g for n in servers}) or [1]
        assert device_grid(g, top) == old == device_grid(g, top, g)


def _app_scenario(hw, dlist, **update):
    from scalesim.app.plan import build_scenario
    from scalesim.app.state import default_state, preset_profile

    state = default_state().model_copy(update={"hw": hw, "wl": "gpt-7b", "grid": "list",
                                               "dlist": dlist, "dpn": None, **update})
    profile = preset_profile(state)
    return (profile, *build_scenario(state, profile))


def test_app_runs_128_and_256_gb200_gpus_and_refuses_130_in_predicts_words():
    from scalesim.predict import predict

    profile, scenario, notes = _app_scenario("gb200-nvl72", "72,128,130,256")
    assert scenario.devices == [72, 128, 256]  # was [72]: 128 and 256 left out
    assert f"left out 130: {PAGE_REFUSAL_130}" in notes
    assert [p.devices for p in predict(profile, scenario)] == [72, 128, 256]


def test_app_where_the_server_is_the_unit_says_what_it_said():
    _, scenario, notes = _app_scenario("dgx-h100", "8,12,16")
    assert scenario.devices == [8, 16]
    assert ("left out 12: above 8 devices a count must fill whole servers (a multiple of 8)"
            in notes)


def test_app_page_plots_128_and_256_gb200_gpus():
    """The page itself (AppTest) at a share link of 64, 128, 130 and 256 GB200 GPUs: it plots
    64, 128 and 256 (its focus offers them) and says why 130 is left out in predict's words."""
    from app_harness import open_app
    from scalesim.app.state import default_state, encode_query, preset_profile

    state = default_state().model_copy(update={"hw": "gb200-nvl72", "wl": "gpt-7b",
                                               "grid": "list", "dlist": "64,128,130,256",
                                               "dpn": None, "strat": "zero1"})
    at = open_app(encode_query(state, preset_profile(state)))
    assert at.sidebar.selectbox(key="k_focus").options == ["auto (the knee)", "64", "128", "256"]
    said = [str(m.value).replace("\\_", "_") for m in at.info]
    # a sentence, as the page's other notes (was 'left out 130: ...' with no full stop before
    # session 49)
    assert f"Left out 130: {PAGE_REFUSAL_130}." in said


def test_predict_with_gpus_per_node_takes_whole_trays_of_the_gpus_used():
    """--gpus-per-node 64 of a 72-GPU rack (Slurm --segment=16 trays): the unit stays 4."""
    assert GB200.allocation_for(64) == 4 and GB200.allocation_for(None) == 4
    assert HARDWARE["dgx-h100"].allocation_for(4) == 4  # the server as used, the old rule
    out = _cli("predict", "--workload", "gpt-7b", "--hardware", "gb200-nvl72", "--devices",
               "128,192", "--gpus-per-node", "64", "--strategy", "zero1", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["nodes"] for r in json.loads(out.stdout)] == [2, 3]
    assert np.all(np.array([128, 192]) % GB200.allocation_for(64) == 0)
