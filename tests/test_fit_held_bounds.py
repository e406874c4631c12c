"""A transfer time the runs do not show at the fit is held at its start value; where a slower
link would misfit them, they still bound it from one side, and the report says so
(``fit_runs.held_upper_bounds``)."""

import numpy as np
import pytest
from scipy.stats import chi2

from scalesim.diagnosis_text import render_text
from scalesim.fit_runs import HELD_SCAN_FACTORS, _chi2_on_runs, fit_runs
from scalesim.runs import parse_runs_text, replica_runs
from scalesim.runs_diagnosis import diagnose_runs

# tp 2 x pp 2 on servers of 8: the 8-replica run crosses servers, and its exchange hides just
# behind compute at the fit (a kink of the model: a forward difference moves no run)
RUNS = """devices,nodes,step_time_s,per_device_batch,accumulation,tp,pp
8,1,1.50,8,4,2,2
16,2,1.55,8,4,2,2
32,4,1.62,8,4,2,2
"""


def test_a_held_link_the_runs_bound_says_its_bound():
    """A helper's audit: "inter-server link 84 GB/s (not shown by the runs: held)", where a
    40 GB/s link slows the 8-replica run from 1,630 to 1,996 ms, well beyond the runs' noise.
    The first scanned slower link whose chi2 leaves the fit's by chi2_0.95(1) is 1.5x: the
    runs hold the link to at least 84 / 1.5 = 56 GB/s."""
    runs = replica_runs(parse_runs_text(RUNS, "r.csv"))
    fit = fit_runs(runs, 7e9)
    assert fit.not_shown == ["inter_transfer_s"]
    j = fit.fitted.index("inter_transfer_s")
    rows = np.repeat(fit.x[None, :], len(HELD_SCAN_FACTORS), axis=0)
    rows[:, j] += np.log(HELD_SCAN_FACTORS)
    excess = _chi2_on_runs(fit, runs, rows) - _chi2_on_runs(fit, runs, fit.x[None, :])[0]
    first = int(np.flatnonzero(excess > chi2.ppf(0.95, 1))[0])
    assert HELD_SCAN_FACTORS[first] == 1.5 and excess[first - 1] <= chi2.ppf(0.95, 1)
    assert fit.held_at_most_s["inter_transfer_s"] == pytest.approx(
        1.5 * fit.values["inter_transfer_s"], rel=1e-9)
    text = render_text(diagnose_runs(parse_runs_text(RUNS, "r.csv"), params=7e9))
    assert ("inter-server link: 84 GB/s busbw (not shown by the runs: held; they bound it only: "
            "at least 56 GB/s)") in text
    assert "(the runs bound it only: at most 500 ms with the other parts as fitted" in text


def test_a_link_no_run_bounds_keeps_its_words():
    """Runs that never cross servers leave the inter-server link unmeasured: no bound."""
    runs = parse_runs_text("devices,nodes,step_time_s,per_device_batch\n1,1,1.0,8\n2,1,1.0,8\n"
                           "4,1,1.0,8\n", "r.csv")
    fit = fit_runs(runs, 1e9)
    assert "inter_transfer_s" not in fit.held_at_most_s
