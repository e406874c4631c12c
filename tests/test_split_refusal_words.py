"""predict's refusal of a split that divides no count of the list, which the app's error box
says too since session 44 (``layout_predict.split_devices``): no 'or a tp x pp that divides 1'
(their gcd of 1: no split at all), the counts cut past six as ``figures.count_list`` writes
them, and the multiples nearest the smallest and the largest count, not of every count.

By hand: tp 3 on 1, 2, 4, ..., 64: the multiples of 3 nearest 1 are 3, nearest 64 are 63 and
66; gcd(1, ..., 64) = 1. tp x pp x cp 16 on 8 and 24: multiples 16 and 32, gcd 8."""

from __future__ import annotations

import pytest
from cli_harness import run_cli
from scalesim.app.plan import build_scenario
from scalesim.app.state import default_state, preset_profile

from scalesim.errors import ScalesimError

POWERS = "1,2,4,8,16,32,64"
LINE = ("devices 1, 2, 4, 8, 16, ... and 64 (7 in all) are not divisible by tp x pp = 3; give "
        "device counts that are multiples of it (3, 63 or 66)")


def test_a_split_no_count_runs_offers_no_divisor_of_one_and_cuts_the_lists(capsys):
    # before: '... 16, 32 and 64 are not divisible by tp x pp = 3; give device counts that are
    # multiples of it (3 or 6 or 9 or 15 or 18 or 30 or 33 or 63 or 66), or a tp x pp that
    # divides 1'
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--workload",
                                      "llama3-8b", "--tp", "3", "--devices", POWERS])
    assert (code, out, err) == (2, "", f"scalesim predict: error: {LINE}\n")


def test_the_app_says_the_same_line_on_its_grid():
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b", "tp": 3,
                                               "dmax": 64})
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, preset_profile(state))
    assert str(refused.value) == LINE


def test_a_common_divisor_of_two_or_more_is_still_offered(capsys):
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--tp", "2", "--pp",
                                    "2", "--cp", "4", "--devices", "8,24"])
    assert code == 2 and err.endswith("multiples of it (16 or 32), or a tp x pp x cp that "
                                      "divides 8\n")
