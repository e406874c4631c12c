"""Session 21: where many adjacent points of a line chart do not fit in device memory, the chart
draws one shaded band over them with one label, not a dashed rule and a 'does not fit' per point.
Before, the time to quality of BERT-large on 16 A100 40GB at a critical batch of 4096 drew four
rules and four labels over global batch 8192-65536; now it draws one band from 8192 to 65536,
labelled 'does not fit: global batch 8,192–65,536, needs 71.6–533.6 GiB per device of 40 GiB'
(71.0–533.0 before session 48: PyTorch DDP's all-reduce buckets beside its gradients, Ψ·w_r =
336M × 2 B = 0.626 GiB more on every one of the 16 ranks, docs/model.md §4).
A lone point that does not fit keeps its rule."""

from __future__ import annotations

import dataclasses

import pytest
import vl_convert as vlc
from scalesim.app import charts
from scalesim.app.charts import misfit_spans
from scalesim.app.plan import make_plan, misfit_band_text
from scalesim.app.state import default_state, preset_profile

QUALITY = {"cbs": 4096.0, "train": 1e9, "price": 4.0}  # bert: global batch 8192 on runs out
LLAMA = {"hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "focus": 64, "mb": 1, "train": 1e6, "price": 3.0}
NONE_FITS = {**LLAMA, "tp": 4, "pp": 4, "sched": "zb"}  # 16, 32 and 64 devices do not fit


def _plan(update: dict):
    state = default_state().model_copy(update=update)
    return make_plan(preset_profile(state), state)


def _marks(spec: dict) -> list[str]:
    return [layer["mark"]["type"] for layer in spec["layer"]]


def _misfit_rows(spec: dict) -> list[dict]:
    """The rows of the spec's 'does not fit' layers: rules' ('label' only) and bands' ('end')."""
    return [
        r
        for rows in spec["datasets"].values()
        for r in rows
        if str(r.get("label", "")).startswith("does not fit")
    ]


@pytest.fixture(scope="module")
def quality():
    return _plan(QUALITY)


def test_adjacent_batches_that_do_not_fit_get_one_band_and_one_label(quality):
    plan = quality
    out = [q for q in plan.quality if not q.fits]
    assert [q.global_batch for q in out] == [8192, 16384, 32768, 65536]
    spec = charts.quality_chart(plan, 600).to_dict()
    # line, points, the critical batch and now (rule, text), one band and its one label
    # (before: a rule layer of 4 rules and a text layer of 4 'does not fit' labels)
    assert _marks(spec) == ["line", "point", "rule", "text", "rect", "text"]
    (band,) = _misfit_rows(spec)
    low, high = (min(q.memory_bytes for q in out) / 2**30, max(q.memory_bytes for q in out) / 2**30)
    assert f"{low:.1f}" == "71.6" and f"{high:.1f}" == "533.6"
    assert band == {
        "global_batch": 8192,
        "end": 65536,
        "label": "does not fit: global batch 8,192–65,536, needs 71.6–533.6 GiB per device of 40 GiB",
        "lines": "does not fit: global batch 8,192–65,536\nneeds 71.6–533.6 GiB per device of 40 GiB",
    }
    (rect,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rect"]
    assert rect["encoding"]["x2"] == {"field": "end"}
    vlc.vegalite_to_svg(spec)  # draws


def test_a_lone_batch_that_does_not_fit_keeps_its_rule(quality):
    plan = quality
    lone = [dataclasses.replace(q, fits=q.global_batch != 1024) for q in plan.quality]
    spec = charts.quality_chart(dataclasses.replace(plan, quality=lone), 600).to_dict()
    assert _marks(spec) == ["line", "point", "rule", "text", "rule", "text"]
    assert _misfit_rows(spec) == [{"global_batch": 1024, "label": "does not fit"}]


def test_two_runs_of_misfits_get_a_band_each_and_a_lone_one_its_rule(quality):
    plan = quality
    fits = {16: False, 32: False, 64: True, 128: False, 256: True}  # then 512 on do not fit
    points = [
        dataclasses.replace(q, fits=fits.get(q.global_batch, q.global_batch < 512)) for q in plan.quality
    ]
    spec = charts.quality_chart(dataclasses.replace(plan, quality=points), 600).to_dict()
    assert _marks(spec) == ["line", "point", "rule", "text", "rule", "text", "rect", "text"]
    rows = _misfit_rows(spec)
    assert [(r["global_batch"], r.get("end")) for r in rows] == [(128, None), (16, 32), (512, 65536)]


def test_the_device_curves_band_counts_that_do_not_fit():
    plan = _plan(NONE_FITS)
    need = {r.memory_bytes for r in plan.rows}
    assert len(need) == 1  # tp 4 x pp 4 x micro-batch 1: the same need at every count
    for chart in (charts.throughput_chart(plan, 600), charts.efficiency_chart(plan, 600)):
        spec = chart.to_dict()
        (band,) = _misfit_rows(spec)
        assert band["label"] == (
            f"does not fit: 16–64 devices, needs {min(need) / 2**30:,.1f} GiB per device of 80 GiB"
        )
        assert (band["devices"], band["end"]) == (16, 64)
        assert _marks(spec).count("rule") == 0  # was 3 rules and 3 labels


def test_misfit_spans_groups_adjacent_points_in_the_sweeps_order():
    run = [dataclasses.make_dataclass("R", ["fits"])(f) for f in (False, True, False, False, True, False)]
    spans = misfit_spans(list(zip([1, 2, 4, 8, 16, 32], run, strict=True)))
    assert [[x for x, _ in span] for span in spans] == [[1], [4, 8], [32]]
    assert misfit_spans([(1, run[1])]) == []


def test_the_band_says_calibrations_out_of_memory_where_memory_fits(quality):
    plan = quality
    profile = plan.profile.model_copy(
        update={"compute": plan.profile.compute.model_copy(update={"oom_micro_batch": 256})}
    )
    runs = [dataclasses.replace(q, memory_bytes=30 * 2**30) for q in plan.quality[-2:]]
    assert misfit_band_text("global batch 32,768–65,536", runs, profile) == (
        "does not fit: global batch 32,768–65,536, micro-batch 256 and above ran out of memory in calibration"
    )
    mixed = [runs[0], dataclasses.replace(runs[1], memory_bytes=50 * 2**30)]
    assert misfit_band_text("global batch 32,768–65,536", mixed, profile) == (
        "does not fit: global batch 32,768–65,536, needs 50.0 GiB per device of 40 GiB; "
        "micro-batch 256 and above ran out of memory in calibration"
    )
