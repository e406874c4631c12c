"""Session 20 (charts2_20): the line charts and tables where a count does not fit. Before, the
throughput and efficiency lines ran through a device count whose layout does not fit in device
memory (a cross over its point) and the throughput words began 'rises from' that count; the
time-to-quality line drew batches that do not fit (grey points on the line); the Scaling curve
and Step breakdown tables, and the report's, gave such a count a step time, throughput and
efficiency; a list of counts ended '... and 1 more'; the hours and cost legend listed kinds
with no bar. Now the line breaks there (no point), a dashed rule says 'does not fit', the words
speak of the counts that run and then name the others, the tables say 'does not fit' in those
cells, the list names its last count and the legend only kinds that are drawn."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import vl_convert as vlc
from app_harness import open_app
from scalesim.app import charts
from scalesim.app.plan import make_plan
from scalesim.app.report import report_html
from scalesim.app.state import default_state, encode_query, preset_profile

from scalesim.figures import count_list

LLAMA = {"hw": "dgx-h100", "wl": "llama3-70b", "dmax": 64, "focus": 64, "mb": 1,
         "train": 1e6, "price": 3.0}
NONE_FITS = {**LLAMA, "tp": 4, "pp": 4, "sched": "zb"}  # no count fits; remedies and +servers do
QUALITY = {"cbs": 4096.0, "train": 1e9, "price": 4.0}  # bert: global batch 8192 on runs out
NOTE = " The layout does not fit in device memory at 16 devices, so the chart has no point there."


def _plan(update: dict):
    state = default_state().model_copy(update=update)
    return state, make_plan(preset_profile(state), state)


def _data(spec: dict, key: str) -> list[list[dict]]:
    """The spec's datasets whose rows have ``key``."""
    return [rows for rows in spec["datasets"].values() if rows and key in rows[0]]


def _rules(spec: dict, field: str) -> list[dict]:
    """The 'does not fit' rules' rows of a line chart (x ``field``)."""
    return [r for rows in _data(spec, "label") for r in rows if r.get("label") == "does not fit"
            and field in r]


def _bands(spec: dict) -> list[dict]:
    """The rows of a line chart's shaded 'does not fit' bands (session 21)."""
    return [r for rows in _data(spec, "end") for r in rows]


def test_the_throughput_line_has_no_point_where_a_count_does_not_fit(partial):
    _, plan = partial
    spec = charts.throughput_chart(plan).to_dict()
    rows = _data(spec, "series")[0]
    predicted = {r["devices"]: r["value"] for r in rows if r["series"] == "predicted"}
    assert predicted[16] is None and predicted[32] > 0 and predicted[64] > 0  # had a value
    assert _rules(spec, "devices") == [{"devices": 16, "label": "does not fit"}]
    assert "cross" not in json.dumps(spec)  # was a cross over a point on the line
    assert spec["title"]["subtitle"] == [
        "the layout does not fit in device memory at 16 devices, so the chart has no point there",
        "the gap between the lines is throughput lost to scaling"]
    text = charts.chart_text(plan, "throughput")
    assert text.startswith("Predicted throughput rises from ") and " at 32 devices to " in text
    assert text.endswith("; no knee." + NOTE) and "not runnable at" not in text


def test_the_efficiency_line_has_no_point_where_a_count_does_not_fit(partial):
    _, plan = partial
    spec = charts.efficiency_chart(plan).to_dict()
    rows = _data(spec, "efficiency")[0]
    assert [r["efficiency"] is None for r in rows] == [True, False, False]
    assert _rules(spec, "devices") == [{"devices": 16, "label": "does not fit"}]
    assert spec["title"]["subtitle"][0] == (
        "the layout does not fit in device memory at 16 devices, so the chart has no point there")
    text = charts.chart_text(plan, "efficiency")
    assert text.startswith("Scaling efficiency: 32 devices ") and text.endswith("%." + NOTE)
    assert "16 devices does not fit" not in text  # was first, among the counts that run


def test_the_line_breaks_at_a_count_in_the_middle_that_does_not_fit():
    _, plan = _plan({})  # bert on 1-16 devices, 4 marked as not fitting
    rows = [r.model_copy(update={"fits": False}) if r.devices == 4 else r for r in plan.rows]
    spec = charts.throughput_chart(dataclasses.replace(plan, rows=rows), 600).to_dict()
    paths = re.findall(r'<path[^>]*d="(M[^"]*L[^"]*)"', vlc.vegalite_to_svg(spec))
    lines = sorted(d.count("M") for d in paths if "Z" not in d and len(d) > 20)
    assert lines == [1, 2]  # ideal whole; predicted in two pieces, 1-2 and 8-16 (was one)


def test_no_count_runs_the_line_charts_say_so():
    _, plan = _plan(NONE_FITS)
    assert not any(r.fits for r in plan.rows)
    for name, chart in (("throughput", charts.throughput_chart(plan, 600)),
                        ("efficiency", charts.efficiency_chart(plan, 600))):
        spec = chart.to_dict()
        assert _rules(spec, "devices") == []  # one band now (app21), not a rule per count
        (band,) = _bands(spec)
        assert (band["devices"], band["end"]) == (16, 64)
        assert band["label"].startswith("does not fit: 16–64 devices, needs ")
        vlc.vegalite_to_svg(spec)  # draws with no point at all
        assert charts.chart_text(plan, name) == (
            "No device count runs. The layout does not fit in device memory at 16, 32 and 64 "
            "devices, so the chart has no point there.")


def test_the_time_to_quality_line_has_no_point_where_a_batch_does_not_fit():
    _, plan = _plan(QUALITY)
    out = [q.global_batch for q in plan.quality if not q.fits]
    assert out == [8192, 16384, 32768, 65536] and all(r.fits for r in plan.rows)
    spec = charts.quality_chart(plan).to_dict()
    rows = _data(spec, "micro_batch")[0]
    assert [r["global_batch"] for r in rows if r["value"] is None] == out  # were grey points
    assert _rules(spec, "global_batch") == []  # one band over 8192-65536 (app21), not 4 rules
    assert [(b["global_batch"], b["end"]) for b in _bands(spec)] == [(8192, 65536)]
    colours = [layer["encoding"].get("color", {}).get("field") for layer in spec["layer"]]
    assert "fits" not in colours  # was a legend of 'not runnable' points on the line
    assert spec["title"]["subtitle"][0] == ("the layout does not fit in device memory at global "
                                            "batch 8,192 and above, so the chart has no point "
                                            "there")
    best = min((q for q in plan.quality if q.fits), key=lambda q: q.time_to_quality)
    assert charts.chart_text(plan, "time_to_quality") == (
        f"Time to quality is lowest at global batch {best.global_batch:,} (per-device "
        f"{best.micro_batch}); larger batches take longer. The layout does not fit in device "
        "memory at global batch 8,192 and above, so the chart has no point there.")


def test_the_quality_words_take_the_best_batch_among_those_that_fit():
    _, plan = _plan(QUALITY)
    faster = [dataclasses.replace(q, time_to_quality=0.001) if not q.fits else q
              for q in plan.quality]  # a batch that does not fit is never 'lowest'
    text = charts.chart_text(dataclasses.replace(plan, quality=faster), "time_to_quality")
    best = min((q for q in plan.quality if q.fits), key=lambda q: q.time_to_quality)
    assert text.startswith(f"Time to quality is lowest at global batch {best.global_batch:,} ")
    assert best.global_batch < 8192  # was 8,192: a batch that runs out of memory


@pytest.mark.parametrize("tab", ["curve", "breakdown"])
def test_the_tables_say_does_not_fit_in_place_of_time_pace_and_efficiency(partial, tab):
    state, plan = partial
    at = open_app(encode_query(state.model_copy(update={"tab": tab}), preset_profile(state)))
    table = at.dataframe[0].value
    gone = ["step ms", "compute ms", "exposed comm ms", "bubble ms", "MFU %", "straggler ms",
            f"{plan.unit}/s", "efficiency %"]
    out, run = table.iloc[0], table.iloc[1]
    assert out["devices"] == 16 and out["runnable"] == "NO: does not fit in memory"
    # no number (session 20: were numbers); session 21: empty, not the text 'does not fit',
    # so each column stays numeric and sorts by value (the runnable cell says why)
    assert all(out[c] != out[c] for c in gone)  # NaN
    assert all(table[c].dtype.kind == "f" for c in gone)
    # says why, at figures.gib's one decimal (session 20: was every digit of the float)
    assert out["memory GiB"] == round(plan.rows[0].memory_bytes / 2**30, 1)
    assert run["step ms"] == pytest.approx(plan.rows[1].step_time_s * 1e3)
    assert run["efficiency %"] == pytest.approx(plan.rows[1].efficiency * 100)
    assert table.to_csv().count("does not fit") == 1  # the download: no number, one reason
    if tab == "curve":  # the page draws the broken lines, the rule and their words
        for c in at.get("vega_lite_chart"):
            assert json.loads(c.proto.spec)["title"]["subtitle"][0] == (
                "the layout does not fit in device memory at 16 devices, so the chart has no "
                "point there")
        assert sum(NOTE.strip() in c.value for c in at.caption) == 2
    if tab == "breakdown":
        assert at.warning[-1].value == ("Not runnable: does not fit in device memory at 16 "
                                        "devices: try ZeRO-3 or a smaller batch.")


def test_the_tables_of_a_plan_where_every_count_fits_keep_their_numbers():
    state, _ = _plan({})
    at = open_app(encode_query(state, preset_profile(state)))
    table = at.dataframe[0].value
    assert table["step ms"].dtype.kind == "f" and table["efficiency %"].dtype.kind == "f"


def test_the_report_s_table_says_does_not_fit(partial):
    _, plan = partial
    page = report_html(plan, "http://example/?v=3")
    table = page[page.index("Prediction per device count"):]
    row = re.search(r'<tr><td class="l">16</td>(.*?)</tr>', table).group(1)
    assert row.count(">does not fit<") == 7 and ">101.2<" in row and "NO: not runnable" in row
    assert f"{plan.rows[0].step_time_s * 1e3:.2f}" not in row


@pytest.mark.parametrize("counts, text", [
    ([16], "16"), ([16, 64], "16 and 64"), ([16, 32, 64], "16, 32 and 64"),
    ([1, 2, 4, 8, 16, 32], "1, 2, 4, 8, 16 and 32"),
    ([1, 2, 4, 8, 16, 32, 64], "1, 2, 4, 8, 16, ... and 64 (7 in all)"),  # was '... 32 and 1 more'
    # session 40: each count as the headline writes it ('1,024'; was '1024 and 2048'), and '; '
    # between them where a count has a comma, so that a comma is a number's, never the list's
    ([1024, 2048], "1,024 and 2,048"), ([512, 1024, 2048], "512; 1,024 and 2,048"),
    ([2**i for i in range(13)], "1; 2; 4; 8; 16; ... and 4,096 (13 in all)"),
])
def test_a_list_of_counts_names_its_last(counts, text):
    assert count_list(counts) == text


def test_the_hours_and_cost_legends_list_only_kinds_that_are_drawn():
    _, plan = _plan(NONE_FITS)
    kinds = {o.kind for o in plan.options if o.fits}
    assert kinds == {"remedy", "more devices"}  # no device count runs: no 'devices' bar
    for chart in (charts.hours_chart(plan), charts.money_chart(plan)):
        scale = chart.to_dict()["layer"][0]["encoding"]["color"]["scale"]
        assert scale == {"domain": ["remedy", "more devices"],  # listed 'devices' too
                         "range": [charts.PALETTE["remedy"], charts.PALETTE["more devices"]]}


def test_counts_past_a_thousand_read_as_the_headline_writes_them():
    """Session 40: 'does not fit in device memory at 512, 1024 and 2048 devices' beside the
    headline's '2,048'. llama3-405b unsplit needs some 23,000 GiB per device of 80: no count
    fits, and the list says each count as the headline does, ';' between them."""
    from scalesim.app.plan import headline, misfit_counts_text

    state = default_state().model_copy(update={
        "wl": "llama3-405b", "hw": "dgx-h100", "grid": "list", "dlist": "512,1024,2048"})
    plan = make_plan(preset_profile(state), state)
    said = "does not fit in device memory at 512; 1,024 and 2,048 devices"
    assert misfit_counts_text(plan) == said
    assert headline(plan)["devices"] == "2,048" and headline(plan)["not_runnable"].startswith(said)
