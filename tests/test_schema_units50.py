"""Session 50 units audit: every number a user writes in a file (profile, hardware, workload,
scenario, layout, runs and validation case files) has its unit in its name (``_s``, ``_bytes``,
``_GBps``, ...) or its description, which ``scalesim schema`` prints. A dimensionless number says
what it is: a count, a ratio, a fraction, a share or an index (a rank, a ZeRO stage). Before,
``straggler_cv``, ``slow_factor``, ``matmul_efficiency``, the ``rel_rmse`` fields, ``hidden``,
``ffn_hidden``, ``slow_device``, ``slow_rank``, ``numa_affinity``, the layout's ``dp``, ``tp``,
``cp`` and the parallel case's ``zero`` said none."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_harness import run_cli

from scalesim.layout import ParallelLayout
from scalesim.runs import RunRow
from scalesim.schemas import SCHEMAS
from scalesim.validate import Case
from scalesim.validate_parallel import ParallelCase

FILE_MODELS = {**SCHEMAS, "layout": ParallelLayout, "runs": RunRow, "case": Case,
               "parallel case": ParallelCase}
UNIT_SUFFIX = re.compile(r"_(s|bytes|GBps|tflops|mib|usd|per_s)$", re.I)
UNIT_WORDS = ("s", "bytes", "GB/s", "Gbit/s", "TFLOP/s", "MiB", "USD", "samples", "samples/s",
              "sequences", "tokens", "devices", "GPUs", "servers", "ranks", "NICs", "cores",
              "workers", "micro-steps", "steps", "layers", "stages", "chunks", "heads",
              "parameters")
DIMENSIONLESS = ("count", "ratio", "fraction", "share", "index")
_ANY_WORD = "|".join(re.escape(w) for w in UNIT_WORDS + DIMENSIONLESS)
SAID = re.compile(rf"(?<![\w/'-])({_ANY_WORD})(?![\w/'-])")  # a whole word: not the 's' of "rank's"


def _is_number(spec: dict) -> bool:
    """Whether a JSON Schema property holds a number (or a list of numbers, or null)."""
    if spec.get("type") in ("number", "integer"):
        return True
    if spec.get("type") == "array":
        return _is_number(spec.get("items", {}))
    return any(_is_number(s) for s in spec.get("anyOf", []))


def _numbers(model) -> dict[str, str]:
    """'Model.field' -> description of every number-typed property of ``model``'s schema."""
    schema = model.model_json_schema()
    return {f"{part.get('title')}.{name}": spec.get("description", "")
            for part in [schema, *schema.get("$defs", {}).values()]
            for name, spec in part.get("properties", {}).items() if _is_number(spec)}


def _unitless(numbers: dict[str, str]) -> list[str]:
    return [f for f, text in numbers.items()
            if not UNIT_SUFFIX.search(f.split(".")[1]) and not SAID.search(text)]


def test_every_number_of_a_user_file_says_its_unit():
    numbers = {f: t for model in FILE_MODELS.values() for f, t in _numbers(model).items()}
    assert len(numbers) > 150  # the walk reaches the nested models ($defs)
    assert _unitless(numbers) == []


def test_the_check_catches_a_number_with_no_unit():
    assert _unitless({"Scenario.straggler_cv": "std/mean of a micro-step"}) == [
        "Scenario.straggler_cv"]
    assert _unitless({"Scenario.straggler_cv": "a ratio: std / mean"}) == []
    assert _unitless({"Hardware.peak_tflops": ""}) == []  # the unit in the name
    assert _unitless({"Jitter.slow_rank": "the rank's"}) == ["Jitter.slow_rank"]  # no stray 's'


def test_schema_prints_a_ratio_as_a_ratio(capsys):
    code, out, _ = run_cli(capsys, ["schema", "scenario"])
    assert code == 0
    cv = json.loads(out)["properties"]["straggler_cv"]["description"]
    assert "(a ratio: std / mean of a time or speed)" in cv


# --- --json output: a key without a unit in its name is in README's table of units -----------

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_SUFFIX = re.compile(r"_(s|bytes|GBps|gib|usd|per_s|pct|per_[a-z_]+)$", re.I)
JSON_COMMANDS = [
    ["predict", "--workload", "llama3-8b", "--devices", "8,16", "--tp", "2", "--pp", "2", "--json"],
    ["plan", "--workload", "llama3-8b", "--devices", "16,32", "--global-batch", "64", "--json"],
    ["sweep", "--workload", "llama3-8b", "--devices", "16", "--pp-values", "1,2", "--format",
     "json"],
    ["decide", "--devices", "16", "--json"],
    ["goal", "--workload", "gpt-1.7b", "--train-samples", "2e7", "--deadline", "30d",
     "--budget", "5000000", "--max-devices", "64", "--json"],
]


def _readme_unit_keys() -> set[str]:
    """The keys README's '| unit | `--json` keys |' table names."""
    text = (ROOT / "README.md").read_text()
    table = text.split("| unit | `--json` keys |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", table))


def _number_keys(value, out: set[str]) -> set[str]:
    """Every key of ``value`` (nested) that holds a number."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                out.add(key)
            _number_keys(item, out)
    elif isinstance(value, list):
        for item in value:
            _number_keys(item, out)
    return out


def test_every_number_key_of_json_output_has_its_unit_said(capsys):
    documented = _readme_unit_keys()
    assert {"micro_batch", "efficiency", "speedup", "servers"} <= documented
    for argv in JSON_COMMANDS:
        code, out, err = run_cli(capsys, argv)
        assert code == 0, err
        keys = _number_keys(json.loads(out), set())
        assert [k for k in sorted(keys) if not OUTPUT_SUFFIX.search(k) and k not in documented] \
            == [], argv[0]
