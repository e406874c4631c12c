"""A runs CSV's header in capitals and '#' comment lines (session 43 audit): both were refused
as "missing column(s) ... the header has DEVICES, ..." (or "# measured ..."), saying what was
wrong but not the fix. Column names are read in any case and blank and comment lines skipped;
what is still refused says the fix."""

from __future__ import annotations

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text

PLAIN = "devices,nodes,step_time_s\n1,1,0.1\n2,1,0.11\n4,1,0.125\n"


def _read(text: str):
    runs = parse_runs_text(text, "runs.csv")
    return list(runs.devices), [round(float(t), 6) for t in runs.step_time_s]


@pytest.mark.parametrize("header", ["DEVICES,NODES,STEP_TIME_S", "Devices, Nodes ,Step_Time_s"])
def test_a_header_in_any_case_reads_as_lower_case(header):
    assert _read(header + PLAIN[PLAIN.index("\n"):]) == _read(PLAIN)


def test_comment_and_blank_lines_are_skipped_before_and_after_the_header():
    text = ("# measured 2024-05-01 on cluster A\n\n  # second note\ndevices,nodes,step_time_s\n"
            "1,1,0.1\n# a rerun below\n2,1,0.11\n\n4,1,0.125\n")
    assert _read(text) == _read(PLAIN)


def test_the_cli_reads_a_capital_header_after_a_comment(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text("# from the cluster's log\nDEVICES,NODES,STEP_TIME_S\n1,1,0.1\n2,1,0.11\n")
    assert main(["diagnose", str(path), "--json"]) == 0
    assert "error" not in capsys.readouterr().err


def test_line_numbers_count_the_comment_lines(tmp_path, capsys):
    with pytest.raises(ScalesimError, match=r"runs.csv: line 5 has more cells than the header"):
        parse_runs_text("# a\ndevices,nodes,step_time_s\n1,1,0.1\n# b\n2,1,0.11,5\n", "runs.csv")


def test_a_header_commented_out_says_to_remove_the_hash():
    with pytest.raises(ScalesimError, match=r"the header line is a # comment "
                       r"\('#devices,nodes,step_time_s'\); remove its '#'"):
        parse_runs_text("#devices,nodes,step_time_s\n1,1,0.1\n2,1,0.11\n", "runs.csv")


def test_comments_alone_are_no_runs_file():
    with pytest.raises(ScalesimError, match="no line but blank and # comment lines; expected a "
                       "header line"):
        parse_runs_text("# nothing measured yet\n", "runs.csv")


def test_a_missing_column_says_how_to_name_it():
    with pytest.raises(ScalesimError) as info:
        parse_runs_text("dev,nodes,step_time_s\n1,1,0.1\n2,1,0.11\n", "runs.csv")
    said = str(info.value)
    assert said.startswith("runs.csv: missing column(s) devices; name them in the first line "
                           "that is not a # comment, e.g. devices,nodes,step_time_s")
    assert said.endswith("; the header has dev, nodes, step_time_s")


def test_two_columns_one_name_in_two_cases_are_refused():
    with pytest.raises(ScalesimError, match="column.s. devices appear more than once"):
        parse_runs_text("devices,DEVICES,nodes,step_time_s\n1,1,1,0.1\n2,2,1,0.1\n", "runs.csv")
