"""Session 52's fuzz of the file inputs (one field at a time): each finding, one clear line."""

from __future__ import annotations

import json

import pytest

from scalesim.cli.main import main
from scalesim.presets import get_workload


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("unit", ["", "   "])
@pytest.mark.parametrize("argv", [["predict", "--devices", "1,8"], ["decide", "--devices", "8"]])
def test_a_blank_sample_unit_is_refused_by_its_field(tmp_path, capsys, unit, argv):
    """predict's table heads its throughput column with the unit's first word: a blank unit
    raised IndexError there (a traceback); decide read it in silence, a unit of nothing."""
    path = tmp_path / "w.json"
    path.write_text(json.dumps(get_workload("bert-large").model_dump(mode="json")
                               | {"sample_unit": unit}))
    assert main([*argv, "--workload", str(path)]) == 2
    assert _one_line(capsys) == (
        f"scalesim {argv[0]}: error: {path}: field 'sample_unit': is empty; give what one sample "
        "is, such as images or sequences of 2048 tokens")


def test_a_sample_unit_of_words_is_its_column(tmp_path, capsys):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(get_workload("bert-large").model_dump(mode="json")
                               | {"sample_unit": "tokens of text"}))
    assert main(["predict", "--workload", str(path), "--devices", "1"]) == 0
    assert "tokens/s" in capsys.readouterr().out
