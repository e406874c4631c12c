"""Session 49: the app and the CLI say the same thing for the same scenario.

The manager's report (``app.report``: its Changes and its Hours and money tables) wrote a time to
finish and a cost for runs that do not fit in memory ('12.7 days', '$4,895' for llama3-8b under
DDP on 8 H100s), where ``scalesim predict`` says 'does not fit' (its --json: null) and the page's
Remedies and Cost tabs leave those cells empty. Its cells now come from ``plan.run_cells``
(``if_runs``): a run that does not fit has no pace, time or money there either."""

from __future__ import annotations

import json

from cli_harness import run_cli
from scalesim.app.plan import make_plan, run_cells
from scalesim.app.state import AppState, preset_profile, with_profile_defaults

from scalesim.decision import DOES_NOT_FIT
from scalesim.figures import amount, duration_text, throughput

# llama3-8b on dgx-h100 under DDP needs 191.5 GiB a device (predict's table), more than the
# H100's 80 GB: no device count runs; 1e7 samples to train at $2 a device-hour
FIELDS = dict(wl="llama3-8b", hw="dgx-h100", train=1e7, price=2.0, grid="list", dlist="8,16")
CLI = ["--workload", "llama3-8b", "--hardware", "dgx-h100", "--train-samples", "1e7",
       "--price", "2", "--json"]


def _plan():
    state = AppState(**FIELDS)
    profile = preset_profile(state)
    return make_plan(profile, with_profile_defaults(state, profile).model_copy(update=FIELDS))


def test_a_run_that_does_not_fit_has_no_time_or_money_in_the_report_as_in_predict(capsys):
    plan = _plan()
    code, out, err = run_cli(capsys, ["predict", "--devices", "8,16", *CLI])
    assert code == 0, err
    rows = {r["devices"]: r for r in json.loads(out)}
    counts = [o for o in plan.options if o.kind == "devices"]
    assert [o.devices for o in counts] == [8, 16]
    for o in counts:
        row = rows[o.devices]
        assert not o.fits and row["fits"] is False
        assert (row["time_to_train_s"], row["cost_usd"]) == (None, None)  # predict: none
        assert o.time_s is not None and o.cost_usd is not None  # the model prices it anyway
        assert run_cells(o, o.samples_per_s, o.time_s, o.cost_usd) == [DOES_NOT_FIT] * 3
    out_of_memory = [r for r in plan.remedies if r.prediction is not None
                     and not r.prediction.fits]
    assert out_of_memory  # the fp8, accumulation and batch remedies keep DDP: none fits
    for r in out_of_memory:
        assert r.time_s is not None
        assert run_cells(r.prediction, r.prediction.samples_per_s, r.time_s,
                         r.cost_usd) == [DOES_NOT_FIT] * 3


def test_a_remedy_that_fits_reads_as_predict_gives_the_same_run(capsys):
    """The ZeRO-3 remedy at 16 devices is ``predict --strategy zero3`` there: its cells are that
    row's throughput, time to train and cost as the CLI writes them (no critical batch: no
    large-batch penalty, the same 1e7 samples)."""
    plan = _plan()
    (zero3,) = [r for r in plan.remedies if r.key == "sharding" and r.prediction is not None]
    code, out, err = run_cli(capsys, ["predict", "--devices", "16", "--strategy", "zero3", *CLI])
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["fits"] and zero3.prediction.fits
    cells = run_cells(zero3.prediction, zero3.prediction.samples_per_s, zero3.time_s,
                      zero3.cost_usd)
    assert cells == [throughput(row["samples_per_s"]), duration_text(row["time_to_train_s"]),
                     f"${amount(row['cost_usd'])}"]
    assert cells[1:] != ["-", "-"] and DOES_NOT_FIT not in cells


def test_no_run_and_no_figure_are_dashes():
    plan = _plan()
    assert run_cells(None, None, None, None) == ["-", "-", "-"]
    fits = next(r.prediction for r in plan.remedies if r.prediction is not None
                and r.prediction.fits)
    assert run_cells(fits, fits.samples_per_s, None, None)[1:] == ["-", "-"]
