"""The held-out parameter-server cases collected by this project (scalesim/data/validation/
COLLECTED_PS.md) load through the reader of `scalesim validate FILE`, name their sources, use no
table of the public file, and are scored in the summary's parameter-server group."""

from __future__ import annotations

import json
import math

from scalesim.cli.main import main
from scalesim.shipped import validation_path
from scalesim.validate import load_cases, predict_case

COLLECTED_PS = validation_path("collected_ps_cases.json")


def test_every_collected_ps_case_is_sourced_held_out_and_predicted():
    cases = load_cases(COLLECTED_PS)  # raises on a case `scalesim validate FILE` cannot read
    assert len(cases) >= 5
    public = load_cases(validation_path("cases.json"))
    assert not {c.id for c in public} & {c.id for c in cases}, "a held-out case reuses a public id"
    # held out: no collected case repeats a public case's points on the same hardware
    public_rows = {(c.hardware.gpu, tuple((p.devices, p.throughput) for p in c.points))
                   for c in public}
    sources = set()
    for case in cases:
        assert case.comm == "parameter-server", case.id
        assert len(case.source.strip()) > 40 and case.notes.strip(), case.id
        assert (case.hardware.gpu, tuple((p.devices, p.throughput) for p in case.points)) \
            not in public_rows, case.id
        sources.add(case.source.split(",")[0])
        result = predict_case(case)
        assert len(result.points) == len(case.points) >= 2, case.id
        for point in result.points:
            assert math.isfinite(point.predicted) and point.predicted > 0, (case.id, point.devices)
            if point.anchor:
                assert math.isclose(point.predicted, point.published, rel_tol=1e-9), case.id
            else:
                assert math.isfinite(point.error_pct), (case.id, point.devices)
    assert len(sources) >= 3, sources  # more than one publication behind the estimate


def test_validate_cli_scores_the_collected_ps_file_in_the_parameter_server_group(capsys):
    assert main(["validate", str(COLLECTED_PS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cases = load_cases(COLLECTED_PS)
    ps = report["summary"]["parameter-server"]
    assert ps["cases"] == len(cases)
    assert ps["points"] == sum(len(c.points) - 1 for c in cases)
    assert report["summary"]["allreduce"]["cases"] == 0
    for key in ("mean_abs_pct", "median_abs_pct", "max_abs_pct"):
        assert math.isfinite(ps[key]), key


def test_a_file_without_all_reduce_cases_meets_or_misses_no_all_reduce_target(capsys):
    """No all-reduce point: its targets are neither met nor missed (``None``, "no all-reduce
    point to score"); the parameter-server target is judged on its own line."""
    assert main(["validate", str(COLLECTED_PS), "--json"]) == 0
    targets = json.loads(capsys.readouterr().out)["summary"]["targets"]
    assert targets["median_met"] is None and targets["mean_met"] is None
    assert isinstance(targets["parameter_server_median_met"], bool)
    assert main(["validate", str(COLLECTED_PS)]) == 0
    text = capsys.readouterr().out
    assert "targets (all-reduce): no all-reduce point to score" in text and "NOT met" not in \
        text.split("targets (all-reduce)")[1].splitlines()[0]
    assert "target (parameter-server): median <= 15% " in text
