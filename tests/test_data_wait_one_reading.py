"""The data wait is read one way in every diagnose path (session 47).

The data wait the step holds is what taking every rank's data wait off saves it
(``trace_ranks.cross_rank``'s ``input_wait_s``, ``trace_diagnosis.input_wait_s``): the input
finding, the loader remedy's cap and the small-wait reading take it; the model's micro-step,
the waiting ranks', takes their wait (``micro_step_wait_s``). Before, the in-process loader's
model read ``cr["input_wait_s"]`` (the waiting ranks' wait) while the finding and the cap read
every rank's median: on the job below, 4 ms, 2.5 ms and 2.5 ms of one wait, the loader remedy
+31 % where taking the loading off gains +10.5 %."""

from __future__ import annotations

import pytest
from cli_harness import run_cli
from trace_events import loaded_step, write_ranks

from scalesim import trace_ranks
from scalesim.trace_diagnosis import diagnose_traces, input_wait_s, micro_step_wait_s

IN_PROCESS = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _uneven_loading(tmp_path, waits_ms=(4.0, 1.0), computes_ms=(3.0, 8.5), steps=6):
    """Two gloo ranks loading in the training process: each step rank r loads
    ``waits_ms[r]``, computes ``computes_ms[r]``, then all-reduces until 1 ms after the later
    rank. By hand, rank 1 paces every 1 + 8.5 + 1 = 10.5 ms step; with no loading rank 0 is
    done at 3, rank 1 at 8.5: 9.5 ms, +10.5 %; with rank 1 as fast as rank 0 (loading kept)
    4 + 3 + 1 = 8 ms, +31 %."""
    events = [[], []]
    start = 0.0
    for n in range(steps):
        end = start + max(w + c for w, c in zip(waits_ms, computes_ms, strict=True)) + 1.0
        for rank in (0, 1):
            at = start + waits_ms[rank] + computes_ms[rank]
            events[rank] += loaded_step(n, start, end, IN_PROCESS, waits_ms[rank],
                                        computes_ms[rank], at)
        start = end
    return write_ranks(tmp_path, events)


def test_the_wait_on_the_steps_path_is_the_one_the_remedies_take_off(tmp_path):
    """Rank 1 paces the step and loads 1 ms of it; rank 0's 4 ms are hidden in its wait for
    rank 1. The step holds 1 ms of data wait (before: 2.5 ms, every rank's median, as the
    finding and the cap read it, and 4 ms in the model). Workers take the loading off:
    10.5 / 9.5 - 1 = +10.5 % (before +31.25 %); the model still rebuilds the step from the
    waiting rank's 4 ms, so fixing the slow process reads +30.4 % (by hand +31 %)."""
    paths = _uneven_loading(tmp_path)
    report = diagnose_traces(trace_ranks.load_traces(paths), "t")
    cr = report.details["cross_rank"]
    assert input_wait_s(cr) == pytest.approx(1e-3)
    assert micro_step_wait_s(cr) == pytest.approx(4e-3)
    remedies = {r.key: r for r in report.remedies}
    assert remedies["loader"].gain == pytest.approx(10.5 / 9.5 - 1, rel=1e-6)
    assert remedies["slow_device"].gain == pytest.approx(10.5 / 8 - 1, rel=0.03)
    finding = next(f for f in [report.cause, *report.others] if f.key == "input_pipeline")
    assert finding.share == pytest.approx(1 / 10.5)


def test_the_same_reading_through_the_cli(tmp_path, capsys):
    """``scalesim diagnose --trace`` says the loader remedy's +10.5 % and the 1 ms wait."""
    code, out, err = run_cli(capsys, ["diagnose", "--trace", *_uneven_loading(tmp_path)])
    assert code == 0, err
    assert ("waiting on the DataLoader 1 ms per step (10%) on the step's path" in out
            and "every rank's median 2.5 ms" in out)
    line = next(x for x in out.splitlines() if "Load the input in DataLoader worker" in x)
    assert "+10.5%" in line


def test_an_even_wait_reads_the_same_both_ways(tmp_path):
    """Both ranks loading 2 ms: the step's path holds the 2 ms, as the model's micro-step."""
    cr = diagnose_traces(trace_ranks.load_traces(_uneven_loading(
        tmp_path, waits_ms=(2.0, 2.0))), "t").details["cross_rank"]
    assert input_wait_s(cr) == pytest.approx(2e-3)
    assert micro_step_wait_s(cr) == pytest.approx(2e-3)
