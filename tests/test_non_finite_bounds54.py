"""A number that is not finite (NaN, an infinity, 1e400) in a runs CSV cell or a JSON file's
field was refused in pydantic's words ("Input should be a finite number") while 1e300 got the
field's bounds; it is now refused as an out-of-bounds number is: the value given and the
field's bounds, unit and reason (``jsonio.validation_message``)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, FiniteFloat, ValidationError

from scalesim import presets
from scalesim.cli.main import main
from scalesim.jsonio import validation_message

STEP_TIME = ("allowed: 1e-12 <= x <= 1,000,000 s (one step, micro-step, sample or timed "
             "collective: a picosecond to 11.6 days)")
PARAMS = ("allowed: 1 <= x <= 1,000,000,000,000,000 parameters (1000x the largest published "
          "dense models (~1.8e12))")
PEAK = "allowed: 0.001 <= x <= 1,000,000 TFLOP/s (one device's dense peak (H100: 989; a CPU core: ~0.1))"
STRAGGLER = "allowed: 0 <= x <= 10 (a ratio: std / mean of a time or speed)"

# JSON's literal, as Python's reader reads it; a CSV cell is quoted as typed
JSON_NON_FINITE = [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"), ("1e400", "inf")]
CSV_NON_FINITE = ["nan", "inf", "-inf", "1e400"]


def _refusal(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("cell", CSV_NON_FINITE)
def test_a_runs_cell_that_is_not_finite_is_refused_by_its_bounds(tmp_path, capsys, cell):
    path = tmp_path / "runs.csv"
    path.write_text(f"devices,nodes,step_time_s\n1,1,0.1\n2,1,0.11\n4,1,{cell}\n")
    assert _refusal(capsys, ["diagnose", str(path)]) == (
        f"scalesim diagnose: error: {path}: run 3: field 'step_time_s': {cell} given; {STEP_TIME}")


def _hardware_with_peak(literal: str) -> str:
    data = presets.get_hardware("dgx-a100").model_dump(mode="json") | {"peak_tflops": "@"}
    return json.dumps(data).replace('"@"', literal)


@pytest.mark.parametrize(("literal", "shown"), JSON_NON_FINITE)
@pytest.mark.parametrize(("flag", "text", "field", "allowed"), [
    ("--workload", lambda v: f'{{"name": "x", "params": {v}}}', "params", PARAMS),
    ("--hardware", _hardware_with_peak, "peak_tflops", PEAK),
    ("--scenario", lambda v: f'{{"straggler_cv": {v}}}', "straggler_cv", STRAGGLER),
], ids=["workload", "hardware", "scenario"])
def test_a_json_field_that_is_not_finite_is_refused_by_its_bounds(tmp_path, capsys, literal,
                                                                  shown, flag, text, field,
                                                                  allowed):
    path = tmp_path / "file.json"
    path.write_text(text(literal))
    assert _refusal(capsys, ["predict", flag, str(path)]) == (
        f"scalesim predict: error: {path}: field '{field}': {shown} given; {allowed}")


@pytest.mark.parametrize("cell", ["0", "-1", "inf", "nan"])
def test_a_rank_step_time_out_of_bounds_is_refused_by_the_items_bounds(tmp_path, capsys, cell):
    """A list's item (``bounds.items_bounded``) got pydantic's words: "-1 given; Input should be
    greater than or equal to 0.000000000001", "inf given; not a finite number". These bounds
    are the only check of a rank time's sign: runs.RunRow's own validator of positive rank times
    (session 55: removed) could not be reached, the items' bounds refusing 0 and -1 first."""
    path = tmp_path / "runs.csv"
    path.write_text("devices,nodes,step_time_s,rank_step_times_s\n1,1,0.1,0.1\n"
                    f"2,1,0.1,0.1;{cell}\n")
    assert _refusal(capsys, ["diagnose", str(path)]) == (
        f"scalesim diagnose: error: {path}: run 2: field 'rank_step_times_s.1': {cell} given; "
        f"{STEP_TIME.replace(' s (', ' s each (')}")


def test_an_instance_size_out_of_bounds_is_refused_by_the_items_bounds(tmp_path, capsys):
    data = presets.get_hardware("dgx-h100").model_dump(mode="json") | {"instance_sizes": [8, 0]}
    path = tmp_path / "hardware.json"
    path.write_text(json.dumps(data))
    assert _refusal(capsys, ["predict", "--hardware", str(path)]) == (
        f"scalesim predict: error: {path}: field 'instance_sizes.1': 0 given; allowed: 1 <= x <= "
        "1,024 devices each (one server: 8-72 GPUs today, up to a few hundred CPU processes)")


class _Unbounded(BaseModel):
    x: FiniteFloat


def test_a_field_without_bounds_says_the_number_is_not_finite():
    with pytest.raises(ValidationError) as info:
        _Unbounded.model_validate({"x": float("nan")})
    assert validation_message(info.value, "f.json", _Unbounded) == (
        "f.json: field 'x': nan given; not a finite number")
