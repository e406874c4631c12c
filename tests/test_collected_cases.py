"""The held-out data-parallel cases collected by this project (scalesim/data/validation/COLLECTED.md)
load through the same reader as the public file, and every point gets a finite prediction."""

from __future__ import annotations

import json
import math

from scalesim.cli.main import main
from scalesim.shipped import validation_path
from scalesim.validate import load_cases, predict_case

COLLECTED = validation_path("collected_dp_cases.json")


def test_every_collected_case_loads_and_predicts_every_non_anchor_point():
    cases = load_cases(COLLECTED)  # the reader of `scalesim validate FILE`: raises on a bad case
    assert len(cases) >= 30
    public_ids = {c.id for c in load_cases(validation_path("cases.json"))}
    assert not public_ids & {c.id for c in cases}, "a held-out case reuses a public id"
    predicted = 0
    for case in cases:
        assert "README" in case.source and "commit" in case.source, case.id
        result = predict_case(case)
        assert len(result.points) == len(case.points) >= 2, case.id
        for point in result.points:
            assert math.isfinite(point.predicted) and point.predicted > 0, (case.id, point.devices)
            if point.anchor:
                assert (math.isclose(point.predicted, point.published, rel_tol=1e-9)
                        or "anchor unreachable" in " ".join(result.flags)), case.id
            else:
                assert math.isfinite(point.error_pct), (case.id, point.devices)
                predicted += 1
    assert predicted == sum(len(c.points) - 1 for c in cases)


def test_validate_cli_scores_the_collected_file(capsys):
    assert main(["validate", str(COLLECTED), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]["allreduce"]
    assert summary["cases"] == len(load_cases(COLLECTED))
    assert math.isfinite(summary["median_abs_pct"]) and math.isfinite(summary["mean_abs_pct"])
