"""Session 41: what a job's traces cannot show is said, never priced (``trace_diagnosis.
diagnose_traces``): a trace of one process (nothing exchanged), ranks with no collective in
any trace (the communication not recorded, or a job that never synchronised), and DDP
reducing its gradients in every micro-step of an accumulating step (no ``no_sync``), which
the model's DDP (one exchange an optimizer step) does not send. Hand-made CPU traces: each
micro-step a DDP forward (a 200 us matmul), a 100 us backward and, where it reduces, a 100 us
all-reduce (``record_param_comms``) after it, nothing overlapping."""

from __future__ import annotations

import math

import pytest
from trace_events import BACKWARD, comm, op, stepped, summaries

from scalesim.model.stragglers import DEVICE_SPEED_CV
from scalesim.remedies import DDP_NO_SYNC_TITLE, DDP_REDUCING_ACCUMULATION, EXCHANGE_REMEDIES
from scalesim.trace_diagnosis import ONE_PROCESS_NOTE, UNSEEN_EXCHANGE_REASON, diagnose_traces

FORWARD_US, BACKWARD_US, ALL_REDUCE_US = 200.0, 100.0, 100.0
MICRO_US = FORWARD_US + BACKWARD_US + ALL_REDUCE_US


def ddp_job(k: int, reducing: int, steps: int = 3) -> list[dict]:
    """``steps`` profiler steps of ``k`` micro-steps, the last ``reducing`` of which all-reduce
    after their backward (k: every micro-step, no no_sync; 1: no_sync on the first k - 1; 0:
    no collective at all)."""

    def micro_step(m, a):
        events = [op("DistributedDataParallel.forward", a, FORWARD_US, cat="user_annotation"),
                  op("aten::mm", a, FORWARD_US), op(BACKWARD, a + FORWARD_US, BACKWARD_US)]
        if m >= k - reducing:
            events.append(comm("allreduce", a + FORWARD_US + BACKWARD_US, dur_us=ALL_REDUCE_US))
        return events

    return stepped(k, MICRO_US, micro_step, steps)


def test_one_process_says_why_no_remedy_is_predicted_and_what_answers_it(tmp_path):
    """World size 1: nothing to exchange, so no model remedy. Before, the report said "First
    remedy to try: not predicted (see the notes)" and no note said why."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 0), world=1), "r0.json")
    assert report.first_remedy is None and report.remedies == []
    assert ONE_PROCESS_NOTE in report.notes
    assert "one process (world size 1): it exchanges nothing" in ONE_PROCESS_NOTE
    assert "scalesim predict --profile p.json" in ONE_PROCESS_NOTE
    assert "scalesim calibrate --from-trace" in ONE_PROCESS_NOTE
    text = report.to_text()
    assert "First remedy to try: not predicted (see the notes)" in text
    assert f"note: {ONE_PROCESS_NOTE}" in text


def test_two_processes_get_no_one_process_note(tmp_path):
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 1), world=2), "r*.json")
    assert ONE_PROCESS_NOTE not in report.notes and report.remedies


def test_one_traced_rank_of_two_is_no_one_process_job(tmp_path):
    """Rank 0 of a 2-rank job traced alone: the job exchanges (world size 2), so remedies are
    priced and the one-process note is not given."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 1), world=2, traced=1), "r0.json")
    assert ONE_PROCESS_NOTE not in report.notes and report.remedies


def _held_back(report):
    return {r.key: r for r in report.remedies if r.key in EXCHANGE_REMEDIES}


def test_ranks_with_no_collective_hold_back_the_exchange_remedies(tmp_path):
    """Two ranks, no collective in either trace (each micro-step a 200 us forward, a 100 us
    backward and 100 us idle where the all-reduce would be). Before: no note, and "Overlap
    gradient exchange +0.2%", "Accumulate ... +0.2%", "Shard optimizer state ... sends the same
    bytes as now", gains of an exchange priced on a link capped at its upper bound."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 0), world=2), "r*.json")
    note = next(n for n in report.notes if n.startswith("no collective"))
    assert note.startswith("no collective on any of the 2 traced ranks (no NCCL kernel, gloo op "
                           "or record_param_comms), though the exchange runs over 2 ranks")
    assert "ProfilerActivity.CUDA" in note and "never synchronised its ranks" in note
    held = _held_back(report)
    assert set(held) == {"overlap", "accumulation", "sharding", "interconnect"}
    for r in held.values():
        assert (r.applicable, r.gain, r.verdict, r.note) == (
            False, 0.0, "not applicable", UNSEEN_EXCHANGE_REASON)
    # what is left is priced on the traced step, no exchange: a micro-step of 0.3 ms compute
    # and 0.1 ms idle (overhead a micro-step); twice the batch 2 x 0.4 / (0.1 + 2 x 0.3) - 1 =
    # +14.3 % (the link capped at 1e5 GB/s adds 1 us to both steps: +14.4 %)
    assert report.first_remedy.key == "bigger_batch"
    assert report.first_remedy.gain == pytest.approx(2 * 0.401 / 0.701 - 1.0, abs=1e-4)
    text = report.to_text()
    assert "Overlap gradient exchange with backward (not predicted: no collective" in text
    assert "sends the same bytes as now" not in text


def test_other_communication_without_the_exchanges_collectives_says_which(tmp_path):
    """A broadcast in each step but no all-reduce, all-gather or reduce-scatter: the exchange
    is still unseen."""
    events = ddp_job(1, 0)
    events += [comm("broadcast", e["ts"] + FORWARD_US + BACKWARD_US, dur_us=10.0)
               for e in events if e["name"].startswith("ProfilerStep")]
    report = diagnose_traces(summaries(tmp_path, events, world=2), "r*.json")
    assert any(n.startswith("no collective of the data-parallel exchange on any of the 2 "
                            "traced ranks (no all-reduce, all-gather or reduce-scatter; other "
                            "communication was traced)") for n in report.notes)
    assert not any(r.applicable for r in _held_back(report).values())


def test_one_traced_rank_of_two_without_a_collective(tmp_path):
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 0), world=2, traced=1), "r0.json")
    assert any(n.startswith("no collective on the one traced rank (") and
               "though the exchange runs over 2 ranks" in n for n in report.notes)
    assert not any(r.applicable for r in _held_back(report).values())


def test_a_traced_all_reduce_prices_the_exchange_remedies(tmp_path):
    """The same job with its all-reduce traced: no note, the exchange's remedies priced."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(1, 1), world=2), "r*.json")
    assert not any(n.startswith("no collective") for n in report.notes)
    assert _held_back(report)["overlap"].applicable


# the model's spread of identical devices' speeds (docs/model.md §6): 2 devices wait
# e_2 = 1/sqrt(pi) standard deviations of device_speed_cv x k x t_micro a step
E_2 = 1.0 / math.sqrt(math.pi)


def all_reduces_a_step(events) -> int:
    return sum(e["name"] == "record_param_comms" for e in events
               if e["ts"] < events[0]["dur"])  # the first profiler step's


@pytest.mark.parametrize("reducing, units, step_ms, after_ms, busy_ms", [
    # all 4 micro-steps reduce: 0.3 ms compute + 0.1 ms all-reduce each; under no_sync the
    # last only: 4 x 0.3 + 0.1
    (4, 8, 1.6, 1.3, 1.2),
    # 2 of 4: the other two idle 0.1 ms where the all-reduce would be (0.05 ms a micro-step
    # of overhead in the model); 1.2 + 0.2 idle + 0.2 -> 1.2 + 0.2 + 0.1
    (2, 4, 1.6, 1.5, 1.4),
])
def test_ddp_reducing_in_several_micro_steps_is_said_and_its_no_sync_priced(
        tmp_path, reducing, units, step_ms, after_ms, busy_ms):
    """DDP accumulating 4 micro-steps a step without no_sync all-reduces in each: 2 units a
    reduction, 2s a step, where the model's DDP prices 2 (one exchange an optimizer step).
    Before: no word, the link read s x slow, and "Accumulate gradients over 16 micro-steps
    +23%" first, which a job that reduces in every micro-step cannot gain."""
    events = ddp_job(4, reducing)
    assert 2 * all_reduces_a_step(events) == units  # units sent a step, counted off the trace
    report = diagnose_traces(summaries(tmp_path, events, world=2), "r*.json")
    note = next(n for n in report.notes if n.startswith("the traces show all-reduces in"))
    assert note.startswith(f"the traces show all-reduces in {reducing} of the 4 micro-steps a "
                           f"step: DDP without no_sync reduces its gradients in each, {units} "
                           "units a step where the model's DDP sends 2")
    assert f"link read {reducing}x slower than it ran" in note
    assert "model.no_sync()" in note
    by_key = {r.key: r for r in report.remedies}
    no_sync = by_key["grad_sync"]
    assert no_sync.title == DDP_NO_SYNC_TITLE.format(s=reducing)
    assert f"({reducing} -> 1 all-reduce a step)" in no_sync.title
    # the model's step: the traced one plus its device spread, both steps alike
    spread = DEVICE_SPEED_CV * busy_ms * E_2
    assert no_sync.helps
    assert no_sync.gain == pytest.approx((step_ms + spread) / (after_ms + spread) - 1.0,
                                         rel=1e-6)
    accumulation = by_key["accumulation"]
    assert not accumulation.applicable and accumulation.note == DDP_REDUCING_ACCUMULATION
    if reducing == 4:  # +22.9 %, above twice the batch (+14.2 %) and the overlap (+10.3 %)
        assert report.first_remedy.key == "grad_sync"


@pytest.mark.parametrize("k, reducing", [(4, 1), (1, 1)])
def test_ddp_reducing_once_a_step_gets_no_such_reading(tmp_path, k, reducing):
    """Under no_sync (1 of 4 micro-steps reduces) or at one micro-step a step the model's DDP
    is the job's: no note, no no_sync remedy, accumulation priced."""
    report = diagnose_traces(summaries(tmp_path, ddp_job(k, reducing), world=2), "r*.json")
    assert not any(n.startswith("the traces show all-reduces in") for n in report.notes)
    by_key = {r.key: r for r in report.remedies}
    assert "grad_sync" not in by_key
    assert by_key["accumulation"].applicable
