"""Runs files that read as valid yet contradict themselves (session 54's semantic fuzzing of
``scalesim diagnose runs.csv``): each is refused in one line where it enters."""

from __future__ import annotations

import pytest

from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text, runs_from_records


def test_repeats_twenty_times_apart_are_refused_naming_both_rows():
    """110 ms and 0.11 ms at 2 devices: their median (the mean of two) read as one run of 55 ms,
    182 % efficient against 100 ms at 1 device."""
    text = "devices,nodes,step_time_s\n1,1,0.1\n2,1,0.11\n2,1,0.00011\n"
    with pytest.raises(ScalesimError, match=r"runs 2 and 3 measure one configuration \(2 devices "
                       r"on 1 server\) at step_time_s 0\.11 and step_time_s 0\.00011, 1000x "
                       r"apart in step time; .* likely in other units"):
        parse_runs_text(text, "r.csv")


def test_repeats_of_throughput_are_compared_as_step_times():
    text = "devices,nodes,samples_per_s\n1,1,10\n2,1,19\n2,1,380\n"  # 20x
    with pytest.raises(ScalesimError, match="runs 2 and 3 .* samples_per_s 19 and samples_per_s "
                       "380, 20x apart"):
        parse_runs_text(text, "r.csv")


def test_repeats_under_twenty_times_apart_are_their_median():
    """1.9 / 0.1 = 19x: noise enough to keep (the median of three drops the outlier)."""
    text = "devices,nodes,step_time_s\n1,1,0.1\n2,1,0.1\n2,1,1.9\n2,1,0.12\n"
    assert parse_runs_text(text, "r.csv").step_time_s.tolist() == pytest.approx([0.1, 0.12])


RANKS = "devices,nodes,step_time_s,rank_step_times_s\n1,1,0.1,0.1\n2,1,0.2,{}\n"


def test_rank_times_twenty_times_below_the_step_are_refused():
    """0.01 s slowest rank of a 0.2 s step: 1/20, the ranks in other units than the step (their
    spread had read as no straggler wait)."""
    with pytest.raises(ScalesimError, match=r"r.csv: run 2 lists rank step times of at most "
                       r"0\.01 s, 1/20 of its step time 0\.2 s; .* likely in other units"):
        parse_runs_text(RANKS.format("0.008;0.01"), "r.csv")


def test_rank_times_within_the_bounds_are_read():
    """0.0105 s is 1/19 of 0.2 s; 0.22 s is the 1.1x a rank timed beside the step may reach."""
    for ranks in ("0.008;0.0105", "0.2;0.22"):
        runs = parse_runs_text(RANKS.format(ranks), "r.csv")
        assert runs.rows[1].rank_step_times_s == [float(t) for t in ranks.split(";")]


@pytest.mark.parametrize("ranks", ["0.2;0", "0.2;-0.01", "0.2;1e300", [0.2, 0.0]])
def test_a_rank_time_out_of_bounds_is_refused_with_the_bounds_of_a_step(ranks):
    """As step_time_s's own refusal: the bounds and why, not pydantic's 'greater than or equal to
    0.000000000001'."""
    record = {"devices": 2, "nodes": 1, "step_time_s": 0.2, "rank_step_times_s": ranks}
    with pytest.raises(ScalesimError, match=r"run 2: field 'rank_step_times_s\.1': \S+ given; "
                       r"allowed: 1e-12 <= x <= 1,000,000 s each \(one step, micro-step"):
        runs_from_records([{"devices": 1, "nodes": 1, "step_time_s": 0.1}, record], "r.csv")


@pytest.mark.parametrize(("column", "none", "values"), [
    ("comm_s", " (0 where a run had none)", (0.05, 0.1)),
    ("data_wait_s", " (0 where a run had none)", (0.05, 0.1)),
    ("steps_to_target", "", (9000, 8000)),
])
def test_a_measured_column_given_in_some_runs_only_is_refused(column, none, values):
    """It had been dropped for every run (``Runs.optional``), the report's part the model's."""
    text = (f"devices,nodes,step_time_s,{column}\n1,1,0.1,{values[0]}\n2,1,0.2,\n"
            f"4,1,0.3,{values[1]}\n")
    with pytest.raises(ScalesimError) as refused:
        parse_runs_text(text, "r.csv")
    assert str(refused.value) == (
        f"r.csv: the run on 2 devices gives no {column}, other runs do; give {column} in every "
        f"row or in none{none}: a measured column is read only where every run gives it")


@pytest.mark.parametrize(("column", "values"), [("data_wait_s", (0.05, 0.1)),
                                                ("steps_to_target", (9000, 8000))])
def test_a_one_device_run_without_a_column_others_give_is_refused(column, values):
    """A one-device run has a data wait and a time to target of its own: not to be guessed."""
    text = f"devices,nodes,step_time_s,{column}\n1,1,0.1,\n2,1,0.2,{values[0]}\n4,1,0.3,{values[1]}\n"
    with pytest.raises(ScalesimError, match=f"the run on 1 device gives no {column}, other runs do"):
        parse_runs_text(text, "r.csv")


def test_a_one_device_runs_empty_comm_is_none_exchanged():
    """One device exchanges nothing: its empty comm_s is 0 (said in a note), not a refusal of
    a file whose other runs measure theirs."""
    runs = parse_runs_text("devices,nodes,step_time_s,comm_s\n1,1,0.1,\n2,1,0.2,0.05\n"
                           "4,1,0.3,0.1\n", "r.csv")
    assert runs.optional("comm_s").tolist() == [0.0, 0.05, 0.1]
    assert "comm_s of the run on 1 device read as 0: one device exchanges nothing" in runs.notes


def test_a_repeat_without_the_column_is_its_configurations_median():
    """Rows of one configuration are one run: its column is the median of the rows that give it."""
    text = "devices,nodes,step_time_s,comm_s\n1,1,0.1,0\n2,1,0.2,0.05\n2,1,0.2,\n"
    assert parse_runs_text(text, "r.csv").optional("comm_s").tolist() == [0.0, 0.05]


def test_rank_times_missing_in_a_run_of_two_or_more_devices_are_refused():
    text = ("devices,nodes,step_time_s,rank_step_times_s\n1,1,0.1,\n2,1,0.2,0.2;0.19\n"
            "4,1,0.3,\n")
    with pytest.raises(ScalesimError, match=r"the run on 4 devices gives no rank_step_times_s, "
                       r"other runs do; give rank_step_times_s in every run of two or more "
                       r"devices or in none:"):
        parse_runs_text(text, "r.csv")


def test_a_one_device_run_may_leave_its_rank_time_out():
    text = "devices,nodes,step_time_s,rank_step_times_s\n1,1,0.1,\n2,1,0.2,0.2;0.19\n"
    assert parse_runs_text(text, "r.csv").rows[0].rank_step_times_s is None


def test_a_run_far_past_linear_is_refused_naming_the_file_and_its_batch_columns():
    """32 then 128 samples a device in 0.1 s steps: 400 % efficient. The line named a
    'micro_batch' column no runs file has, and no file."""
    from scalesim.runs_diagnosis import diagnose_runs

    text = "devices,nodes,step_time_s,per_device_batch\n1,1,0.1,32\n2,1,0.1,128\n"
    with pytest.raises(ScalesimError) as refused:
        diagnose_runs(parse_runs_text(text, "r.csv"))
    assert str(refused.value) == (
        "r.csv: the run at 2 devices is 400% efficient against the one at 1 device (throughput "
        "8x on 2x the devices): no job scales that far past linear; check its step_time_s or "
        "samples_per_s and its batch columns (per_device_batch or global_batch, and "
        "accumulation)")
