"""Published cases written with other spellings or nulls (scalesim/case_words.py) are predicted,
flagged, as the same case in the formats' own names; a value no reader knows is refused for its
case alone. Fixtures: synthetic variants of shipped cases (tests/fixtures/case_words/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import run_cli

from scalesim.case_words import DP_WORDS, PC_WORDS, read_words, server_link_of
from scalesim.shipped import validation_path

FIXTURES = Path(__file__).parent / "fixtures" / "case_words"
DP_FILE = FIXTURES / "dp_variants.json"
PC_FILE = FIXTURES / "pc_variants.json"


def _report(capsys, path: Path) -> tuple[int, dict, str]:
    code, out, err = run_cli(capsys, ["validate", str(path), "--json"])
    return code, json.loads(out), err


def _points(case: dict) -> list[tuple[int, float]]:
    return [(p["devices"], p["predicted"]) for p in case["points"]]


@pytest.mark.parametrize("name", ["cases.json", "parallel_cases.json", "collected_dp_cases.json",
                                  "collected_parallel_cases.json", "collected_ps_cases.json"])
def test_shipped_cases_read_unchanged_without_flags(name):
    data = json.loads(Path(validation_path(name)).read_text())
    words = PC_WORDS if data["format"] == "scalesim-parallel-cases/1" else DP_WORDS
    for case in data["cases"]:
        read, flags = read_words(case, words)
        assert (read, flags) == (case, []), case["id"]


def test_dp_spellings_and_nulls_predict_as_the_canonical_case(capsys):
    code, report, err = _report(capsys, DP_FILE)
    assert code == 0 and "Traceback" not in err
    cases = {c["id"]: c for c in report["cases"]}
    base = cases["dle_pyt_bert_large_multinode_dgxa100_80g"]
    assert _points(cases["spelled"]) == _points(base)
    assert _points(cases["nulls"]) == pytest.approx(_points(base), rel=1e-12)
    spelled = " | ".join(cases["spelled"]["flags"])
    for said in ("'InfiniBand' read as the format's 'infiniband'", "'FP16' read as the format's "
                 "'fp16-mixed'", "'All-Reduce' read as the format's 'allreduce'",
                 "'NVSwitch-A100' read as the format's 'nvswitch-a100'"):
        assert said in spelled
    nulls = " | ".join(cases["nulls"]["flags"])
    for said in ("hardware.intra_node not stated: nvswitch-a100 assumed", "gpus_per_node not "
                 "stated: 8 assumed", "nics_per_node not stated: 8 assumed", "gbit_per_nic not "
                 "stated: 200 Gb/s assumed", "points.1.nodes not stated: 2 assumed",
                 "comm not stated: allreduce assumed"):
        assert said in nulls
    assert "'fp8' read as the format's 'bf16-mixed'" in " ".join(cases["fp8_on_h100"]["flags"])
    assert "only the anchor point" in " ".join(cases["one_point"]["flags"])


def test_dp_value_no_reader_knows_refuses_its_case_only(capsys):
    code, report, err = _report(capsys, DP_FILE)
    assert code == 0
    assert [s["id"] for s in report["skipped"]] == ["int8"]
    assert "workload.precision" in report["skipped"][0]["reason"]
    assert report["summary"]["all"]["cases"] == 5 and report["summary"]["all"]["points"] == 20


def test_pc_spellings_and_nulls_predict_as_the_canonical_case(capsys):
    code, report, err = _report(capsys, PC_FILE)
    assert code == 0 and "Traceback" not in err
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["spelled"]["predicted"] == cases["narayanan2021_t1_3p6b"]["predicted"]
    flags = " | ".join(cases["spelled"]["flags"])
    for said in ("anchor not stated: false assumed", "'IB' read as the format's 'infiniband'",
                 "'uniform' read as the format's 'full'", "measured.mfu 45 read as a percentage",
                 "layout.cp null: 1 assumed"):
        assert said in flags
    # a step time in ms is that time in s: the same step the model predicts for the case
    step = cases["step_ms"]
    assert step["metric"] == "step_time_s" and step["published"] == pytest.approx(12.345)
    assert step["predicted"] == pytest.approx(cases["narayanan2021_t1_3p6b"]["step_time_s"])
    assert [s["id"] for s in report["skipped"]] == ["fp8_on_a100"]


@pytest.mark.parametrize("gpu, per_node, link", [
    ("H100 SXM5 80GB", 8, "nvswitch-h100"), ("H100 PCIe", 8, "pcie5"), ("H100 NVL", 2, "pcie5"),
    ("A100-SXM4-40GB", 8, "nvswitch-a100"), ("A100 80GB PCIe", 4, "pcie4"),
    ("Tesla V100-SXM2-16GB", 8, "nvlink2"), ("Tesla V100-SXM3-32GB", 16, "nvswitch-v100"),
    ("Tesla P100-SXM2", 8, "nvlink1"), ("GB200", 72, "nvl72-gb200"), ("B200", 8, "nvl72-gb200"),
    ("Tesla T4", 4, "pcie3"), ("NVIDIA L4", 8, "pcie4"), ("L40S", 8, "pcie4"), ("TPU v4", 4, "pcie4"),
])
def test_server_link_of_a_gpu(gpu, per_node, link):
    assert server_link_of(gpu, per_node) == link


def test_unknown_intra_word_names_what_was_assumed():
    case = {"hardware": {"gpu": "A100-SXM4-80GB", "gpus_per_node": 8, "intra_node": "pcie"}}
    read, flags = read_words(case, DP_WORDS)
    assert read["hardware"]["intra_node"] == "pcie4"
    assert any("hardware.intra_node 'pcie'" in f and "the PCIe generation of GPU" in f for f in flags)
    assert case["hardware"]["intra_node"] == "pcie"  # the caller's dict is not changed


@pytest.mark.parametrize("mfu, read, said", [(52, 0.52, "measured.mfu 52 read as a percentage"),
                                             (-1, None, "measured.mfu -1 is not a share")])
def test_an_mfu_outside_0_1_does_not_sink_its_case(mfu, read, said):
    """measured.mfu is never used by the model: a percentage is read as its share, any other
    value outside 0-1 ignored, flagged (it refused the case before session 44)."""
    case = json.loads(PC_FILE.read_text())["cases"][1]
    case["measured"]["mfu"] = mfu
    got, flags = read_words(case, PC_WORDS)
    assert got["measured"]["mfu"] == read and any(f.startswith(said) for f in flags)
