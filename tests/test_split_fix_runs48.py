"""Session 48: a split that no plotted count divides is refused with a fix that runs.

Before, tp 3 on servers of 8 (a link or the Tensor parallel control at 3 on llama3-8b, dgx-h100)
said 'give device counts that are multiples of it (3, 63 or 66)': 63 and 66 fill no whole
servers, and no count runs tp 3 at all (it divides no server of 8), so each suggestion was
refused in turn. tp and the server are one rule at every count (``layout.tp_server_refusal``);
the multiples offered are counts that run on whole servers (``layout_predict.runnable_multiples``).
"""

from __future__ import annotations

import re

import pytest
from app_harness import cannot_predict_box, open_app
from cli_harness import run_cli
from scalesim.app.state import LINK_VERSION

from scalesim.layout_predict import runnable_multiples

LLAMA8 = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]
POWERS = "1,2,4,8,16,32,64"
TP3 = "tp 3 does not divide the 8 GPUs per server; use tp 1, 2, 4 or 8, or 6 GPUs per server"


def _offered_counts(line: str) -> list[int]:
    """The device counts a split refusal offers: '... multiples of it (3, 48 or 72)'."""
    (inside,) = re.findall(r"multiples of it \(([^)]*)\)", line)
    return [int(x.replace(",", "")) for x in re.split(r", | or ", inside)]


def test_multiples_that_run_on_whole_servers_by_hand():
    assert runnable_multiples(64, 3, 8) == (48, 72)  # multiples of lcm(3, 8) = 24
    assert runnable_multiples(1, 3, 8) == (0, 3)  # part of one server
    assert runnable_multiples(7, 3, 8) == (6, 24)
    assert runnable_multiples(16, 16, 8) == (16, 16)
    assert runnable_multiples(64, 3) == (63, 66)  # no unit: any multiple


@pytest.mark.parametrize("split", [["--tp", "3"], ["--tp", "3", "--pp", "2"]])
def test_a_tp_that_divides_no_server_is_refused_before_the_counts(capsys, split):
    code, out, err = run_cli(capsys, ["predict", *LLAMA8, *split, "--devices", POWERS])
    assert (code, out) == (2, "")
    assert err == f"scalesim predict: error: {TP3}\n"
    for tp in ("2", "4", "8"):  # each tp it offers runs at a count of the list
        code, _, err = run_cli(capsys, ["predict", *LLAMA8, "--tp", tp, "--devices", "64"])
        assert code == 0, err
    # or 6 GPUs per server: runs where the heads split 3 ways (gpt-1.7b's 24; llama3-8b's 32
    # then refuse tp 3 by their own rule, which no server size changes)
    gpt = ["--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--tp", "3"]
    code, _, err = run_cli(capsys, ["predict", *gpt, "--devices", POWERS])
    assert err == f"scalesim predict: error: {TP3}\n"
    code, _, err = run_cli(capsys, ["predict", *gpt, "--gpus-per-node", "6", "--devices", "6"])
    assert code == 0, err


@pytest.mark.parametrize("split, extra", [(["--pp", "3"], []), (["--pp", "3"], ["--tp", "2"]),
                                          (["--cp", "3"], ["--seq-len", "8196"])])
def test_each_count_a_split_refusal_offers_runs(capsys, split, extra):
    code, _, err = run_cli(capsys, ["predict", *LLAMA8, *split, *extra, "--devices", POWERS])
    assert code == 2
    offered = _offered_counts(err)
    assert offered and all(n not in (63, 66, 126, 130) for n in offered), err
    for n in offered:
        code, _, err = run_cli(capsys, ["predict", *LLAMA8, *split, *extra, "--devices", str(n)])
        assert code == 0, (n, err)


def test_goal_keeping_the_layout_says_the_same_line(capsys):
    code, out, err = run_cli(capsys, ["goal", *LLAMA8, "--tp", "3", "--layout", "given",
                                      "--train-samples", "1e9", "--deadline", "3d",
                                      "--budget", "50000"])
    assert (code, out, err) == (2, "", f"scalesim goal: error: {TP3}\n")


def test_the_apps_box_names_the_controls_of_the_fix():
    link = {"v": str(LINK_VERSION), "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "64"}
    box = cannot_predict_box(open_app({**link, "tp": "3"}))
    # the page names tp by its control in the line, so the controls list adds the other only
    assert box.startswith("Cannot predict this scenario: " + TP3.replace("tp ", "Tensor parallel ")
                          + ".")
    assert "Control to change: Devices per server." in box
    box = cannot_predict_box(open_app({**link, "pp": "3"}))
    assert "multiples of it (3, 48 or 72)." in box
