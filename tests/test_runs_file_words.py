"""A runs file saved by a European Excel (semicolons between values, decimal commas) and a runs
file with a column diagnose does not read (session 42's app walk), through the one reader the
CLI's `diagnose` and the app's Diagnose page share (`runs.parse_runs_text`)."""

from __future__ import annotations

import pytest
from app_harness import open_diagnose_page
from cli_harness import run_cli

from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text, unknown_columns_note

SEMICOLONS = "devices;nodes;samples_per_s\n1;1;100,5\n2;1;190,2\n4;1;370,1\n"
TABS = "devices\tnodes\tsamples_per_s\n1\t1\t100\n2\t1\t190\n4\t1\t370\n"
EXTRA = ("devices,nodes,samples_per_s,gpu_util,comm_time_s\n1,1,100,90,0\n2,1,190,88,0.001\n"
         "4,1,370,85,0.001\n")
SAVE = "save the file with commas between values and a point as the decimal mark"


@pytest.mark.parametrize("text, said", [
    (SEMICOLONS, "the values are separated by semicolons (as Excel saves CSV where the decimal "
                 "mark is a comma)"),
    (TABS, "the values are separated by tabs"),
])
def test_a_file_of_another_separator_says_so_and_how_to_save_it(capsys, tmp_path, text, said):
    """Before: 'missing column(s) devices, nodes, samples_per_s or step_time_s; the header has
    devices;nodes;samples_per_s', columns the header plainly holds."""
    path = tmp_path / "runs.csv"
    path.write_text(text)
    code, out, err = run_cli(capsys, ["diagnose", str(path)])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"runs.csv: {said}; {SAVE}" in err and "missing column" not in err
    at = open_diagnose_page(text)  # the app's Diagnose page: the same line
    assert len(at.error) == 1 and said in at.error[0].value and SAVE in at.error[0].value


def test_a_header_of_one_other_column_is_still_a_missing_column():
    with pytest.raises(ScalesimError, match="missing column"):
        parse_runs_text("devices;gpus\n1;1\n2;1\n", "runs.csv")  # no 'nodes': not a runs file


def test_a_column_diagnose_does_not_read_is_named_with_a_near_name_on_cli_and_page(capsys,
                                                                                   tmp_path):
    note = ("ignored column(s): comm_time_s (comm_s?), gpu_util; a runs file's columns are "
            "devices, nodes, samples_per_s, step_time_s")
    assert parse_runs_text(EXTRA, "runs.csv").notes[0].startswith(note)
    path = tmp_path / "runs.csv"
    path.write_text(EXTRA)
    code, out, _ = run_cli(capsys, ["diagnose", str(path)])
    assert code == 0 and f"note: {note}" in out
    at = open_diagnose_page(EXTRA)
    shown = f"note: {note}".replace("_", "\\_")  # the page's markdown escapes underscores
    assert any(c.value.startswith(shown) for c in at.caption)


@pytest.mark.parametrize("names, said", [
    ({"devices", "nodes"}, None),
    ({"devices", "samples_per_sec"}, "samples_per_sec (samples_per_s?)"),
    ({"per_gpu_batch"}, "per_gpu_batch (per_device_batch?)"),
    ({"loss"}, "loss;"),  # no near name: the name alone
])
def test_a_near_name_is_said_only_where_it_is_near(names, said):
    note = unknown_columns_note(names)
    assert (note is None) if said is None else said in note
