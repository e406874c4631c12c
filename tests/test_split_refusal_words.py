"""predict's refusal of a split that divides no count of the list, which the app's error box
says too since session 44 (``layout_predict.split_devices``): no 'or a tp x pp that divides 1'
(their gcd of 1: no split at all), the counts cut past six as ``figures.count_list`` writes
them, and the multiples nearest the smallest and the largest count, not of every count.

By hand: pp 3 on 1, 2, 4, ..., 64 on servers of 8: the multiples of 3 nearest 1 that run are 3
(part of a server), nearest 64 are 48 and 72 (whole servers: multiples of lcm(3, 8) = 24; 63 and
66 fill no whole servers; session 48, ``layout_predict.runnable_multiples``); gcd(1, ..., 64) = 1.
tp x pp x cp 16 on 8 and 24: multiples 16 and 32, gcd 8. (tp 3 is refused before any count: it
divides no server of 8, ``layout.tp_server_refusal``.)"""

from __future__ import annotations

import pytest
from cli_harness import run_cli
from scalesim.app.plan import build_scenario
from scalesim.app.state import default_state, preset_profile

from scalesim.errors import ScalesimError

POWERS = "1,2,4,8,16,32,64"
LINE = ("devices 1, 2, 4, 8, 16, ... and 64 (7 in all) are not divisible by tp x pp = 3; give "
        "device counts that are multiples of it (3, 48 or 72)")


def test_a_split_no_count_runs_offers_no_divisor_of_one_and_cuts_the_lists(capsys):
    # before: '... 16, 32 and 64 are not divisible by tp x pp = 3; give device counts that are
    # multiples of it (3 or 6 or 9 or 15 or 18 or 30 or 33 or 63 or 66), or a tp x pp that
    # divides 1'
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--workload",
                                      "llama3-8b", "--pp", "3", "--devices", POWERS])
    assert (code, out, err) == (2, "", f"scalesim predict: error: {LINE}\n")


def test_the_app_says_the_same_line_on_its_grid():
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b", "pp": 3,
                                               "dmax": 64})
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, preset_profile(state))
    assert str(refused.value) == LINE


def test_a_common_divisor_of_two_or_more_is_still_offered(capsys):
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--tp", "2", "--pp",
                                    "2", "--cp", "4", "--devices", "8,24"])
    assert code == 2 and err.endswith("multiples of it (16 or 32), or a tp x pp x cp that "
                                      "divides 8\n")


# a split product of four digits or more is written as the counts beside it are, thousands
# separated (``figures.whole``): was 'tp x pp = 400000 ...' beside '(400,000)' (session 44)
BIG_LINE = ("devices 2,048 and 4,096 are not divisible by tp x pp = 8,000; give device counts "
            "that are multiples of it (8,000), or a tp x pp that divides 2,048")


def test_a_large_split_product_is_written_as_the_counts_beside_it(capsys):
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--workload",
                                      "llama3-8b", "--tp", "8", "--pp", "1000", "--devices",
                                      "2048,4096"])
    assert (code, out, err) == (2, "", f"scalesim predict: error: {BIG_LINE}\n")
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h100", "--workload",
                                      "llama3-8b", "--tp", "4", "--pp", "100000", "--devices",
                                      "8,16"])
    assert code == 2 and "tp x pp = 400,000; " in err and "(400,000)" in err, err
    state = default_state().model_copy(update={"hw": "dgx-h100", "wl": "llama3-8b", "tp": 8,
                                               "pp": 1000, "grid": "list",
                                               "dlist": "2048,4096"})
    with pytest.raises(ScalesimError) as refused:  # the app's box: the same line
        build_scenario(state, preset_profile(state))
    assert str(refused.value) == BIG_LINE


def test_a_count_a_large_split_leaves_out_is_noted_with_the_product_separated():
    from scalesim.counts_left_out import split_left_out

    left = split_left_out(3072, [2048, 6144])  # 2,048 left out; gcd(2048, 6144) = 2,048
    assert left.counts == (2048,)
    assert left.note == ("tp x pp = 3,072 does not divide the devices: the row on 2,048 devices "
                         "is left out; a tp x pp that divides 2,048 runs every count, or give "
                         "counts that are multiples of 3,072")
