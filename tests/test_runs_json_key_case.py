"""A JSON runs file's keys in any case (session 43): `"DEVICES"` was refused as "run 1 lacks
devices", where a CSV header in capitals is read (``tests/test_runs_header_words.py``). Keys are
read stripped and in lower case, as a CSV header's; two keys of one object that differ only in
case are refused in one line naming both and which to keep (``runs._lower_keys``)."""

from __future__ import annotations

import json

import pytest

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text

PLAIN = [{"devices": 1, "nodes": 1, "step_time_s": 0.1},
         {"devices": 2, "nodes": 1, "step_time_s": 0.11},
         {"devices": 4, "nodes": 1, "step_time_s": 0.125, "accumulation": 2}]


def _read(data) -> tuple:
    runs = parse_runs_text(json.dumps(data), "runs.json")
    return (list(runs.devices), [round(float(t), 6) for t in runs.step_time_s],
            list(runs.accumulation))


def _recased(run: dict, case) -> dict:
    return {case(k): v for k, v in run.items()}


@pytest.mark.parametrize("case", [str.upper, str.title, lambda k: f" {k.upper()} "])
def test_keys_in_any_case_read_as_lower_case(case):
    assert _read([_recased(r, case) for r in PLAIN]) == _read(PLAIN)
    assert _read({"RUNS": [_recased(r, case) for r in PLAIN]}) == _read(PLAIN)


def test_the_cli_diagnoses_a_file_of_capital_keys(tmp_path, capsys):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([_recased(r, str.upper) for r in PLAIN]))
    assert main(["diagnose", str(path), "--json"]) == 0
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("keys, words", [
    (("devices", "DEVICES"), "run 2 gives both 'devices' and 'DEVICES', one key (keys are read "
                             "in any case); keep 'devices' and remove the other"),
    (("DEVICES", "devices"), "run 2 gives both 'devices' and 'DEVICES', one key (keys are read "
                             "in any case); keep 'devices' and remove the other"),
    (("Devices", "DEVICES"), "run 2 gives both 'Devices' and 'DEVICES', one key (keys are read "
                             "in any case); keep one of them, written 'devices'")])
def test_two_keys_one_name_in_two_cases_are_refused_naming_both(tmp_path, capsys, keys, words):
    """Before: 'devices' was read and 'DEVICES' ignored with a note ('ignored column(s):
    DEVICES'), whichever the user meant; both in other cases: 'run 2 lacks devices'."""
    second = {keys[0]: 2, keys[1]: 8, "nodes": 1, "step_time_s": 0.11}
    with pytest.raises(ScalesimError) as info:
        parse_runs_text(json.dumps([PLAIN[0], second, PLAIN[2]]), "runs.json")
    assert str(info.value) == f"runs.json: {words}"
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([PLAIN[0], second, PLAIN[2]]))
    assert main(["diagnose", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"scalesim diagnose: error: {path}: {words}\n"


def test_a_runs_key_in_two_cases_is_refused():
    with pytest.raises(ScalesimError, match="its top-level object gives both 'runs' and 'RUNS'"):
        parse_runs_text(json.dumps({"RUNS": PLAIN, "runs": []}), "runs.json")


def test_an_object_without_runs_keeps_its_refusal():
    """A top-level object with no runs key in any case is refused as before, keys unread."""
    with pytest.raises(ScalesimError, match="expected a JSON list of run objects"):
        parse_runs_text(json.dumps({"rows": PLAIN, "ROWS": []}), "runs.json")
