"""Session 48's audit of the CLI on bad and odd input: each finding's regression, through the
CLI harness (one command run in this process, its exit code and its one error line)."""

from __future__ import annotations

from cli_harness import run_cli

from scalesim.runs import parse_runs_text

# 8 devices: a data wait of 0.04 s and an exposed exchange of 0.04 s in a step of 0.064 s, so
# 125 % of the step is spent waiting and communicating.
PARTS_OVER_STEP = ("devices,nodes,step_time_s,data_wait_s,comm_s\n"
                   "1,1,0.06,0,0\n8,1,0.064,0.04,0.04\n16,2,0.134,0.07,0.07\n")


def test_a_data_wait_and_exposed_exchange_longer_than_the_step_together_are_refused(
        tmp_path, capsys):
    # Before: accepted; the table read "comm 62.5% data 62.5%" for the 8-device run (125 % of
    # the step) and the fit missed it by 80 %.
    path = tmp_path / "runs.csv"
    path.write_text(PARTS_OVER_STEP)
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--json"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (f"{path}: run 2 has data_wait_s 0.04 s and comm_s 0.04 s, together 0.08 s, more "
            "than its step time 0.064 s") in err


def test_a_data_wait_and_exposed_exchange_within_the_step_are_read():
    # The same runs with the parts inside the step (0.03 + 0.03 of 0.064 s) are runs as before.
    text = PARTS_OVER_STEP.replace("0.064,0.04,0.04", "0.064,0.03,0.03")
    runs = parse_runs_text(text, "runs.csv")
    assert [r.data_wait_s for r in runs.rows] == [0, 0.03, 0.07]
    assert [r.comm_s for r in runs.rows] == [0, 0.03, 0.07]


def test_a_scenario_files_price_without_a_training_length_is_named_as_the_file_names_it(
        tmp_path, capsys):
    # Before: "--price needs a training length ..." where no --price was given: the price was
    # the --scenario file's price_per_device_hour.
    from scalesim.schemas import Scenario

    path = tmp_path / "scenario.json"
    path.write_text(Scenario(devices=[1, 8], price_per_device_hour=4.0).model_dump_json())
    code, out, err = run_cli(capsys, ["predict", "--scenario", str(path)])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"error: {path}: price_per_device_hour 4 needs a training length" in err
    assert "--price" not in err
    code, _, err = run_cli(capsys, ["predict", "--scenario", str(path), "--price", "3"])
    assert code == 2 and "error: --price needs a training length" in err
