"""Whether the runs tell the link: a profile-likelihood scan over a fitted gradient transfer time.

Where every multi-device run hides its exchange behind compute (a slow device's longer backward,
docs/model.md §3), a run's exposed exchange is the unhidden share times the transfer, ``(1 -
overlap) * T``: the transfer time and the overlap trade along a valley of equal misfit, and the
fit's local covariance (its curvature at one point of the valley) does not see its length. The
scan holds ``T`` at the fit's value times and over ``VALLEY_STEP`` per step, refits the rest
(``fit_runs.fit_problem(held=...)``, from the previous step's solution), and keeps each refit
whose misfit on the runs stays within ``chi2_0.95(1)`` of the fit's, the 95 % profile-likelihood
interval ``fit_runs.held_ranges`` takes for a held parameter. A direction stops at its first
refit outside. Where a kept refit lies a step or more from the fit, the runs do not tell the
link (``LinkValley``); every remedy's band then holds its gain at each kept refit
(``runs_diagnosis.set_gain_bands``' ``ends``), and one whose gain moves along it says so
(``valley_caveat``). Where the link is identified, the first step each way leaves the region:
two refits, and no band moves (docs/diagnose.md, "A link the runs cannot tell").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.quantiles import CHI2_95_ONE_DOF

VALLEY_STEP = 3.0  # each scan step multiplies (or divides) the held transfer time by this
VALLEY_STEPS = 4  # steps at most each way (81x): past them the gains have settled
VALLEY_LEVELS = ("inter_transfer_s", "intra_transfer_s")  # scanned: the largest run's link


@dataclass(frozen=True)
class LinkValley:
    """A transfer time the runs do not tell: ``name``, the fitted coordinates of each refit
    inside the region other than the fit (``rows``, shape (m, fitted)), and over those and the
    fit the least and most transfer time (``transfer_s``, s) and overlap (``overlap``, 0-1);
    ``open_ends`` (low, high): whether the scan stopped there inside the region (at its last
    step or the fit's bound), so the runs may allow a time beyond it."""

    name: str
    rows: np.ndarray
    transfer_s: tuple[float, float]
    overlap: tuple[float, float]
    open_ends: tuple[bool, bool] = (False, False)


def scanned_link(fit, runs) -> str | None:
    """The transfer time the scan holds: the inter-server one where the largest run crosses
    servers and it is fitted, else the intra-server one; None where neither is fitted and shown
    (a held one has its own range, ``fit_runs.held_ranges``)."""
    multi = bool(runs.nodes[-1] > 1)
    for name in VALLEY_LEVELS if multi else VALLEY_LEVELS[1:]:
        if name in fit.fitted and name not in fit.not_shown:
            return name
    return None


def link_valley(fit, runs, params: float | None, wire_bytes_per_param: float,
                exchange) -> LinkValley | None:
    """The valley of ``fit`` (``fit_runs.fit_runs`` of ``runs`` with ``params``,
    ``wire_bytes_per_param`` and ``exchange``) along its link's transfer time; None where the
    runs tell the link (no refit a step or more away stays in the region) or fit no link."""
    from scalesim.fit_runs import _chi2_on_runs, fit_problem

    name = scanned_link(fit, runs)
    if name is None or "overlap" not in fit.fitted:
        return None
    j = fit.fitted.index(name)
    limit = float(_chi2_on_runs(fit, runs, fit.x[None, :])[0]) + CHI2_95_ONE_DOF
    nominal = {} if params else {"nominal_gradient_bytes": fit.gradient_bytes}
    kept, open_ends = [], []
    for sign in (-1.0, 1.0):
        x0, left = np.delete(fit.x, j), False
        for step in range(1, VALLEY_STEPS + 1):
            xj = fit.x[j] + sign * step * np.log(VALLEY_STEP)
            if not fit.lower[j] <= xj <= fit.upper[j]:
                break
            problem = fit_problem(runs, params, wire_bytes_per_param, exchange,
                                  layout=fit.layout, held={name: float(np.exp(xj))}, **nominal)
            sol = problem.solve(np.clip(x0, problem.lower, problem.upper))
            row = np.insert(sol.x, j, xj)
            if not float(_chi2_on_runs(fit, runs, row[None, :])[0]) <= limit:
                left = True
                break
            kept.append(row)
            x0 = sol.x
        open_ends.append(not left)
    if not kept:
        return None
    rows = np.array(kept)
    both = np.vstack([fit.x[None, :], rows])
    k = fit.fitted.index("overlap")
    return LinkValley(name, rows, (float(np.exp(both[:, j].min())), float(np.exp(both[:, j].max()))),
                      (float(both[:, k].min()), float(both[:, k].max())), tuple(open_ends))


TRACE_MEASURES = "a profiler trace of one step (scalesim diagnose --trace) measures the exchange's own time"


def valley_gains(remedy, valley_sets) -> tuple[float, float]:
    """The least and most shown gain (``diagnosis.shown_gain``) of ``remedy`` over its own and
    the same remedy predicted at each refit of a valley (``valley_sets``, matched by key; 0
    where it does not apply there), fractions."""
    from scalesim.diagnosis import shown_gain

    gains = [shown_gain(remedy)] + [
        next((shown_gain(d) if d.applicable else 0.0 for d in one if d.key == remedy.key), 0.0)
        for one in valley_sets]
    return min(gains), max(gains)


def valley_caveat(valley: LinkValley | None, remedy, valley_sets, least_gain: float,
                  multi_server: bool, slow_device: bool, words) -> str:
    """One sentence where ``remedy``'s gain moves along ``valley`` by ``least_gain`` (the model's
    median error, ``diagnosis.least_decisive_gain``) or more: that the runs do not tell the
    link, the transfer times and overlaps that fit them alike, the gain's range along them, and
    what would tell (a trace; a run without the slow device where ``slow_device``); '' else."""
    from scalesim.figures import milliseconds, signed_percent

    if valley is None or not remedy.applicable or remedy.verdict == "not runnable":
        return ""
    low, high = valley_gains(remedy, valley_sets)
    if high - low < least_gain:
        return ""
    where = f"across {words.servers}" if multi_server else f"inside a {words.server}"
    (t_low, t_high), (o_low, o_high) = valley.transfer_s, valley.overlap
    low_more = " (or less)" if valley.open_ends[0] else ""
    high_more = " (or more)" if valley.open_ends[1] else ""
    slow = f", or a run without the slow {words.device} shows it" if slow_device else ""
    overlap = f"{o_low:.0%}" if f"{o_low:.0%}" == f"{o_high:.0%}" else f"{o_low:.0%} to {o_high:.0%}"
    return (f"these runs do not tell the link: a gradient transfer {where} from "
            f"{milliseconds(t_low)}{low_more} to {milliseconds(t_high)}{high_more} fits them "
            f"alike (overlap with backward {overlap}), and along it this gain runs from "
            f"{signed_percent(low)} to {signed_percent(high)}; {TRACE_MEASURES}{slow}")
