"""Which device counts of a list run, and the refusal where none runs: one function
(``layout_predict.counts_that_run``, rules in ``COUNT_RULES`` order) for predict, sweep and the
app (session 44), and decide (session 50: it stopped at a count the others leave out; goal takes
no --devices and searches only the counts its layout runs). Before, predict's refusal came from
its own checks, sweep's from a copy of their order (``refuse_counts``), and the app wrote its
own ('no device count is a multiple of ...', 'strong scaling: global batch ... does not split
evenly ...'), which named another rule than predict where two failed at once.

By hand: global batch 64 over 24, 32, 48 devices: 64/24 and 64/48 are not whole, 64/32 = 2 is;
shard group 12 is below dp 32 and does not divide it. So the batch leaves out 24 and 48 and the
group 32: none runs; the batch's rule comes first, so its line, then 32 with the group's reason.
tp 8 x pp 2 = 16 does not divide 8 or 24; at 32 (dp 2) global batch 3 is odd."""

from __future__ import annotations

import json

import pytest
from cli_harness import run_cli
from scalesim.app.named_controls import control_namer
from scalesim.app.plan import build_scenario
from scalesim.app.state import default_state, preset_profile

from scalesim.counts_left_out import flag_of
from scalesim.device_nouns import nouns_for
from scalesim.errors import ScalesimError

FIELDS = ("devices", "global_batch", "accumulation", "shard_group")

# (predict and sweep flags, the app's controls for the same what-if)
NONE_RUN = {
    "batch, then shard group": (
        ["--devices", "24,32,48", "--global-batch", "64", "--strategy", "zero3",
         "--shard-group", "12"],
        {"grid": "list", "dlist": "24,32,48", "mode": "strong", "gb": 64, "strat": "zero3",
         "sg": 12}),
    "split, then batch": (
        ["--workload", "llama3-8b", "--tp", "8", "--pp", "2", "--devices", "8,24,32",
         "--global-batch", "3"],
        {"wl": "llama3-8b", "tp": 8, "pp": 2, "grid": "list", "dlist": "8,24,32", "mode": "strong",
         "gb": 3}),
    "split alone": (
        ["--workload", "llama3-8b", "--tp", "3", "--devices", "1,2,4,8,16"],
        {"wl": "llama3-8b", "tp": 3, "grid": "list", "dlist": "1,2,4,8,16"}),
    "micro-batch past the table": (
        ["--devices", "1,2", "--global-batch", str(2**26)],
        {"grid": "list", "dlist": "1,2", "mode": "strong", "gb": 2**26}),
}


def _app(update: dict):
    state = default_state().model_copy(update=update)
    profile = preset_profile(state)
    return state, profile, build_scenario(state, profile)


def _in_flags(text: str, state, profile) -> str:
    """The app's words with each control written as the CLI's flag (``counts_left_out.flag_of``)."""
    named = control_namer(state, nouns_for(profile.hardware.device_name))
    for field in FIELDS:
        text = text.replace(named(field), flag_of(field))
    return text


@pytest.mark.parametrize("case", list(NONE_RUN))
def test_a_list_none_runs_is_refused_in_one_line_by_every_command_and_the_app(capsys, case):
    args, controls = NONE_RUN[case]
    lines = []
    for command in ("predict", "sweep", "decide"):
        code, out, err = run_cli(capsys, [command, *args])
        assert code == 2 and out == "" and err.count("\n") == 1, err
        lines.append(err.removeprefix(f"scalesim {command}: error: ").rstrip("\n"))
    state = default_state().model_copy(update=controls)
    profile = preset_profile(state)
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, profile)
    lines.append(_in_flags(str(refused.value), state, profile))
    assert len(set(lines)) == 1, lines
    assert "\n" not in lines[0] and "--" not in str(refused.value)


def test_two_rules_at_once_give_the_same_first_refusal_and_name_every_count(capsys):
    args, controls = NONE_RUN["batch, then shard group"]
    code, _, err = run_cli(capsys, ["predict", *args])
    assert code == 2
    # the batch's rule first (COUNT_RULES), then 32 with the shard group's reason
    assert err == ("scalesim predict: error: global batch 64 does not split evenly over 24 and "
                   "48 devices x 1 accumulation steps; pick a global batch divisible by devices x "
                   "accumulation at every count asked (24, 32 and 48): 96; at 32 devices, shard "
                   "group 12 does not divide dp 32\n")
    state = default_state().model_copy(update=controls)
    with pytest.raises(ScalesimError) as refused:
        build_scenario(state, preset_profile(state))
    # before: the app dropped 24 and 48 itself and predict refused the group at 32 alone
    assert str(refused.value) == err.removeprefix("scalesim predict: error: ").rstrip("\n")
    assert refused.value.knobs == ("global_batch", "accumulation", "shard_group")


def test_a_partial_list_runs_the_same_counts_with_the_same_notes_everywhere(capsys):
    """tp 2, global batch 96 on 4 ... 64: 40 (dp 20) does not split it; shard group 8 is below
    dp 12 (24 devices) and does not divide it, and divides dp 2, 4, 8 and 32 of the rest."""
    args = ["--hardware", "dgx-h100", "--workload", "llama3-8b", "--tp", "2", "--global-batch",
            "96", "--strategy", "zero3", "--shard-group", "8", "--devices", "4,8,16,24,40,64"]
    state, profile, (scenario, notes) = _app({
        "hw": "dgx-h100", "wl": "llama3-8b", "tp": 2, "mode": "strong", "gb": 96,
        "strat": "zero3", "sg": 8, "grid": "list", "dlist": "4,8,16,24,40,64"})
    # the same rules, counts and fixes; the page names its controls and dp in words (before
    # session 49 the app's notes were the CLI's with the controls' labels for the flags in the
    # fix alone: "global batch 96 does not split evenly over dp x accumulation 20 ...")
    assert [n for n in notes if "left out;" in n] == [
        "Global batch 96 does not split evenly over the 20 data-parallel ranks x Gradient "
        "accumulation 1: the row on 40 devices is left out; Global batch 480 runs every count, "
        "or give counts whose data-parallel ranks x Gradient accumulation divides it",
        "Shard group (HSDP) 8 does not divide the 12 data-parallel ranks: the row on 24 devices "
        "is left out; Shard group (HSDP) 4 runs every count, or give counts whose data-parallel "
        "ranks it divides"]
    # 20 = dp 20 (40 / tp 2) x accumulation 1; dp 12 = 24 / tp 2; 480 = lcm of dp 2, 4, 8, 12,
    # 20 and 32 (every count asked) x accumulation 1
    cli_notes = [
        "global batch 96 does not split evenly over dp x accumulation 20: the row on 40 devices "
        "is left out; --global-batch 480 runs every count, or give counts whose dp x "
        "accumulation divides it",
        "shard group 8 does not divide dp 12: the row on 24 devices is left out; --shard-group 4 "
        "runs every count, or give counts whose dp it divides"]
    assert scenario.devices == [4, 8, 16, 64]
    code, out, err = run_cli(capsys, ["predict", "--json", *args])
    assert code == 0, err
    assert [r["devices"] for r in json.loads(out)] == scenario.devices
    assert [n.removeprefix("note: ") for n in err.splitlines() if "left out;" in n] == cli_notes
    code, out, err = run_cli(capsys, ["sweep", *args])
    assert code == 0, err
    assert [int(line.split(",")[0]) for line in out.splitlines()[1:]] == scenario.devices
    assert [n.removeprefix("note: ") for n in err.splitlines() if "left out;" in n] == cli_notes
    # decide answers over the same counts with the same notes (before session 50 it stopped:
    # 'global batch 96 is not divisible by dp 20 x accumulation 1 (40 devices); ...')
    code, out, err = run_cli(capsys, ["decide", "--json", *args])
    assert code == 0, err
    card = json.loads(out)
    assert card["notes"][:2] == cli_notes
    assert card["now"]["devices"] in scenario.devices


def test_goal_searches_only_the_counts_its_layout_runs_and_takes_no_device_list(capsys):
    """Up to 4 devices goal searches 1, 2 and 4 (powers of two in a server); tp 2 cannot run
    on 1: goal answers over 2 and 4, 2/3 of tp 1's combinations (the same micro-batches,
    accumulations and strategies at each count), as decide answers over --devices 1-64; a
    device list it refuses, pointing at its own bound (--max-devices)."""
    args = ["--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--train-samples", "1e8",
            "--deadline", "30d", "--budget", "100000", "--max-devices", "4"]
    evaluated = {}
    for tp in (1, 2):
        code, out, err = run_cli(capsys, ["goal", *args, "--tp", str(tp), "--json"])
        assert code == 0, err
        evaluated[tp] = json.loads(out)["evaluated"]
    assert evaluated[2] * 3 == evaluated[1] * 2
    code, out, err = run_cli(capsys, ["goal", *args, "--tp", "2", "--devices", "1-4"])
    assert (code, out) == (2, "")
    assert "--devices is not used: goal searches every device count up to --max-devices" in err


def test_a_tp_past_a_server_is_predicts_line_in_sweep_too(capsys):
    """Was 'no combination of the sweep is left: all 2 dropped (...)' in sweep."""
    args = ["--workload", "llama3-8b", "--tp", "16", "--devices", "8,16"]
    words = ("tp 16 > 8 GPUs per server (tensor parallelism stays inside one server); use tp <= 8, "
             "or hardware whose server (one NVLink domain) holds 16 GPUs: the preset gb200-nvl72 "
             "at 64 GPUs per rack, or a hardware file with devices_per_node a multiple of 16")
    for command in ("predict", "sweep"):
        assert run_cli(capsys, [command, *args]) == (2, "", f"scalesim {command}: error: "
                                                            f"{words}\n")
