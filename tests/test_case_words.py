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
    # 5 cases read, of which 'one_point' is its anchor alone: it scores no point, so the
    # summary counts the 4 with a scored point (session 60; it counted all 5)
    assert report["summary"]["all"]["cases"] == 4 and report["summary"]["all"]["points"] == 20
    assert len(report["cases"]) == 5


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


# ------------------------------------------ session 60: counts, units and words users write

def _shipped(name: str, case_id: str) -> dict:
    data = json.loads(Path(validation_path(name)).read_text())
    return next(c for c in data["cases"] if c["id"] == case_id)


def _write(tmp_path, fmt: str, cases: list[dict]) -> Path:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"format": fmt, "cases": cases}))
    return path


DP = "scalesim-validation-cases/1"
BERT = ("cases.json", "dle_pyt_bert_large_multinode_dgxa100_80g_seq512_tf32")


def test_counts_written_as_text_or_decimals_get_the_defaults_integers_get(tmp_path, capsys):
    """The reader takes '16' and 16.0 as counts; the defaults for a point's nodes, the server
    size and the network acted on JSON integers only, so such a case was refused ('points.0.nodes:
    missing') or lost its multi-node points. Each spelling now predicts as the integers do."""
    base = _shipped(*BERT)
    per_server = base["hardware"]["gpus_per_node"]
    variants = {"ints": lambda d: d, "text": str, "floats": float}
    cases = []
    for name, spell in variants.items():
        case = json.loads(json.dumps(base))
        case["id"] = name
        for p in case["points"]:
            p["devices"] = spell(p["devices"])
            del p["nodes"]
        cases.append(case)
    gpn_text = json.loads(json.dumps(base))
    gpn_text["id"] = "server_size_from_text_nodes"
    gpn_text["hardware"]["gpus_per_node"] = None
    for p in gpn_text["points"]:
        p["devices"], p["nodes"] = str(p["devices"]), f"{p['nodes']}.0"
    cases.append(gpn_text)
    code, report, _ = _report(capsys, _write(tmp_path, DP, cases))
    assert code == 0 and report["skipped"] == []
    got = {c["id"]: _points(c) for c in report["cases"]}
    assert got["text"] == got["floats"] == got["ints"] == got["server_size_from_text_nodes"]
    assert len(got["ints"]) == len(base["points"]) and per_server == 8
    flags = " | ".join(next(c for c in report["cases"] if c["id"] == "text")["flags"])
    assert "points.1.nodes not stated: " in flags


def test_an_ethernet_written_with_its_rate_is_ethernet(tmp_path, capsys):
    """'100GbE' fell through to the InfiniBand default (0.96 of line rate where NCCL's sockets
    get 0.544): any '<rate>GbE' or 'Ethernet' word is ethernet; 'RoCE over 100GbE' is roce."""
    base = _shipped(*BERT)
    cases = []
    for kind in ("ethernet", "100GbE", "25 GbE", "10 Gigabit Ethernet", "roce",
                 "RoCE over 100GbE"):
        case = json.loads(json.dumps(base))
        case["id"], case["hardware"]["inter_node"]["kind"] = kind, kind
        cases.append(case)
    code, report, _ = _report(capsys, _write(tmp_path, DP, cases))
    assert code == 0
    got = {c["id"]: _points(c) for c in report["cases"]}
    assert got["100GbE"] == got["25 GbE"] == got["10 Gigabit Ethernet"] == got["ethernet"]
    assert got["RoCE over 100GbE"] == got["roce"] != got["ethernet"]


def test_a_step_time_in_ms_written_as_text_is_read_as_seconds(tmp_path, capsys):
    case = _shipped("parallel_cases.json", "torchtitan_llama31_8b_fsdp8_eager")
    number = json.loads(json.dumps(case))
    number["id"] = "number"
    step_s = 8192 / case["measured"]["value"]  # the anchor's tokens/s per GPU at 8,192 a step
    number["measured"] = {**case["measured"], "metric": "step_time_ms", "value": step_s * 1e3}
    text = json.loads(json.dumps(number))
    text["id"], text["measured"]["value"] = "text", f"{step_s * 1e3:.6f}"
    text["anchor"] = False  # the same run predicted from its group's anchor, 'number'
    path = _write(tmp_path, "scalesim-parallel-cases/1", [number, text])
    code, out, err = run_cli(capsys, ["validate", str(path), "--json"])
    assert code == 0, err
    report = json.loads(out)
    got = {c["id"]: c for c in report["cases"]}
    assert got["text"]["metric"] == "step_time_s"
    assert got["text"]["published"] == pytest.approx(step_s)
    assert got["text"]["predicted"] == pytest.approx(got["number"]["predicted"])


def test_an_unlisted_gpus_link_is_called_the_default_not_its_usual_server(tmp_path, capsys):
    base = _shipped(*BERT)
    case = json.loads(json.dumps(base))
    case["hardware"]["gpu"], case["hardware"]["intra_node"] = "AMD Instinct MI300X", "xGMI"
    code, report, _ = _report(capsys, _write(tmp_path, DP, [case]))
    flags = " | ".join(report["cases"][0]["flags"])
    assert "pcie4 assumed, the default for a GPU whose server scalesim does not list" in flags
    assert "usual server" not in flags
    assert server_link_of("AMD Instinct MI300X", 8) == "pcie4"  # the value is unchanged


def test_an_anchor_the_model_cannot_reach_says_its_error_in_the_text_too(tmp_path, capsys):
    """The JSON gave an unreachable anchor its error (-99.9 %); the table said only 'anchor'."""
    base = _shipped(*BERT)
    case = json.loads(json.dumps(base))
    case["workload"]["params"] = 1e13  # its exchange alone is far slower than the anchor's step
    path = _write(tmp_path, DP, [case])
    code, report, _ = _report(capsys, path)
    anchor = report["cases"][0]["points"][0]
    assert anchor["anchor"] and anchor["error_pct"] < -50
    code, out, _ = run_cli(capsys, ["validate", str(path)])
    assert f"anchor not reached: predicted {anchor['predicted']:.4g} against " in out
    assert f"({anchor['error_pct']:+.1f}%; see the flag)" in out
    code, out, _ = run_cli(capsys, ["validate"])  # the shipped anchors are all reached
    assert "anchor not reached" not in out


def test_a_case_with_no_readable_server_size_says_either_field_fixes_it(tmp_path, capsys):
    case = json.loads(json.dumps(_shipped(*BERT)))
    case["id"] = "both_missing"
    del case["hardware"]["gpus_per_node"]
    for p in case["points"]:
        del p["nodes"]
    code, report, _ = _report(capsys, _write(tmp_path, DP, [case, _shipped(*BERT)]))
    (skipped,) = report["skipped"]
    assert skipped["id"] == "both_missing"
    assert "give hardware.gpus_per_node (a whole number of GPUs per server) or each point's " \
           "nodes: either fills in the other" in skipped["reason"]
