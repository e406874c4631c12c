"""A one-value split, global batch or shard group beside a --devices list that runs at no count:
sweep refuses in predict's one line, which names every count (session 43; one function,
``layout_predict.counts_that_run``, decides it for predict, sweep and the app: session 44). Before, sweep said
'no combination of the sweep is left: all 2 dropped (... e.g. <its first dropped row>)', or for
the data-parallel batch 'no combination of the sweep splits the global batch evenly ...'.

By hand: tp 2 x pp 2 x cp 4 = 16 divides neither 8 nor 24 (multiples 16 and 32, gcd 8); global
batch 64 over 24 or 40 devices is not whole (lcm(24, 40) = 120); shard group 16 divides neither
dp 24 nor 40 (gcd 8); 2**26 samples on 1 or 2 devices is a micro-batch past 2**24."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

CASES = {
    "split": (["--workload", "llama3-8b", "--tp", "2", "--pp", "2", "--cp", "4", "--devices",
               "8,24"],
              "devices 8 and 24 are not divisible by tp x pp x cp = 16; give device counts that "
              "are multiples of it (16 or 32), or a tp x pp x cp that divides 8"),
    "global batch": (["--devices", "24,40", "--global-batch", "64"],
                     "global batch 64 does not split evenly over 24 and 40 devices x 1 "
                     "accumulation steps; pick a global batch divisible by devices x accumulation "
                     "at every count asked (24 and 40): 120"),
    "shard group": (["--devices", "24,40", "--strategy", "zero3", "--shard-group", "16"],
                    "shard group 16 does not divide dp 24 or 40; give a divisor of each (e.g. 8), "
                    "or drop it: full sharding (at 24 and 40 devices)"),
    "micro-batch": (["--devices", "1,2", "--global-batch", str(2**26)],
                    "global batch 67,108,864 over 1 and 2 devices x 1 accumulation step is a "
                    "micro-batch of 67,108,864 or 33,554,432 samples, past the largest of the "
                    "bounds table "
                    "(16,777,216); raise --devices or --accumulation (at most 4,096), or lower "
                    "--global-batch"),
    # the split leaves out 8 and 24, the batch 3 the rest (dp 2 on 32): the first rule's line,
    # then the rest named with their rule (session 44: 32 was not named)
    "split, then batch": (["--workload", "llama3-8b", "--tp", "8", "--pp", "2", "--devices",
                           "8,24,32", "--global-batch", "3"],
                          "devices 8 and 24 are not divisible by tp x pp = 16; give device counts "
                          "that are multiples of it (16 or 32), or a tp x pp that divides 8; at 32 "
                          "devices, global batch 3 does not split evenly over dp x accumulation 2"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sweep_refuses_a_list_none_runs_in_predicts_line(capsys, case):
    args, words = CASES[case]
    for command in ("predict", "sweep"):
        code, out, err = run_cli(capsys, [command, *args])
        assert (code, out, err) == (2, "", f"scalesim {command}: error: {words}\n")


def test_a_shard_group_beside_ddp_rows_is_not_refused(capsys):
    """--strategy-values ddp,zero3: the ddp rows run without the group, so the ZeRO rows alone
    are dropped (and counted), as before."""
    code, out, err = run_cli(capsys, ["sweep", "--devices", "24,40", "--strategy-values",
                                      "ddp,zero3", "--shard-group", "16"])
    assert code == 0, err
    assert [line.split(",")[:2] for line in out.splitlines()[1:]] == [["24", "ddp"],
                                                                     ["40", "ddp"]]
    assert "2 combinations dropped: 2 break a layout rule" in err


def test_a_swept_setting_keeps_sweeps_own_count(capsys):
    """A swept tp gives each count several dp, so no one line of predict's: sweep counts the
    drops by reason and names its first dropped row."""
    code, out, err = run_cli(capsys, ["sweep", "--workload", "llama3-8b", "--devices", "8,24",
                                      "--tp-values", "16", "--pp", "1"])
    assert code == 2 and out == ""
    assert err.startswith("scalesim sweep: error: no combination of the sweep is left: all 2 "
                          "dropped")
