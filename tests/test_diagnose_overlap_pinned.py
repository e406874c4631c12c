"""Diagnose says when the fitted overlap, and so the overlap remedy's gain, is not pinned by the runs.

Session 23: six noisy runs (2.3 % residuals) fitted an overlap of 45 % +- 438 points (one
standard error) and diagnose led with "Overlap gradient exchange with backward: +54 %" and
printed the overlap as a bare 45 %. The report now marks the overlap's uncertainty and, where the
first remedy is overlap on an unpinned fit, says so beside it (``Remedy.caveat``), with what
measures it; so does any remedy whose gain rests on one parameter the runs do not pin.
"""

from __future__ import annotations

from types import SimpleNamespace

import diagnose_cases as cases
import numpy as np

from scalesim.diagnosis import OVERLAP_PINNED_HALF_WIDTH
from scalesim.diagnosis_text import render_text
from scalesim.runs import parse_runs_text, runs_from_records
from scalesim.runs_diagnosis import diagnose_runs, remedy_caveat

# Session 49: 8, 16 and 32 devices at 320, 440 and 500 ms (335, 420 and 472 before). The fitted
# overlap is not pinned (+- 441 points), so its point value moves freely with the model; the rule
# these runs test needs it under one half (the scenario then runs overlap off and the overlap
# remedy applies), and the old runs' 45 % (53 % under session 48's straggler stretch, 452 ms at
# 32) sat a hair from it. These fit 22 % (rms 2.1 %): the overlap leads at +66 %, the faster
# link, 116 ms with a 95 % band over 100x either way, at +46.9 % (at PARAMS below; +64 % and
# +61.2 % at the nominal 1 GB). OVERLAPPED below: the other side.
NOISY = ("devices,nodes,step_time_s,per_device_batch\n1,1,0.300,32\n2,1,0.311,32\n4,1,0.318,32\n"
         "8,1,0.320,32\n16,2,0.440,32\n32,4,0.500,32\n")
OVERLAPPED = NOISY.replace("8,1,0.320", "8,1,0.335").replace("16,2,0.440", "16,2,0.380").replace(
    "32,4,0.500", "32,4,0.460")
# Session 44: without --params the remedies are judged over the gradient sizes the runs allow
# (``runs_gradient_size``), and the overlap remedy of these runs helps at some and not at others
# ("depends on size"). The caution these tests are about is the fit's, at one gradient size.
# Session 49: a model of 1 B parameters (4 GB of gradient, 4 bytes each), not the nominal 1 GB
# (250 M): at 1 GB the faster link's 22x bandwidth (8.65 -> 192 GB/s) left 10 ms of the
# exchange against the overlap's 6 ms tail, and which came first rested on a 1.6 % throughput
# gap (+63.8 % against +61.2 %), inside the model's 3 % median error. At 4 GB the fitted link
# is 34.6 GB/s, 5.5x short of 192: the overlap leads at +65.9 %, 10.8 % more throughput than the
# runner-up (accumulation, +49.8 %; the link +46.9 %), over twice that error. The fit is the
# same in time (22 % overlap, 116 ms across servers).
PARAMS = 1e9


def test_noisy_runs_say_the_overlap_is_not_pinned_where_it_leads():
    report = diagnose_runs(parse_runs_text(NOISY, "noisy.csv"), params=PARAMS)
    assert report.first_remedy is not None and report.first_remedy.key == "overlap"
    # it leads by more than twice the model's median error (decisive_gain, 3 %) in throughput:
    # 1.659 / 1.498 = +10.8 % over the runner-up (+1.6 % over the link with 1 GB, session 48)
    runner_up = max(r.gain for r in report.remedies if r.applicable and r.key != "overlap")
    assert (1 + report.first_remedy.gain) / (1 + runner_up) - 1 >= 2 * report.decisive_gain
    text = render_text(report)
    assert "overlap of communication with backward: 22% (not pinned by these runs)" in text
    caveat = report.first_remedy.caveat
    assert caveat.startswith("its gain rests on a fitted overlap of 22% (95%: 0%-100%)")
    assert "scalesim diagnose --trace" in caveat
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("First remedy to try: Overlap"))
    assert lines[first + 1] == f"  caution: {caveat}"  # said beside the remedy it qualifies


def test_noisy_runs_whose_unpinned_overlap_is_over_half_are_not_cautioned_on_it():
    """The other side of the scenario's rule (overlap on from a fitted share of one half): runs
    as noisy whose fit overlaps 71 % +- 39 points (one standard error, unpinned: a 95 % half
    width of 0.76 against 0.25) run their scenario with overlap on, so the overlap remedy has
    nothing to add, does not lead, and no remedy is cautioned on the overlap. (73 % at the
    nominal 1 GB before session 49, checked ">= 0.65"; at 1 B parameters 71 %, 0.21 over the
    half, so checked at 0.6.)"""
    report = diagnose_runs(parse_runs_text(OVERLAPPED, "overlapped.csv"), params=PARAMS)
    fit = report.details["fit"]
    assert 1.96 * fit["stderr_abs"]["overlap"] > 2 * OVERLAP_PINNED_HALF_WIDTH
    assert fit["parameters"]["overlap"] >= 0.6 and report.details["fitted_scenario"]["overlap"]
    assert report.first_remedy is not None and report.first_remedy.key != "overlap"
    assert not [r for r in report.remedies if r.caveat.startswith("its gain rests on a fitted overlap")]
    assert "(not pinned by these runs)" in render_text(report)


def test_a_pinned_overlap_shows_its_band_and_no_note():
    # the case's own model (BERT-large: 336 M parameters, 2 bytes each), whose size is known
    report = diagnose_runs(runs_from_records(cases.comm_growth(), "comm growth"), params=336e6,
                           wire_bytes_per_param=2.0)
    fit = report.details["fit"]
    half = 1.96 * fit["stderr_abs"]["overlap"]
    assert half <= OVERLAP_PINNED_HALF_WIDTH
    assert f"{fit['parameters']['overlap']:.0%} (+-{half * 100:.0f} points, 95%)" in render_text(report)
    assert all(r.caveat == "" for r in report.remedies) and "caution:" not in render_text(report)


def _fit(values, se):
    return SimpleNamespace(fitted=list(values), values=values, stderr=lambda name: se)


def _caveat(values, se, key, multi_server=True):
    return remedy_caveat(_fit(values, se), SimpleNamespace(key=key, applicable=True, verdict="remedy",
                                                             gain_low=None, gain_high=None), multi_server)


def test_the_caveat_needs_its_kind_of_remedy_and_a_wide_band():
    wide = OVERLAP_PINNED_HALF_WIDTH / 1.96 * 1.01
    narrow = OVERLAP_PINNED_HALF_WIDTH / 1.96 * 0.99
    assert _caveat({"overlap": 0.5}, wide, "overlap")
    assert _caveat({"overlap": 0.0}, None, "overlap") == ""  # held at a bound by the runs
    assert _caveat({"overlap": 0.5}, narrow, "overlap") == ""
    assert _caveat({"overlap": 0.5}, wide, "bigger_batch") == ""  # no caveat for that remedy
    assert remedy_caveat(_fit({"overlap": 0.5}, wide), None, True) == ""
    not_applicable = SimpleNamespace(key="overlap", applicable=False)
    assert remedy_caveat(_fit({"overlap": 0.5}, wide), not_applicable, True) == ""


def test_a_faster_link_and_the_loader_are_cautioned_where_their_parameter_is_not_pinned():
    # log errors: pinned within 2x either way (1.96 se <= ln 2)
    wide, narrow = np.log(2.0) / 1.96 * 1.01, np.log(2.0) / 1.96 * 0.99
    inter = {"inter_transfer_s": 0.1, "intra_transfer_s": 0.001}
    text = _caveat(inter, wide, "interconnect")
    assert text.startswith("its gain rests on a fitted gradient transfer across servers of "
                           "100 ms (95%: 49.7 ms-201 ms)")
    assert "scalesim calibrate --from-nccl-tests" in text
    assert _caveat(inter, narrow, "interconnect") == ""
    assert "inside a server of 1 ms" in _caveat(inter, wide, "interconnect", multi_server=False)
    assert "(its 95% band over 100x either way)" in _caveat(inter, 3.0, "interconnect")
    loader = _caveat({"node_loader_samples_per_s": 800.0}, wide, "loader")
    assert loader.startswith("its gain rests on a fitted input supply of 800 samples/s per server")
    assert "data_wait_s" in loader


def test_the_app_shows_the_caution_under_the_first_remedy():
    from app_harness import open_diagnose_page

    at = open_diagnose_page(NOISY)
    # no parameter count given: the overlap depends on the gradient size (session 44), so the
    # faster network leads, cautioned on its unpinned transfer, as diagnose's text says
    assert "Faster inter-server network" in at.success[0].value
    cautions = [w.value for w in at.warning if w.value.startswith("**Caution:**")]
    assert len(cautions) == 1 and "fitted gradient transfer across servers" in cautions[0]
    table = at.dataframe[0].value
    overlap = table[table["remedy"] == "Overlap gradient exchange with backward"].iloc[0]
    assert overlap["verdict"] == "depends on size" and overlap.isna().iloc[1]  # no gain


def test_other_remedies_resting_on_an_unpinned_parameter_are_cautioned_too():
    # the noisy runs' inter-server transfer: 116 ms +- 555 % (one standard error)
    report = diagnose_runs(parse_runs_text(NOISY, "noisy.csv"), params=PARAMS)
    faster = next(r for r in report.remedies if r.key == "interconnect")
    assert faster is not report.first_remedy and faster.applicable
    assert faster.caveat.startswith("its gain rests on a fitted gradient transfer across servers")
    lines = render_text(report).splitlines()
    at = next(i for i, line in enumerate(lines) if "Faster inter-server network" in line)
    assert lines[at + 1].strip() == f"caution: {faster.caveat}"
    assert '"caveat": "its gain rests on' in report.to_json()
