"""`scalesim validate` says why each case or point was left out the same in its text and in
--json (session 20's review question: the JSON has ``skipped``, does each entry say why?)."""

from __future__ import annotations

import copy
import json

from cli_harness import run_cli
from test_validate import _case, _file

from scalesim.shipped import validation_path


def _text_and_json(capsys, path: str) -> tuple[list[str], dict]:
    code, text, _ = run_cli(capsys, ["validate", path])
    assert code == 0
    code, out, _ = run_cli(capsys, ["validate", path, "--json"])
    assert code == 0
    return text.splitlines(), json.loads(out)


def _not_predicted_lines(text: list[str], path: str, report: dict) -> list[str]:
    """The text report's closing section, checked against the JSON's counts: its reason lines."""
    skipped = report["skipped"]
    total = len(report["cases"]) + len(skipped)
    heading = (f"not predicted: {len(skipped)} of {total} cases of {path} (left out of the "
               "summary; each line is the reason)")
    at = text.index(heading)
    return text[at + 1:]


def test_each_skipped_case_and_dropped_point_says_why_in_text_and_json(tmp_path, capsys):
    """A user file with a case that cannot be read, a point that cannot be read and a case with
    an unknown field: the text's reason lines are the JSON's ``skipped[].reason`` (the file
    named once, in the heading), the text's ``flag:`` lines the JSON cases' ``flags``, and the
    summary counts the case (``skipped_cases``) and the point (``skipped_points``)."""
    points = _case()["points"]
    holed = _case(id="holed", points=[*points[:2], {**points[2], "throughput": None}])
    extra = _case(id="extra")
    extra["colour"] = "blue"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_file(_case(), holed, _case(id="bad", comm="hierarchical-allreduce"), extra)))
    text, report = _text_and_json(capsys, str(path))
    assert [s["id"] for s in report["skipped"]] == ["bad"]
    reasons = [s["reason"] for s in report["skipped"]]
    assert all(r.startswith(f"{path}: case 'bad': field 'comm'") for r in reasons)
    assert _not_predicted_lines(text, str(path), report) == [
        "  " + r.removeprefix(f"{path}: ") for r in reasons]
    assert report["summary"]["skipped_cases"] == 1 and report["summary"]["skipped_points"] == 1
    flags = {c["id"]: c["flags"] for c in report["cases"]}
    assert flags["holed"][0] == ("point not read, not predicted: points.2: field 'throughput': "
                                 "Input should be a valid number")
    assert flags["extra"][0] == "unknown field ignored (not in the format): colour"
    text_flags = [line.removeprefix("  flag: ") for line in text if line.startswith("  flag: ")]
    assert text_flags == [f for case in report["cases"] for f in case["flags"]]
    counted = next(line for line in text if " cases use a default" in line)
    assert counted.endswith("or have a part not read: a field ignored or a point dropped (2) "
                            "(see their flags)")


def test_a_skipped_model_parallel_case_says_why_in_text_and_json(tmp_path, capsys):
    """The same for a scalesim-parallel-cases/1 file: a copy of the shipped cases with one
    case unreadable."""
    data = json.loads(validation_path("parallel_cases.json").read_text())
    bad = copy.deepcopy(next(c for c in data["cases"] if not c["anchor"]))
    bad["id"], bad["precision"] = "bad", "fp4"
    data["cases"].append(bad)
    path = tmp_path / "parallel.json"
    path.write_text(json.dumps(data))
    text, report = _text_and_json(capsys, str(path))
    (skip,) = report["skipped"]
    assert skip["id"] == "bad" and skip["reason"].startswith(f"{path}: case 'bad': field "
                                                            "'precision'")
    assert _not_predicted_lines(text, str(path), report) == [
        "  " + skip["reason"].removeprefix(f"{path}: ")]
    assert report["summary"]["skipped_cases"] == 1


def test_the_shipped_reports_skip_nothing(capsys):
    """The shipped files are read strictly: nothing is skipped, so their --json carries
    ``"skipped": []`` and zero counts (a field added to skipped entries would not change their
    bytes; a new summary key would)."""
    for argv in (["validate", "--json"], ["validate", "--parallel", "--json"]):
        code, out, err = run_cli(capsys, argv)
        report = json.loads(out)
        assert code == 0 and err == "" and report["skipped"] == []
        assert report["summary"]["skipped_cases"] == 0
        assert report["summary"].get("skipped_points", 0) == 0
