"""A slow rank of a two-rank job is priced from the rank that waits for it (session 46,
``trace_ranks.cross_rank``'s ``waiting_compute_s``): the median over the two ranks' compute is
their mean, half the slow rank's excess, which the model's slow device then added again."""

from __future__ import annotations

import pytest
from test_trace_exchange_waits import _ddp_traces

from scalesim.trace_diagnosis import diagnose_traces


def test_fixing_the_slow_one_of_two_ranks_gains_what_the_trace_allows(tmp_path):
    """8 ms steps: rank 0 computes 2 ms, rank 1 7 ms, then a 1 ms all-reduce (rank 0 sits 6 ms
    in it). Without the slow rank the step is 2 + 1 = 3 ms: +167 % (by hand, 8 / 3 - 1).
    The model had taken the ranks' median compute, 4.5 ms, plus the 5 ms wait: a 10.5 ms step
    where 8 ms was traced, and the fix at 10.5 / 5.5 - 1 = +91 %."""
    summaries = _ddp_traces(tmp_path, [2.0, 7.0])
    report = diagnose_traces(summaries, "t")
    cr = report.details["cross_rank"]
    assert cr["waiting_compute_s"] == pytest.approx(2e-3)
    assert cr["compute_s"] == pytest.approx(4.5e-3)  # the finding's median, as before
    assert report.cause.key == "slow_device" and report.first_remedy.key == "slow_device"
    assert report.first_remedy.gain == pytest.approx(8 / 3 - 1, rel=0.03)


def test_many_ranks_price_the_slow_one_as_before(tmp_path):
    """Four ranks, one slow (``test_trace_exchange_waits``' job): the median rank is a waiting
    one, so the waiting ranks' compute is the same 5 ms and the gain 8 / 6 - 1."""
    report = diagnose_traces(_ddp_traces(tmp_path, [5.0, 5.0, 5.0, 7.0]), "t")
    assert report.details["cross_rank"]["waiting_compute_s"] == pytest.approx(5e-3)
    gains = {r.key: r.gain for r in report.remedies}
    assert gains["slow_device"] == pytest.approx(8 / 6 - 1, abs=0.03)
