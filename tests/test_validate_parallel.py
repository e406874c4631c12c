"""Validation against published model-parallel runs (scalesim-parallel-cases/1)."""

import copy
import json
from pathlib import Path

import pytest
from cli_harness import computed_once

from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.validate_parallel import parse_parallel_cases, validate_parallel_cases

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = [ROOT.parent / "shared", ROOT.parents[1] / "shared",
              ROOT / "scalesim" / "data"]
PARALLEL_CASES = next((c / "validation" / "parallel_cases.json" for c in CANDIDATES
                       if (c / "validation" / "parallel_cases.json").exists()),
                      CANDIDATES[0] / "validation" / "parallel_cases.json")


@pytest.fixture(scope="module")
def raw():
    return json.loads(PARALLEL_CASES.read_text())


_VALIDATE_ONCE = computed_once(validate_parallel_cases, {})  # this module's reports


def _validated_once(cases, skipped=()):
    """``validate_parallel_cases`` of ``cases`` computed once in this module (a deep copy each
    call): the shipped file's report serves the fixture, the CLI's text and --json and the
    table script, which predicted its 86 cases again each (a few seconds a time)."""
    return _VALIDATE_ONCE(list(cases), list(skipped))


@pytest.fixture
def validated_once(monkeypatch):
    """The CLI's and the table script's validations read ``_validated_once`` in this test."""
    import scalesim.validate_parallel as vp

    monkeypatch.setattr(vp, "validate_parallel_cases", _validated_once)


@pytest.fixture(scope="module")
def report(raw):
    return _validated_once(parse_parallel_cases(raw))


def _skipped_alone(capsys, path, case_id, rc: int = 0) -> str:
    """``scalesim validate path --json`` predicts every case but ``case_id`` (exit 0, one stderr
    line; ``rc`` 2 where no other case is left to score, session 31); the one-line reason it
    gives for that case (session 15: a case the reader refuses is skipped, not the file)."""
    assert main(["validate", str(path), "--json"]) == rc
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert len(err.strip().splitlines()) == 1 and "1 of" in err and "not predicted" in err, err
    (skip,) = report["skipped"]
    assert skip["id"] == case_id and report["summary"]["skipped_cases"] == 1
    assert case_id not in {c["id"] for c in report["cases"]} and report["cases"]
    assert "\n" not in skip["reason"] and f"case {case_id!r}" in skip["reason"]
    return skip["reason"]


def test_cli_detects_the_format_and_prints_the_promised_json(capsys, raw, validated_once):
    assert main(["validate", str(PARALLEL_CASES), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["cases"]) == len(raw["cases"])
    need = {"id", "group", "anchor", "metric", "published", "predicted", "error_pct"}
    assert all(need <= set(c) for c in out["cases"])
    s = out["summary"]["all"]
    assert s["cases"] == sum(1 for c in raw["cases"] if not c["anchor"])
    assert {"mean_abs_pct", "median_abs_pct", "max_abs_pct"} <= set(s)


def test_text_report(capsys, validated_once):
    assert main(["validate", str(PARALLEL_CASES)]) == 0
    text = capsys.readouterr().out
    assert "per group" in text and "targets:" in text and "anchor" in text


def test_anchors_are_reproduced_and_others_predicted(report):
    for c in report.cases:
        if c.anchor:
            assert abs(c.error_pct) < 1e-6
        assert c.predicted > 0 and c.step_time_s > 0
        assert sum(c.breakdown_s.values()) == pytest.approx(c.step_time_s)
    assert all(0.02 < e <= 1 for e in report.summary["efficiency"].values())


def test_accuracy_does_not_regress(report):
    # the figures recorded in docs/validation.md, with a little room
    s = report.summary["all"]
    assert s["median_abs_pct"] <= 6.0
    assert s["mean_abs_pct"] <= 8.0


def test_anchor_rule_is_enforced(raw):
    data = copy.deepcopy(raw)
    data["cases"][1]["anchor"] = True  # a second anchor in narayanan2021_table1
    with pytest.raises(ScalesimError, match="2 anchor cases"):
        parse_parallel_cases(data)
    data = copy.deepcopy(raw)
    data["cases"][0]["layout"]["devices"] = 33
    with pytest.raises(ScalesimError, match="devices 33 != dp 32"):
        parse_parallel_cases(data)


def test_file_level_errors_name_the_problem(raw):
    with pytest.raises(ScalesimError, match="expected a JSON object"):
        parse_parallel_cases([raw])
    with pytest.raises(ScalesimError, match="parallel_cases.md"):
        parse_parallel_cases({**raw, "format": "scalesim-parallel-cases/0"})
    with pytest.raises(ScalesimError, match="unknown top-level field 'note'"):
        parse_parallel_cases({**raw, "note": "x"})
    data = copy.deepcopy(raw)
    data["cases"][1]["id"] = data["cases"][0]["id"]
    with pytest.raises(ScalesimError, match="id used twice"):
        parse_parallel_cases(data)


def test_nulls_get_defaults_and_flags(raw):
    data = copy.deepcopy(raw)
    case = next(c for c in data["cases"] if c["group"] == "mbridge_2511_dgx_h100" and c["anchor"])
    assert case["layout"]["recompute"] is None
    r = validate_parallel_cases(parse_parallel_cases({"format": data["format"], "cases": [case]}))
    assert any("recompute unknown" in f for f in r.cases[0].flags)


def test_wrong_format_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "scalesim-parallel-cases/1", "cases": []}))
    assert main(["validate", str(bad)]) == 2
    assert "non-empty list" in capsys.readouterr().err


def _table_script():
    import importlib.util

    path = ROOT / "benchmarks" / "parallel_validation_accuracy.py"
    spec = importlib.util.spec_from_file_location("parallel_validation_accuracy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_script_renders_every_case_and_rewrites_only_between_markers(report, tmp_path,
                                                                           validated_once):
    script = _table_script()
    body = script.render(report, "parallel_cases.json", 1.0)
    rows = [line for line in body.splitlines() if line.startswith("| ") and "_" in line]
    for c in report.cases:
        row = next(r for r in rows if r.startswith(f"| {c.id} |"))
        assert row.endswith("| anchor |") if c.anchor else f"{c.error_pct:+.1f}%" in row
    a = report.summary["all"]
    assert f"**{a['median_abs_pct']:.1f}%**" in body and f"| **all** | {a['cases']} |" in body
    doc = tmp_path / "doc.md"
    begin, end = (f"<!-- {script.MARKER}:{edge} -->" for edge in ("begin", "end"))
    doc.write_text(f"before\n{begin}\nold table\n{end}\nafter\n")
    assert script.main([str(PARALLEL_CASES), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old table" not in text
    assert "| **all** |" in text
    # another pair of markers (the collected runs' table): only that pair's text is rewritten
    doc.write_text(f"{begin}\nkept\n{end}\n<!-- other:begin -->\nold\n<!-- other:end -->\n")
    assert script.main([str(PARALLEL_CASES), "--doc", str(doc), "--marker", "other"]) == 0
    text = doc.read_text()
    assert "kept" in text and "\nold\n" not in text and text.count("| **all** |") == 1


def test_device_memory_from_the_name_or_the_datasheet():
    from scalesim.figures import GIB_BYTES
    from scalesim.presets import device_memory_of

    assert device_memory_of("A100 40GB (table GPU column 'a100_40gb')")[0] == 40 * GIB_BYTES
    assert device_memory_of("H100 SXM 96GB HBM2e, 500W power limit")[0] == 96 * GIB_BYTES
    assert device_memory_of("H100 (DGX-H100)")[0] == 80 * GIB_BYTES
    assert device_memory_of("GB200 (DGX-GB200)")[0] == 186 * GIB_BYTES  # 13.4 TB / 72
    assert device_memory_of("A100") is None  # sold as 40 GB and 80 GB: needs the size


def test_a_layout_that_cannot_fit_the_device_is_flagged(raw):
    # Llama 3 70B at 8192 tokens, micro-batch 2, no recompute, FSDP over 64 GB200: one layer
    # keeps about 35.5 sbh bytes = 35.5 x 8192 x 2 x 8192 = 4.8 GB, 80 layers 381 GB > 186 GB
    case = next(c for c in raw["cases"] if c["id"] == "mbridge_2511_gb200_llama3_70b")
    r = validate_parallel_cases(parse_parallel_cases({"format": raw["format"], "cases": [
        {**case, "anchor": True}]})).cases[0]
    assert not r.fits and r.memory_gib > 350
    assert any("exceeds the device's 186 GiB" in f for f in r.flags)
    fitting = next(c for c in raw["cases"] if c["id"] == "llmfoundry_a100_40gb_7b_s2048_8gpu")
    r = validate_parallel_cases(parse_parallel_cases({"format": raw["format"], "cases": [
        fitting]})).cases[0]
    assert r.fits and not any("exceeds" in f for f in r.flags)


def test_the_planners_default_efficiency_is_the_anchors_median(report):
    """plan.DEFAULT_MATMUL_EFFICIENCY cites the median of the sustained matmul efficiencies the
    anchors of these runs pin (docs/model.md §13); a model change that moves the anchors must
    move it too. One efficiency per system group, as each group's anchor pins it."""
    import statistics

    from scalesim.plan import DEFAULT_MATMUL_EFFICIENCY

    per_group = {case.group: case.efficiency for case in report.cases}
    assert len(per_group) >= 5
    assert abs(DEFAULT_MATMUL_EFFICIENCY - statistics.median(per_group.values())) <= 0.005


@pytest.mark.parametrize("change, says", [
    ({"layout": {"global_batch": 7}}, "global batch 7 is not divisible by dp 32 x micro-batch 16"),
    # 3 heads (not 7): hidden 3072 must split into whole heads too (schemas.check_heads, session 10)
    ({"model": {"heads": 3, "kv_heads": 3}}, "heads 3 are not divisible by tp 2"),
])
def test_a_layout_no_framework_runs_is_refused(tmp_path, capsys, raw, change, says):
    """A user's case with a global batch that dp x micro-batch does not divide (7 against 32 x
    16) was predicted at a fraction of a micro-batch per replica (step 0.09 s, error -44%); 7
    heads over tp 2 at 3.5 heads per rank (+30%). Megatron-Core asserts both; the case is
    refused in one line naming the rule (session 15: skipped with it, the file predicted).
    Placement rules (a rack not filled whole) stay notes."""
    data = copy.deepcopy(raw)
    case = next(c for c in data["cases"] if c["id"] == "narayanan2021_t1_3p6b")
    assert (case["layout"]["dp"], case["layout"]["tp"], case["layout"]["micro_batch"]) == (32, 2, 16)
    for part, values in change.items():
        case[part].update(values)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    reason = _skipped_alone(capsys, path, "narayanan2021_t1_3p6b")
    assert says in reason and "no framework runs" in reason


def test_a_global_batch_that_fills_the_micro_batches_unevenly_is_predicted_with_a_note(raw):
    """llm-foundry's microbatching runs a global batch that dp x micro-batch does not divide
    (its README: 48 at micro-batch 11 is 11, 11, 11, 11, 4): such a case is predicted as
    published (the same tokens per step), with a layout note, and the file still validates;
    only fewer than one micro-batch per replica is refused (above)."""
    data = copy.deepcopy(raw)
    case = next(c for c in data["cases"] if c["id"] == "narayanan2021_t1_3p6b")
    case["layout"]["global_batch"] = 32 * 16 * 3 + 100  # dp 32 x micro-batch 16, 3.2 times
    report = validate_parallel_cases(parse_parallel_cases(data))
    r = next(x for x in report.cases if x.id == case["id"])
    assert any("not divisible by dp 32 x micro-batch 16" in f for f in r.flags), r.flags
    assert r.predicted > 0 and len(report.cases) == len(data["cases"])


@pytest.mark.parametrize("content", [{}, {"format": "scalesim-parallel-cases/0", "cases": []},
                                     {"format": "x\ny", "cases": [1]}])
def test_a_file_of_no_known_format_names_both_formats(tmp_path, capsys, content):
    """`validate mine.json` with no or another format said `expected
    'scalesim-validation-cases/1'` alone, also with --parallel: the model-parallel format,
    which validate reads as well, went unnamed."""
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(content))
    for extra in ([], ["--parallel"]):
        assert main(["validate", str(path), *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert "'scalesim-validation-cases/1'" in err and "'scalesim-parallel-cases/1'" in err


def test_parallel_with_a_data_parallel_file_is_refused(tmp_path, capsys, validated_once):
    """`validate --parallel cases.json` (a data-parallel file) ran the data-parallel validation
    without a word: --parallel only picks the shipped file. One line says so now."""
    from scalesim.shipped import validation_path

    assert main(["validate", str(validation_path("cases.json")), "--parallel"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "--parallel" in err and "drop --parallel" in err, err
    assert main(["validate", str(PARALLEL_CASES), "--parallel", "--json"]) == 0  # its own kind
    capsys.readouterr()


def _torchtitan_pair(raw, **hardware):
    data = copy.deepcopy(raw)
    data["cases"] = [c for c in data["cases"] if c["group"] == "torchtitan_h100_202412_bf16_eager"]
    for case in data["cases"]:
        case["hardware"].update(hardware)
    return data


def test_a_gpu_no_datasheet_lists_is_predicted_with_a_nominal_peak_not_refused(raw):
    """A case file naming a GPU the datasheet tables lack (here 'Gaudi3') failed as a whole ("no
    datasheet peak"); its group's anchor pins the efficiency against any peak, so it is predicted
    at a nominal 1,000 TFLOP/s and 4,000 GB/s (1,000 / 250 FLOP per byte), flagged."""
    from scalesim.validate_parallel import UNLISTED_FLOP_PER_BYTE, UNLISTED_PEAK_TFLOPS

    report = validate_parallel_cases(parse_parallel_cases(_torchtitan_pair(raw, gpu="Gaudi3")))
    case = next(c for c in report.cases if not c.anchor)
    assert case.predicted > 0
    assert any(f"nominal {UNLISTED_PEAK_TFLOPS:g} TFLOP/s" in f for f in case.flags)
    assert any(f"{UNLISTED_PEAK_TFLOPS * 1e3 / UNLISTED_FLOP_PER_BYTE:,.0f} GB/s" in f
               for f in case.flags)
    listed = validate_parallel_cases(parse_parallel_cases(_torchtitan_pair(raw, gpu="B200")))
    assert not any("datasheet" in f for c in listed.cases for f in c.flags)


def test_the_formats_nvlink_v100_is_the_presets_nvlink2(raw):
    """parallel_cases.md lists `nvlink-v100` (the V100 DGX-1's hybrid cube-mesh), which the
    presets call `nvlink2`: a case naming it was refused as an unknown link."""
    from scalesim.presets import intra_link
    from scalesim.validate_parallel import case_inputs

    data = _torchtitan_pair(raw, gpu="V100 SXM2 32GB", intra_node="nvlink-v100")
    case = parse_parallel_cases(data)[0]
    inputs, _ = case_inputs(case, [])
    assert float(inputs.intra_busbw_GBps) == intra_link("nvlink2").busbw_GBps


def test_a_published_case_may_write_a_number_as_text(raw):
    """scalesim's own files refuse a number in quotes (tests/test_json_input.py); a published-
    case file, transcribed by hand from others' tables, reads it as the number, so one quoted
    value does not stop the whole file: the same prediction as unquoted."""
    data = _torchtitan_pair(raw)
    quoted = copy.deepcopy(data)
    case = quoted["cases"][1]
    case["layout"]["global_batch"] = str(case["layout"]["global_batch"])
    case["measured"]["value"] = str(case["measured"]["value"])
    same = [validate_parallel_cases(parse_parallel_cases(d)).cases[1].predicted
            for d in (data, quoted)]
    assert same[0] == same[1]


def test_fp8_on_a_listed_gpu_without_fp8_is_refused_not_given_a_nominal_peak(tmp_path, capsys,
                                                                             raw):
    """The unlisted-GPU fallback (a nominal 1,000 TFLOP/s) also caught a GPU the datasheet table
    lists at 16-bit but without fp8 (A100: no fp8 tensor cores): an fp8 case on it was predicted
    at a nominal 2,000 TFLOP/s fp8 peak and its 16-bit attention core at 1,000 instead of the
    listed 312, where it had been refused as a case no GPU of that kind runs. It is refused
    again, in one line naming the case, the GPU and the precision (session 15: that case alone
    is skipped with that line; the rest of the file is predicted)."""
    data = _torchtitan_pair(raw, gpu="NVIDIA A100 80GB")
    (i,) = [i for i, c in enumerate(data["cases"]) if not c["anchor"]]
    data["cases"][i]["precision"] = "fp8"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    reason = _skipped_alone(capsys, path, data["cases"][i]["id"], rc=2)  # the anchor alone left
    assert "fp8" in reason and "A100" in reason and "nominal" not in reason


def test_a_global_batch_below_dp_is_refused_when_the_micro_batch_is_not_stated(raw):
    """Fewer than one sequence per data-parallel replica is refused with a stated micro-batch;
    with none stated (the default 1) the same case was predicted at a fraction of a
    micro-batch per replica."""
    data = copy.deepcopy(raw)
    case = next(c for c in data["cases"] if c["id"] == "narayanan2021_t1_3p6b")
    case["layout"]["micro_batch"] = None
    case["layout"]["global_batch"] = 16  # dp 32
    with pytest.raises(ScalesimError, match="global batch 16 is not divisible by dp 32 x "
                       "micro-batch 1.*no framework runs"):
        parse_parallel_cases(data)


@pytest.mark.parametrize("part, field, value, says", [
    ("model", "layers", 2**63, "layers"),
    ("model", "hidden", 10**20, "hidden"),
    ("model", "seq_len", 2**40, "seq_len"),
    ("model", "params", 1e308, "params"),
    ("model", "heads", 16384, "hidden 3072 is not divisible by heads 16384"),
    ("model", "kv_heads", 5, "heads 32 is not divisible by kv_heads 5"),
    ("layout", "global_batch", 10**20, "global_batch"),
    ("layout", "virtual_stages", 2**63, "virtual_stages"),
    ("layout", "ep", 2**63, "ep"),
    ("hardware", "gpus_per_node", 10**6, "gpus_per_node"),
    ("measured", "value", 1e308, "tflops_per_gpu"),
    ("measured", "value", 1e-300, "tflops_per_gpu"),
])  # an mfu of -1 or 52 (never used): ignored or read as a percentage, flagged (session 44)
def test_a_case_number_outside_the_bounds_table_is_refused(tmp_path, capsys, raw, part, field,
                                                           value, says):
    """Session 10: the model-parallel case format bounded its numbers by ``>= 1`` only, where the
    data-parallel one uses the bounds table: layers 2**63, a 1e20 hidden size or global batch,
    16384 heads on a hidden of 3072 (a fraction of a dimension per head) were predicted (a
    -100% error on an anchor that could not be matched); a published 1e308 TFLOP/s per GPU, and
    an mfu of -1 or 52 (a percentage), passed. Each is one line naming the case and field (session
    15: the reason that case is skipped with; the rest of the file is predicted)."""
    data = copy.deepcopy(raw)
    case = next(c for c in data["cases"] if c["id"] == "narayanan2021_t1_3p6b")
    assert (case["model"]["hidden"], case["model"]["heads"]) == (3072, 32)
    case[part][field] = value
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    assert says in _skipped_alone(capsys, path, "narayanan2021_t1_3p6b")


def test_a_case_gpu_whose_stated_memory_is_odd_is_read_and_flagged_never_refused(raw):
    """Session 14: a case's 'H100 80GiB' was predicted with no memory (the tables read "80GB"),
    without a word; refusing it (as ``--gpu`` does) would stop a whole file of published runs
    over one name's spelling. It is read as the GB it means (``presets.gb_spelling``), and an
    odd size ('H100 80GB 94GB', 'H100 64GB') is flagged and predicted as the tables read it."""
    def run(gpu):
        report = validate_parallel_cases(parse_parallel_cases(_torchtitan_pair(raw, gpu=gpu)))
        return next(c for c in report.cases if not c.anchor)

    plain = run("H100 80GB")
    for spelling in ("H100 80GiB", "H100 80G", "H100 81920 MiB"):
        case = run(spelling)
        assert case.predicted == plain.predicted
        assert any(f"'{spelling}' states its memory in another unit than GB: read as "
                   "'H100 80GB'" in f for f in case.flags), case.flags
    for odd, words in (("H100 80GB 94GB", "more than one memory size"),
                       ("H100 64GB", "sold with 80, 94, 96 GB")):
        case = run(odd)
        assert case.predicted > 0 and any(words in f for f in case.flags), case.flags
    assert not any("memory" in f and "hardware.gpu" in f for f in plain.flags)


# ---------------------------------------------------------------------------- session 15: per case
def _validate_json(capsys, tmp_path, data, name="mine.json"):
    """(rc, report or None, stderr lines) of ``scalesim validate FILE --json`` on ``data``."""
    path = tmp_path / name
    path.write_text(json.dumps(data))
    rc = main(["validate", str(path), "--json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out else None), err.strip().splitlines()


def _bad_copy(data, case_id="bad", **changes):
    """A copy of the pair's non-anchor case under ``case_id``, ``changes`` applied by dotted path."""
    case = copy.deepcopy(next(c for c in data["cases"] if not c["anchor"]))
    case["id"] = case_id
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = case
        for part in parents:
            node = node[part]
        node[leaf] = value
    return case


@pytest.mark.parametrize("changes, says", [
    ({"hardware__intra_node": 7}, "field 'hardware.intra_node'"),
    ({"trust": 5}, "field 'trust'"),
    ({"notes": 7}, "field 'notes'"),
    ({"group": None}, "field 'group'"),
    ({"hardware__inter_node__kind": 7}, "field 'hardware.inter_node.kind'"),
    ({"precision": "fp4"}, "field 'precision'"),
    ({"measured__value": None}, "field 'measured.value'"),
    ({"layout__devices": 64}, "devices 64 != dp 128 x tp 1"),
    ({"layout__dp": 32, "layout__tp": 3, "layout__devices": 96}, "not divisible by tp 3"),
])
def test_one_unreadable_case_is_skipped_with_its_reason_and_the_rest_predicted(
        tmp_path, capsys, raw, changes, says, validated_once):
    """Session 15: one case the reader refuses stopped the whole file (exit 2, nothing
    validated). It is skipped alone with the one-line reason the refusal gives when it is the
    file's only refused case; the others are predicted exactly as without it."""
    pair = _torchtitan_pair(raw)
    rc, alone, _ = _validate_json(capsys, tmp_path, pair, "pair.json")
    assert rc == 0 and alone["skipped"] == [] and alone["summary"]["skipped_cases"] == 0
    with_bad = {**pair, "cases": [*pair["cases"], _bad_copy(pair, **changes)]}
    rc, report, err = _validate_json(capsys, tmp_path, with_bad)
    assert rc == 0
    assert err == ['scalesim validate: 1 of 3 cases not predicted (see "skipped" in the report; '
                   'the summary leaves them out)']
    (skip,) = report["skipped"]
    assert skip["id"] == "bad" and says in skip["reason"] and "case 'bad'" in skip["reason"]
    with pytest.raises(ScalesimError) as refused:
        parse_parallel_cases(with_bad, str(tmp_path / "mine.json"))  # the strict reader
    assert str(refused.value) == skip["reason"]
    assert report["cases"] == alone["cases"]
    assert report["summary"]["all"] == alone["summary"]["all"]
    assert report["summary"]["skipped_cases"] == 1


def test_an_unknown_field_is_ignored_and_flagged_and_the_case_predicted(tmp_path, capsys, raw,
                                                                       validated_once):
    pair = _torchtitan_pair(raw)
    rc, alone, _ = _validate_json(capsys, tmp_path, pair, "pair.json")
    pair["cases"][1]["url"] = "https://example.org"
    pair["cases"][1]["hardware"]["inter_node"]["fabric"] = "RDMA"
    rc, report, err = _validate_json(capsys, tmp_path, pair)
    assert rc == 0 and err == [] and report["skipped"] == []
    got, was = report["cases"][1], alone["cases"][1]
    assert got["predicted"] == was["predicted"]
    assert got["flags"] == ["unknown fields ignored (not in the format): "
                            "hardware.inter_node.fabric, url", *was["flags"]]  # file order


def test_an_unreadable_anchor_skips_its_group_and_says_so(tmp_path, capsys, raw):
    """No other case is made the anchor: the group's other cases are skipped, their reason
    naming the unread anchor; the other groups are predicted."""
    data = copy.deepcopy(raw)
    anchor = next(c for c in data["cases"] if c["group"] == "narayanan2021_table1" and c["anchor"])
    anchor["notes"] = 7
    group = [c["id"] for c in data["cases"] if c["group"] == "narayanan2021_table1"]
    rc, report, err = _validate_json(capsys, tmp_path, data)
    assert rc == 0 and len(err) == 1 and f"{len(group)} of {len(data['cases'])} cases" in err[0]
    assert [s["id"] for s in report["skipped"]] == group
    assert "field 'notes'" in report["skipped"][0]["reason"]
    for skip in report["skipped"][1:]:
        assert (f"group 'narayanan2021_table1' has its anchor case {anchor['id']!r} unread"
                in skip["reason"]) and "not predicted" in skip["reason"]
    assert len(report["cases"]) == len(data["cases"]) - len(group)
    assert "narayanan2021_table1" not in report["summary"]["groups"]
    data["cases"][1]["anchor"] = True  # readable again, with a second anchor: the rule's line
    anchor["notes"] = ""
    rc, report, err = _validate_json(capsys, tmp_path, data)
    assert rc == 0 and [s["id"] for s in report["skipped"]] == group
    assert [s["reason"] for s in report["skipped"]] == [
        f"{tmp_path / 'mine.json'}: case {i!r}: group 'narayanan2021_table1' has 2 anchor cases; "
        "the anchor rule needs exactly one" for i in group]


def test_an_anchor_whose_group_is_not_text_leaves_its_group_without_an_anchor(tmp_path, capsys,
                                                                              raw):
    pair = _torchtitan_pair(raw)
    pair["cases"].append(_bad_copy(pair, "other", group="other"))
    anchor = next(c for c in pair["cases"] if c["anchor"])
    pair["cases"].append({**copy.deepcopy(anchor), "id": "odd", "group": ["other"]})
    rc, report, _ = _validate_json(capsys, tmp_path, pair)
    assert rc == 0 and len(report["cases"]) == 2
    assert [s["id"] for s in report["skipped"]] == ["odd", "other"]
    assert "group 'other' has 0 anchor cases" in report["skipped"][1]["reason"]


def test_a_file_whose_cases_none_can_be_predicted_is_refused_in_one_line(tmp_path, capsys, raw):
    pair = _torchtitan_pair(raw)
    anchor = next(c for c in pair["cases"] if c["anchor"])
    anchor["trust"] = 5  # the other case has no anchor left
    rc, report, err = _validate_json(capsys, tmp_path, pair)
    assert rc == 2 and report is None and len(err) == 1, err
    assert f"case {anchor['id']!r}: field 'trust'" in err[0] and "none of the 2 cases" in err[0]


# ---------------------------------------------------------------------------- session 15 review
def test_a_group_whose_anchor_the_model_cannot_reproduce_is_skipped_not_the_run(
        tmp_path, capsys, raw, monkeypatch):
    """Review of session 15: a readable anchor whose modelled metric is not finite ended in a
    traceback from the efficiency's root finder (ValueError), and a case whose inputs the model
    refused (a ScalesimError) stopped the whole file (exit 2). The anchor's group, or the one
    case, is skipped with its reason; the other groups are predicted; --json holds no NaN."""
    import scalesim.validate_parallel as vp

    data = copy.deepcopy(raw)
    group = [c["id"] for c in data["cases"] if c["group"] == "narayanan2021_table1"]
    anchor = next(c["id"] for c in data["cases"]
                  if c["group"] == "narayanan2021_table1" and c["anchor"])
    other = next(c["id"] for c in data["cases"] if c["group"] != "narayanan2021_table1"
                 and not c["anchor"])
    real_metric, real_inputs = vp.metric_of, vp.case_inputs

    def metric(case, inputs, result):
        return float("nan") if case.id == anchor else real_metric(case, inputs, result)

    def inputs(case, flags):
        if case.id == other:
            raise ScalesimError(f"case {case.id!r}: refused by the model")
        return real_inputs(case, flags)

    monkeypatch.setattr(vp, "metric_of", metric)
    monkeypatch.setattr(vp, "case_inputs", inputs)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "NaN" not in out and len(err.strip().splitlines()) == 1, err
    report = json.loads(out)
    skipped = {s["id"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {*group, other} and report["summary"]["skipped_cases"] == len(skipped)
    assert f"case {anchor!r}: the model gave a non-finite" in skipped[anchor]
    assert skipped[other] == f"case {other!r}: refused by the model"
    for case_id in set(group) - {anchor}:
        assert (f"group 'narayanan2021_table1' has its anchor case {anchor!r} not predicted"
                in skipped[case_id]), skipped[case_id]
    assert len(report["cases"]) == len(data["cases"]) - len(skipped)
    assert "narayanan2021_table1" not in report["summary"]["efficiency"]


def test_targets_are_neither_met_nor_missed_without_a_predicted_case(tmp_path, capsys, raw):
    """Review of session 15: a file whose groups are only their anchors (or whose other cases
    were all skipped) scored 'NOT met' on every target with no error to score; as the
    data-parallel summary, the targets are None and the text says there is nothing to score."""
    anchors = [c for c in raw["cases"] if c["anchor"]][:2]
    rc, report, _ = _validate_json(capsys, tmp_path, {"format": raw["format"], "cases": anchors})
    # nothing scored: exit 2 since session 31 (the report is still printed)
    assert rc == 2 and report["summary"]["all"]["cases"] == 0
    assert {k: v for k, v in report["summary"]["targets"].items() if k.endswith("_met")} == {
        "median_met": None, "mean_met": None, "max_met": None}
    assert main(["validate", str(tmp_path / "mine.json")]) == 2
    text = capsys.readouterr().out
    assert "NOT met" not in text and "targets: no non-anchor case predicted to score" in text
    report = _validated_once(parse_parallel_cases(raw))  # the shipped file's: the fixture's
    assert all(isinstance(report.summary["targets"][k], bool)
               for k in ("median_met", "mean_met", "max_met"))


def test_params_far_from_the_shape_are_flagged_and_the_shape_predicts(raw):
    """Session 16: model.params was never read, so a mixture of experts (Mixtral 8x7B: 46.7 B
    parameters on a 7 B shape; the format has no expert fields) was predicted as dense without a
    word. A gap over 25% is flagged; the prediction (from the shape) is unchanged. A nominal
    label (Llama 3 '8B' for 8.03 B) is not flagged."""
    group = [c for c in raw["cases"] if c["group"] == "narayanan2021_table1"]
    other = copy.deepcopy(group)
    target = next(c for c in other if not c["anchor"])
    target["model"]["params"] *= 6.5
    plain = validate_parallel_cases(parse_parallel_cases({**raw, "cases": group}))
    moe = validate_parallel_cases(parse_parallel_cases({**raw, "cases": other}))
    row = next(c for c in moe.cases if c.id == target["id"])
    before = next(c for c in plain.cases if c.id == target["id"])
    assert row.predicted == before.predicted
    (flag,) = [f for f in row.flags if f.startswith("model.params ")]
    given = target["model"]["params"]
    ratio = float(flag.split(" is ")[1].split("x the")[0])  # given / the shape's count
    assert f"model.params {given / 1e9:.3g}B is" in flag and "predicted as dense" in flag
    assert 6.5 * 0.95 < ratio < 6.5 * 1.05  # the public row's nominal label is within 5%
    assert not any(f.startswith("model.params ") for c in plain.cases for f in c.flags)


def test_an_fp32_case_is_flagged_as_predicted_like_mixed_precision(raw):
    """Session 16: precision fp32 was predicted exactly as bf16 without a word."""
    group = copy.deepcopy([c for c in raw["cases"] if c["group"] == "narayanan2021_table1"])
    target = next(c for c in group if not c["anchor"])
    target["precision"] = "fp32"
    report = validate_parallel_cases(parse_parallel_cases({**raw, "cases": group}))
    row = next(c for c in report.cases if c.id == target["id"])
    assert any(f.startswith("precision fp32: predicted at the 16-bit tensor peak") for f in row.flags)
    assert not any(f.startswith("precision fp32") for c in report.cases if c.id != target["id"]
                   for f in c.flags)
