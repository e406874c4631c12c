"""Session 41: a collective of a metric is no gradient exchange (``trace_comm_calls.metric_sized``). A
DDP job accumulating 4 micro-steps a step under no_sync (its gradients' all-reduce, 1,000
elements, in the last micro-step) that all-reduces its loss (1 element) in every micro-step
for logging (``dist.all_reduce(loss)``) read as DDP reducing its gradients in each micro-step:
a note, a no_sync remedy and accumulation held back, as the same job without no_sync. Where the
traces record sizes the loss's all-reduces are set aside; where they do not, a note says the
reading could not tell them apart, and ``--grad-sync once-per-step`` (which said 'changes
nothing here' on DDP) prices the exchange once a step. Hand-made 2-rank CPU traces: each
micro-step a DDP forward (a 200 us matmul), a 100 us backward, then the loss's 10 us
all-reduce, and in the last the gradients' 100 us all-reduce (``record_param_comms``)."""

from __future__ import annotations

import pytest
from trace_events import BACKWARD, comm, op, stepped, summaries

from scalesim.diagnose_request import DiagnoseOptions, diagnose_request
from scalesim.remedies import DDP_NO_SYNC_TITLE

K = 4  # micro-steps a step
FORWARD_US, BACKWARD_US, LOSS_US, GRADIENTS_US = 200.0, 100.0, 10.0, 100.0
MICRO_US = FORWARD_US + BACKWARD_US + LOSS_US + GRADIENTS_US
GRADIENT_ELEMENTS = 1000
STEPS = 3


def ddp_job(sized: bool, no_sync: bool = True, gradients_us: float = GRADIENTS_US) -> list[dict]:
    """``STEPS`` profiler steps of ``K`` micro-steps: the loss all-reduced in each, the
    gradients (``gradients_us`` each, in micro-steps of ``MICRO_US``) in the last only
    (``no_sync``) or in each; message sizes recorded (``sized``) or not."""

    def micro_step(m, a):
        events = [op("DistributedDataParallel.forward", a, FORWARD_US, cat="user_annotation"),
                  op("aten::mm", a, FORWARD_US), op(BACKWARD, a + FORWARD_US, BACKWARD_US),
                  comm("allreduce", a + FORWARD_US + BACKWARD_US, 1, sized, dur_us=LOSS_US)]
        if m == K - 1 or not no_sync:
            events.append(comm("allreduce", a + FORWARD_US + BACKWARD_US + LOSS_US,
                               GRADIENT_ELEMENTS, sized, dur_us=gradients_us))
        return events

    return stepped(K, MICRO_US, micro_step, STEPS)


def diagnosed(tmp_path, events, grad_sync=None):
    return diagnose_request(DiagnoseOptions(grad_sync=grad_sync),
                            traces=summaries(tmp_path, events), trace_source="r*.json")


def reducing_note(report) -> str | None:
    return next((n for n in report.notes if n.startswith("the traces show all-reduces in")),
                None)


def gains(report) -> dict[str, float]:
    return {r.key: r.gain for r in report.remedies}


def test_sized_loss_all_reduces_are_set_aside(tmp_path):
    """With sizes: the 1-element all-reduces, under 1 % of the 1,000-element gradients', are
    set aside (4 a step a rank, 12 in each rank's 3 steps): 1 of the 4 micro-steps reduces,
    no DDP-reductions note, no no_sync remedy, accumulation priced. Before: 'all-reduces in 4
    of the 4 micro-steps', the link read 4x slower and 'Reduce gradients once a step' offered
    to a job already under no_sync."""
    s = summaries(tmp_path, ddp_job(sized=True))
    assert [x.set_aside for x in s] == [{"all-reduce": STEPS * K}] * 2
    assert [x.largest_reduction for x in s] == [GRADIENT_ELEMENTS] * 2
    assert {st.micro_steps_with["all-reduce"] for x in s for st in x.steps} == {1}
    report = diagnosed(tmp_path, ddp_job(sized=True))
    assert reducing_note(report) is None
    assert "grad_sync" not in gains(report)
    assert {r.key: r for r in report.remedies}["accumulation"].applicable
    assert ("24 all-reduces (4 a step on each of the 2 traced ranks) set aside as no gradient "
            "traffic: each under 1% of the elements of its rank's largest reduction (1,000 "
            "elements), a metric or the loss reduced for logging (dist.all_reduce(loss))"
            ) in " ".join(report.notes)
    # the gradients' exchange read alike with or without the loss's all-reduces in the counts
    assert report.details["exchange"]["strategy"] == "ddp"


def test_without_sizes_the_reading_says_what_it_could_not_separate(tmp_path):
    """Without sizes every micro-step posts an all-reduce: read as DDP reducing in each (the
    note and the no_sync remedy), and a note that a metric's all-reduce cannot be told from a
    gradient's there, naming --grad-sync once-per-step; nothing is set aside."""
    report = diagnosed(tmp_path, ddp_job(sized=False))
    assert reducing_note(report).startswith("the traces show all-reduces in 4 of the 4 "
                                            "micro-steps a step")
    assert gains(report)["grad_sync"] > 0
    unsized = next(n for n in report.notes if n.startswith("the traces record no message size"))
    assert unsized.startswith("the traces record no message size for their all-reduces, so "
                              "those posted in 4 of the 4 micro-steps a step are all read as "
                              "reducing gradients")
    assert unsized.endswith("If the job reduced its gradients once a step (no_sync), give "
                            "--grad-sync once-per-step")
    assert not any("set aside" in n for n in report.notes)


def one_exchange_job(sized: bool = True) -> list[dict]:
    """``ddp_job``'s steps with no loss all-reduce, the last micro-step's gradient all-reduce
    carrying its time too (``GRADIENTS_US + K * LOSS_US``): the same step, compute and exposed
    exchange, one all-reduce a step; its size recorded (``sized``) or not."""
    events = []
    for n in range(STEPS):
        t = n * K * MICRO_US
        events.append(op(f"ProfilerStep#{n + 1}", t, K * MICRO_US, cat="user_annotation"))
        for m in range(K):
            a = t + m * (FORWARD_US + BACKWARD_US)
            events += [op("DistributedDataParallel.forward", a, FORWARD_US,
                          cat="user_annotation"),
                       op("aten::mm", a, FORWARD_US), op(BACKWARD, a + FORWARD_US, BACKWARD_US)]
        events.append(comm("allreduce", t + K * (FORWARD_US + BACKWARD_US), GRADIENT_ELEMENTS,
                           sized, dur_us=GRADIENTS_US + K * LOSS_US))
    return events


def test_grad_sync_once_per_step_overrides_a_ddp_reading(tmp_path):
    """--grad-sync once-per-step on the sizeless trace (before: '--grad-sync once-per-step
    changes nothing here: strategy ddp reduces gradients once per step anyway', the 4
    reductions priced) prices it once a step: the override said, no DDP-reductions note, no
    no_sync remedy, and every remedy's gain that of one exchange a step carrying all the
    traced all-reduces' time (``one_exchange_job``: no size sets the loss's aside, so its time
    is the exchange's; session 42: the sized trace counts it as idle instead). Neither records
    a size, so both are laid out in DDP's default buckets (session 48: a sized trace's one
    all-reduce a step is the model's one bucket, which overlap cannot hide)."""
    for folder in ("told", "sized"):
        (tmp_path / folder).mkdir()
    told = diagnosed(tmp_path / "told", ddp_job(sized=False), "once-per-step")
    sized = diagnosed(tmp_path / "sized", one_exchange_job(sized=False))
    said = " ".join(told.notes)
    assert ("--grad-sync once-per-step is used, overriding what the traces show (all-reduces "
            "in 4 of the 4 micro-steps a step, read as DDP reducing its gradients in each): the "
            "exchange is priced as DDP's once a step (under no_sync)") in said
    assert "changes nothing here" not in said
    assert "the traces record no message size" not in said  # the user has said
    assert reducing_note(told) is None
    assert "grad_sync" not in gains(told)
    assert gains(told) == pytest.approx(gains(sized), rel=1e-9)
    assert told.first_remedy.key == sized.first_remedy.key


def test_grad_sync_once_per_step_still_changes_nothing_on_ddp_reducing_once(tmp_path):
    """Where the traces already read DDP reducing once a step, the flag changes nothing (and
    says so), as before."""
    report = diagnosed(tmp_path, ddp_job(sized=True), "once-per-step")
    assert ("--grad-sync once-per-step changes nothing here: strategy ddp reduces gradients "
            "once per step anyway") in " ".join(report.notes)
    assert reducing_note(report) is None


def test_ddp_without_no_sync_still_reads_as_reducing_in_each_micro_step(tmp_path):
    """The gradients' all-reduce in each micro-step beside the loss's: 4 of 4 reduce, with
    sizes too (the 1,000-element ones are the largest, none of them set aside)."""
    report = diagnosed(tmp_path, ddp_job(sized=True, no_sync=False))
    assert reducing_note(report).startswith("the traces show all-reduces in 4 of the 4 "
                                            "micro-steps a step")
    assert DDP_NO_SYNC_TITLE.format(s=4) in [r.title for r in report.remedies]


def test_grad_sync_every_micro_step_overrides_a_ddp_reading_once_a_step(tmp_path):
    """Session 42: --grad-sync every-micro-step on DDP read as reducing once a step (no_sync,
    sizes: 1 of 4) said 'changes nothing here: strategy ddp reduces gradients once per step
    anyway' and priced one exchange (no no_sync remedy, accumulation +4.8 %). The user's word
    wins, as once-per-step's does: priced as DDP reducing in each of the 4 micro-steps, the
    override said (what the traces showed, what was given), the no_sync remedy offered and
    accumulation held back; every gain that of the same job reducing a quarter of the
    gradients' time in each micro-step (read so off its own traces: the same step, compute,
    exchange and idle)."""
    for folder in ("told", "each"):
        (tmp_path / folder).mkdir()
    told = diagnosed(tmp_path / "told", ddp_job(sized=True), "every-micro-step")
    each = diagnosed(tmp_path / "each", ddp_job(sized=True, no_sync=False,
                                                gradients_us=GRADIENTS_US / K))
    said = " ".join(told.notes)
    assert ("--grad-sync every-micro-step is used, overriding what the traces show (gradient "
            "all-reduces in 1 of the 4 micro-steps a step, read as DDP reducing them once a "
            "step under no_sync): the exchange is priced as DDP's reducing in each of the 4 "
            "micro-steps") in said
    assert "changes nothing here" not in said
    assert reducing_note(told) is None  # the traces do not show it: the override says it
    assert reducing_note(each).startswith("the traces show all-reduces in 4 of the 4")
    assert DDP_NO_SYNC_TITLE.format(s=4) in [r.title for r in told.remedies]
    assert not {r.key: r for r in told.remedies}["accumulation"].applicable
    assert gains(told) == pytest.approx(gains(each), rel=1e-9)
    assert told.first_remedy.key == each.first_remedy.key


def test_grad_sync_every_micro_step_changes_nothing_where_the_traces_show_it(tmp_path):
    """DDP already read as reducing in each micro-step: the flag changes nothing, and says why
    in the traces' words (before: 'strategy ddp reduces gradients once per step anyway')."""
    (tmp_path / "told").mkdir()
    (tmp_path / "read").mkdir()
    told = diagnosed(tmp_path / "told", ddp_job(sized=True, no_sync=False), "every-micro-step")
    read = diagnosed(tmp_path / "read", ddp_job(sized=True, no_sync=False))
    assert ("--grad-sync every-micro-step changes nothing here: the traces show DDP reducing "
            "its gradients in each of the 4 micro-steps a step already") in " ".join(told.notes)
    assert reducing_note(told) == reducing_note(read)
    assert gains(told) == pytest.approx(gains(read), rel=1e-12)
