"""Session 53's fuzz of the file readers earlier fuzzing left out (validation cases, profiles,
runs files, profiler traces), one field at a time: each finding, one clear line."""

from __future__ import annotations

import json

import pytest

from scalesim.cli.main import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("points", [3, -1, 1.5])
@pytest.mark.parametrize("inter_node", ["null", "left out"])
def test_a_case_whose_points_are_a_number_is_refused_by_its_field(tmp_path, capsys, points,
                                                                   inter_node):
    """The data-parallel format's defaults look through a case's points (a network null or
    left out while a point spans nodes): points of a number raised TypeError there (a traceback)."""
    from scalesim.shipped import validation_path

    data = json.loads(validation_path("cases.json").read_text())
    case = data["cases"][0] | {"points": points}
    case["hardware"]["inter_node"] = None
    if inter_node == "left out":
        del case["hardware"]["inter_node"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**data, "cases": [case]}))
    assert main(["validate", str(path)]) == 2
    assert _one_line(capsys) == (f"scalesim validate: error: {path}: case '{case['id']}': "
                                 "field 'points': Input should be a valid list")
