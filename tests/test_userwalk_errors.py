"""A user's walk through the CLI (session 42): errors that must say what is wrong and how to fix
it, and the fix they name must work.

``plan --workload resnet50`` (a data-parallel preset with no transformer shape) read "unknown
transformer preset 'resnet50'" although ``scalesim presets`` lists it, and an unknown name in
``plan``/``diagnose --workload`` did not say, as predict's does, that a workload JSON file with a
'transformer' shape is the way to plan a model the presets lack (GPT-3 175B)."""

from __future__ import annotations

import json

import pytest
from cli_harness import diagnose_file, run_cli, whole_lines
from test_diagnose_unseparated import WALK_RUNS
from test_diagnose_unseparated import _diagnose as _diagnose_json  # the runs' --json, as a dict

from scalesim.presets import TRANSFORMERS, WORKLOADS


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("name", [n for n in WORKLOADS if n not in TRANSFORMERS])
def test_plan_of_a_shapeless_workload_preset_says_it_has_no_shape(capsys, name):
    code, _, err = run_cli(capsys, ["plan", "--workload", name, "--devices", "8",
                                    "--global-batch", "64"])
    line = _one_error_line(err)
    assert code == 2
    assert f"workload preset '{name}' is a parameter count with no transformer shape" in line
    assert "unknown" not in line
    assert "scalesim schema workload" in line


def test_plan_of_an_unknown_model_names_the_workload_file_and_that_file_plans(capsys, tmp_path):
    """GPT-3 175B is no preset: the error points to a workload JSON with a 'transformer' shape,
    and such a file (Brown et al. 2020: 96 layers, hidden 12288, 96 heads) plans."""
    code, _, err = run_cli(capsys, ["plan", "--workload", "gpt-175b", "--devices", "8",
                                    "--global-batch", "64"])
    line = _one_error_line(err)
    assert code == 2
    assert "unknown transformer preset 'gpt-175b'" in line
    assert "workload JSON file with a 'transformer' shape (scalesim schema workload)" in line

    from scalesim.profiles import load_workload

    shape = TRANSFORMERS["gpt-145.6b"][0].model_copy(update={"layers": 96})
    wl = load_workload("gpt-145.6b").model_copy(update={
        "name": "gpt-175b", "transformer": shape, "params": shape.param_count()})
    path = tmp_path / "gpt-175b.json"
    path.write_text(wl.model_dump_json())
    code, out, err = run_cli(capsys, ["plan", "--workload", str(path), "--hardware", "dgx-a100",
                                      "--devices", "384", "--global-batch", "1536", "--top", "1",
                                      "--json"])
    assert code == 0, err
    best = json.loads(out)["layouts"][0]
    assert best["fits"] and best["tp"] * best["pp"] * best["dp"] == 384


def test_diagnose_of_a_shapeless_workload_preset_says_it_has_no_shape(capsys, tmp_path):
    code, _, err = diagnose_file(capsys, tmp_path,
                                 "devices,nodes,samples_per_s\n1,1,100\n8,1,450\n",
                                 "--workload", "gpt-7b", "--gpu", "A100 80GB")
    line = _one_error_line(err)
    assert code == 2
    assert "workload preset 'gpt-7b' is a parameter count with no transformer shape" in line


# --- goal where nothing fits: the note names the knob that makes it fit --------------------------

GOAL_405B = ["goal", "--workload", "llama3-405b", "--hardware", "dgx-h100", "--train-samples",
             "1e6", "--deadline", "7d", "--budget", "1e6", "--max-devices", "256",
             "--layout", "given"]  # the layout as given (session 43: the default searches)


def test_goal_where_nothing_fits_names_full_recompute_and_it_fits_then(capsys):
    """Llama 3 405B on up to 256 H100s, unsplit and without recompute: no plan fits (its
    activations of 8,192-token sequences alone overflow 80 GB), and the note named only --tp/--pp
    and --max-devices, though plan and decide find 405B layouts on 128 GPUs with full recompute,
    and --tp 2 alone still fits nothing. The note names --recompute full, and with it goal finds
    a plan."""
    code, out, err = run_cli(capsys, GOAL_405B)
    assert code == 0, err
    assert out.startswith("No plan runs")
    note = next(line for line in whole_lines(out).splitlines() if line.startswith("note: goal keeps"))
    assert "(tp 1 x pp 1, recompute none)" in note and "--recompute full" in note

    code, out, err = run_cli(capsys, [*GOAL_405B, "--recompute", "full", "--json"])
    assert code == 0, err
    best = json.loads(out)["best"]
    assert best is not None and best["meets"]
    assert not any("goal keeps" in n for n in json.loads(out)["notes"])


def test_goal_note_leaves_recompute_out_where_it_is_full_already(capsys):
    code, out, err = run_cli(capsys, [*GOAL_405B, "--recompute", "full", "--max-devices", "8"])
    assert code == 0, err
    note = next(line for line in whole_lines(out).splitlines() if line.startswith("note: goal keeps"))
    assert note.startswith("note: goal keeps the split as given (tp 1 x pp 1)")
    assert "--recompute" not in note


# --- diagnose: "no data stall" said of the run it is true of ------------------------------------

def test_loader_remedy_does_not_deny_the_stall_its_table_shows(capsys, tmp_path):
    """1, 2, 4, 8 GPUs in one server at 4.5x on 8, then 16 on two: the fit paces the 8-GPU run
    by one server's input supply (the table's data column: ~20 % at 8, 0 at 16), and the loader
    remedy, judged at 16, said 'the measured runs or traces show no data stall'. It now says
    the stall is absent at the largest run and names the run it paces."""
    from scalesim.remedies import NO_STALL_FOUND

    report = _diagnose_json(capsys, tmp_path, WALK_RUNS)
    table = report["table"]
    at8 = next(r for r in table if r["devices"] == 8)
    assert at8["data_share"] >= 0.01 and table[-1]["data_share"] < 0.01
    loader = next(r for r in report["remedies"] if r["key"] == "loader")
    assert loader["note"] != NO_STALL_FOUND
    assert loader["note"].startswith("no data stall at 16 devices, the largest run")
    assert f"at 8 devices the input waits {round(100 * at8['data_share'])}% of the step" in \
        loader["note"]


def test_loader_remedy_keeps_no_stall_found_where_no_run_stalls(capsys, tmp_path):
    """Runs whose measured data wait is 0 in every run: the reason stays NO_STALL_FOUND."""
    from scalesim.remedies import NO_STALL_FOUND

    text = ("devices,nodes,samples_per_s,per_device_batch,data_wait_s\n1,1,400,32,0\n"
            "2,1,780,32,0\n4,1,1500,32,0\n8,1,2900,32,0\n16,2,3000,32,0\n")
    report = _diagnose_json(capsys, tmp_path, text)
    assert all(r["data_share"] < 0.01 for r in report["table"])
    loader = next(r for r in report["remedies"] if r["key"] == "loader")
    assert loader["note"] == NO_STALL_FOUND
