"""Session 40: the sharding strategy read off traces of a job that accumulates gradients
(``trace_collectives.traced_exchange``, ``micro_step_syncs``). Sharding's all-gathers are
counted per reduction of a unit; under no_sync a unit reduces once a step but gathers in each of
the k micro-steps, so a ZeRO-2 job at k = 4 gathered 4 times a reduction and read as ZeRO-3.
Hand-made 2-rank CPU traces, each micro-step a forward, a backward op and the collectives a
ZeRO stage posts (``record_param_comms``), 2 units."""

from __future__ import annotations

import json

import pytest
from trace_events import BACKWARD, comm, op, stepped, summaries

from scalesim.trace_collectives import micro_step_syncs, traced_exchange

FORWARD = "FSDP::root_pre_forward"
UNITS = 2
MICRO_US = 250.0


def zero_trace(stage, k, no_sync, steps=3):
    """``steps`` steps of ``k`` micro-steps: each a forward (stage 2 and 3 gather the 2 units
    in it), a backward (stage 3 gathers them again) and, in every micro-step or under
    ``no_sync`` the last only, a reduce-scatter of each unit; stage 1 gathers them once a
    step, after the last backward (the updated parameters)."""

    def micro_step(m, a):
        events = [op(FORWARD, a + 10.0, 5.0, cat="user_annotation"), op("aten::mm", a + 60.0, 30.0),
                  op(BACKWARD, a + 100.0, 50.0)]
        for u in range(UNITS):
            if stage >= 2:
                events.append(comm("_allgather_base", a + 20.0 + 10.0 * u))
            if stage == 3:
                events.append(comm("_allgather_base", a + 110.0 + 10.0 * u))
            last = m == k - 1
            if last or not no_sync:
                events.append(comm("_reduce_scatter_base", a + 180.0 + 10.0 * u))
            if stage == 1 and last:
                events.append(comm("_allgather_base", a + 220.0 + 10.0 * u))
        return events

    return stepped(k, MICRO_US, micro_step, steps)


@pytest.mark.parametrize("stage, k, no_sync, strategy, grad_sync, per_micro_step", [
    # gathers a step per reduction: 4 (k under no_sync, before session 40 read as zero3) -> 1
    (2, 4, True, "zero2", "once-per-step", 1.0),
    # k = 2 alike: 2 per reduction either way, told apart by the micro-steps that reduce
    (2, 2, True, "zero2", "once-per-step", 1.0),
    (3, 2, False, "zero3", "every-micro-step", 2.0),
    # 2k = 8 per reduction under no_sync: 2 a micro-step
    (3, 4, True, "zero3", "once-per-step", 2.0),
    (2, 4, False, "zero2", "every-micro-step", 1.0),
    (3, 4, False, "zero3", "every-micro-step", 2.0),
    # ZeRO-1 gathers once a step: 1 per reduction, 1/4 a micro-step (Megatron-Core's, alike)
    (1, 4, True, "zero2", "once-per-step", 0.25),
    # one micro-step a step: as before
    (2, 1, False, "zero2", "every-micro-step", 1.0),
    (3, 1, False, "zero3", "every-micro-step", 2.0),
])
def test_the_strategy_is_read_per_micro_step(tmp_path, stage, k, no_sync, strategy, grad_sync,
                                             per_micro_step):
    s = summaries(tmp_path, zero_trace(stage, k, no_sync))
    reducing = 1 if no_sync else k
    assert [st.micro_steps for st in s[0].steps] == [k] * 3
    assert {st.micro_steps_with["reduce-scatter"] for st in s[0].steps} == {reducing}
    assert micro_step_syncs(s, "reduce-scatter") == (k, reducing)
    exchange, words = traced_exchange(s)
    assert (exchange.strategy, exchange.grad_sync) == (strategy, grad_sync)
    assert f"all-gathers per reduce-scatter {per_micro_step:.2g}" in words
    if reducing < k:
        assert (f" a micro-step ({per_micro_step * k:.2g} a step, over {k} micro-steps of "
                "which 1 posts reduce-scatters), read as") in words


def test_the_nested_host_ops_of_one_collective_count_one_micro_step(tmp_path):
    """A collective's host ops nest (c10d:: around record_param_comms) and gloo's run later on
    its own thread, past the next forward: one family is read (record_param_comms first), so
    the reduce-scatter a gloo thread ran 100 us into the next micro-step is not a second
    micro-step that reduces."""
    events = zero_trace(2, 4, True)
    for e in [e for e in events if e["args"].get("Collective name") == "_reduce_scatter_base"]:
        events.append(op("c10d::_reduce_scatter_base_", e["ts"] - 1.0, 7.0))
        events.append(op("gloo:reduce_scatter", e["ts"] + 100.0, 5.0, cat="user_annotation"))
    s = summaries(tmp_path, events)
    assert {st.micro_steps_with["reduce-scatter"] for st in s[0].steps} == {1}


# ---------------------------------------------------------------- --grad-sync on traces


def test_grad_sync_is_honoured_on_the_strategy_read(tmp_path, monkeypatch):
    """A ZeRO-3 job reducing in each of 4 micro-steps reads as zero3 every-micro-step; told
    --grad-sync once-per-step, the model runs it so (before session 40: refused, "drop it"):
    the link is priced on the bytes a once-a-step ZeRO-3 step sends, 2k + 1 = 9 units for the
    traced time where every micro-step's are 3k = 12 (``sent_units``), so its bus bandwidth is
    9/12 of the other reading's."""
    import scalesim.trace_diagnosis as trace_diagnosis
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    s = summaries(tmp_path, zero_trace(3, 4, no_sync=False))
    seen = []
    real = trace_diagnosis.model_remedies
    monkeypatch.setattr(trace_diagnosis, "model_remedies",
                        lambda profile, *a, **kw: seen.append(profile) or real(profile, *a, **kw))
    read = diagnose_request(DiagnoseOptions(), traces=s, trace_source="t")
    told = diagnose_request(DiagnoseOptions(grad_sync="once-per-step"), traces=s,
                            trace_source="t")
    assert read.details["exchange"] == {"strategy": "zero3", "zero_framework": "fsdp",
                                        "grad_sync": "every-micro-step"}
    assert told.details["exchange"]["grad_sync"] == "once-per-step"
    assert ("--grad-sync once-per-step is used, overriding what the traces show "
            "(every-micro-step: 4 of the 4 micro-steps a step post reduce-scatters)"
            ) in " ".join(told.notes)
    busbw = [p.hardware.intra_node.busbw_GBps for p in (seen[0], seen[-1])]
    assert busbw[1] / busbw[0] == pytest.approx(9 / 12, rel=1e-12)


def test_grad_sync_on_a_trace_read_as_ddp_says_it_changes_nothing(tmp_path):
    """No gather (DDP): --grad-sync once-per-step is noted as changing nothing, not refused;
    --strategy ddp with it stays refused (it says what cannot apply)."""
    from scalesim.diagnose_request import DiagnoseOptions, check_sources, diagnose_request
    from scalesim.errors import ScalesimError

    events = [e for e in zero_trace(2, 4, no_sync=True)
              if e["args"].get("Collective name") != "_allgather_base"]
    report = diagnose_request(DiagnoseOptions(grad_sync="once-per-step"),
                              traces=summaries(tmp_path, events), trace_source="t")
    assert report.details["exchange"]["strategy"] == "ddp"
    assert ("--grad-sync once-per-step changes nothing here: strategy ddp reduces gradients "
            "once per step anyway (it applies to ZeRO-2/3)") in report.notes
    with pytest.raises(ScalesimError, match="--grad-sync is for a job that sharded"):
        check_sources(DiagnoseOptions(strategy="ddp", grad_sync="once-per-step"), False, True,
                      False)


def test_a_given_strategy_reads_its_gradient_sync_off_the_traces(tmp_path, capsys, monkeypatch):
    """Session 40: `diagnose --trace --strategy zero2` without --grad-sync took every-micro-step
    (the flag's default) on a ZeRO-2 job under no_sync (1 of its 4 micro-steps reduces), so its
    link was priced on 2k = 8 units a step where the job sent 2 (``sent_units``): a bus
    bandwidth 4x the one the same traces read without --strategy. The gradient sync is now read
    off the traces' micro-steps; --grad-sync every-micro-step still overrides them, said so."""
    from cli_harness import run_cli

    import scalesim.trace_diagnosis as trace_diagnosis

    paths = [s.path for s in summaries(tmp_path, zero_trace(2, 4, no_sync=True))]
    seen = []
    real = trace_diagnosis.model_remedies
    monkeypatch.setattr(trace_diagnosis, "model_remedies",
                        lambda profile, *a, **kw: seen.append(profile) or real(profile, *a, **kw))

    def diagnose(*flags):
        code, out, err = run_cli(capsys, ["diagnose", "--trace", *map(str, paths), *flags,
                                          "--json"])
        assert code == 0, err
        return json.loads(out), seen[-1].hardware.intra_node.busbw_GBps

    read, read_bw = diagnose()
    named, named_bw = diagnose("--strategy", "zero2")
    told, told_bw = diagnose("--strategy", "zero2", "--grad-sync", "every-micro-step")
    assert read["details"]["exchange"]["grad_sync"] == "once-per-step"
    assert named["details"]["exchange"] == {"strategy": "zero2", "zero_framework": "fsdp",
                                            "grad_sync": "once-per-step"}
    assert ("the job exchanged as zero2 (FSDP SHARD_GRAD_OP under no_sync) (--strategy): the "
            "remedies start from it; its gradient sync is the traces' (once-per-step: 1 of the "
            "4 micro-steps a step posts reduce-scatters); give --grad-sync to say otherwise"
            ) in named["notes"]
    assert named_bw == pytest.approx(read_bw, rel=1e-12)
    assert told["details"]["exchange"]["grad_sync"] == "every-micro-step"
    assert ("the job exchanged as zero2 (FSDP SHARD_GRAD_OP) (--strategy): the remedies start "
            "from it; --grad-sync every-micro-step is used, overriding what the traces show "
            "(once-per-step: 1 of the 4 micro-steps a step posts reduce-scatters)"
            ) in told["notes"]
    assert told_bw / named_bw == pytest.approx(8 / 2, rel=1e-12)  # 2k units against 2
    code, out, _ = run_cli(capsys, ["diagnose", "--help"])
    assert code == 0 and ("on traces (diagnose --trace) the default is what they show: "
                          "once-per-step where one micro-step of two or more a step posts the "
                          "reduction") in " ".join(out.split())


def test_a_given_strategy_on_traces_that_reduce_every_micro_step_stays_so(tmp_path):
    """The traces' reading, not a default: a ZeRO-3 job reducing in each of its 4 micro-steps,
    given --strategy zero3, is every-micro-step with the traces' words."""
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    report = diagnose_request(DiagnoseOptions(strategy="zero3"),
                              traces=summaries(tmp_path, zero_trace(3, 4, no_sync=False)),
                              trace_source="t")
    assert report.details["exchange"]["grad_sync"] == "every-micro-step"
    assert ("its gradient sync is the traces' (every-micro-step: 4 of the 4 micro-steps a step "
            "post reduce-scatters); give --grad-sync to say otherwise") in " ".join(report.notes)


def test_grad_sync_that_changes_nothing_does_not_name_the_exchange_under_no_sync(tmp_path):
    """Session 40: --strategy zero3 --grad-sync once-per-step on traces of one micro-step a step
    said both '--grad-sync once-per-step changes nothing here' and 'the job exchanged as zero3
    (FSDP FULL_SHARD under no_sync)'. At k = 1 the step's one micro-step is its last, so the
    exchange reduces in it either way: named as without the flag, and run as without it (the
    same remedies and gains)."""
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    s = summaries(tmp_path, zero_trace(3, 1, no_sync=False))
    told = diagnose_request(DiagnoseOptions(strategy="zero3", grad_sync="once-per-step"),
                            traces=s, trace_source="t")
    plain = diagnose_request(DiagnoseOptions(strategy="zero3"), traces=s, trace_source="t")
    said = " ".join(told.notes)
    assert ("the job exchanged as zero3 (FSDP FULL_SHARD) (--strategy): the remedies start from "
            "it; --grad-sync once-per-step changes nothing here: accumulation 1: one micro-step "
            "per step reduces once either way") in said and "no_sync" not in said
    assert told.details["exchange"] == plain.details["exchange"] == {
        "strategy": "zero3", "zero_framework": "fsdp", "grad_sync": "every-micro-step"}
    assert [(r.key, r.gain) for r in told.remedies] == [(r.key, r.gain) for r in plain.remedies]


def test_the_exchange_reads_the_micro_steps_once(tmp_path, monkeypatch):
    """Session 41: ``traced_exchange`` counts the reducing micro-steps once (session 40 counted
    them again through ``traced_grad_sync`` for the gradient sync it had just read)."""
    import scalesim.trace_collectives as trace_collectives

    s = summaries(tmp_path, zero_trace(3, 4, no_sync=True))
    calls = []
    real = trace_collectives.micro_step_syncs
    monkeypatch.setattr(trace_collectives, "micro_step_syncs",
                        lambda *a: calls.append(a) or real(*a))
    exchange, _ = traced_exchange(s)
    assert (exchange.strategy, exchange.grad_sync) == ("zero3", "once-per-step")
    assert len(calls) == 1


def test_deepspeed_given_on_traces_that_reduce_once_a_step_says_what_was_read(tmp_path,
                                                                             monkeypatch):
    """Session 41: --strategy zero2 --zero-framework deepspeed on traces whose one micro-step
    of 4 reduce-scatters (as under no_sync, which DeepSpeed stage 2 refuses) gave no word: the
    exchange is priced as DeepSpeed's, 2k + 1 = 9 units a step on the time the traces' one
    reduction took, where the same traces read as FSDP under no_sync price 2 (a bus bandwidth
    4.5x). Now a note says what was read and what was assumed."""
    import scalesim.trace_diagnosis as trace_diagnosis
    from scalesim.diagnose_request import DiagnoseOptions, diagnose_request

    s = summaries(tmp_path, zero_trace(2, 4, no_sync=True))
    seen = []
    real = trace_diagnosis.model_remedies
    monkeypatch.setattr(trace_diagnosis, "model_remedies",
                        lambda profile, *a, **kw: seen.append(profile) or real(profile, *a, **kw))
    ds = diagnose_request(DiagnoseOptions(strategy="zero2", zero_framework="deepspeed"),
                          traces=s, trace_source="t")
    ds_bw = seen[-1].hardware.intra_node.busbw_GBps
    fsdp = diagnose_request(DiagnoseOptions(strategy="zero2"), traces=s, trace_source="t")
    assert ds.details["exchange"] == {"strategy": "zero2", "zero_framework": "deepspeed",
                                      "grad_sync": "every-micro-step"}
    assert fsdp.details["exchange"]["grad_sync"] == "once-per-step"
    assert ds_bw / seen[-1].hardware.intra_node.busbw_GBps == pytest.approx(9 / 2, rel=1e-12)
    assert ("the traces show once-per-step: 1 of the 4 micro-steps a step posts "
            "reduce-scatters, but DeepSpeed stage 2 reduces its gradients in every micro-step "
            "(its no_sync raises for stage 2/3): the exchange is priced as DeepSpeed's, every "
            "micro-step, on the collective time of the one that reduces, so its link reads "
            "faster than the traces show; if the job accumulated unsharded gradients (FSDP "
            "no_sync, a framework of its own), give --zero-framework fsdp") in " ".join(ds.notes)
    assert "its gradient sync is the traces'" not in " ".join(ds.notes)


def test_the_shared_trace_builder_lays_steps_out_by_hand():
    """``trace_events.stepped``, the step skeleton of the four hand-made-trace test files: 2
    steps of 2 micro-steps of 100 us, a 1 us op at each micro-step's start; ``comm`` records a
    message size only where one is given and sized."""
    events = stepped(2, 100.0, lambda m, a: [op(f"mm{m}", a, 1.0)], steps=2)
    assert [(e["name"], e["ts"], e["dur"]) for e in events] == [
        ("ProfilerStep#1", 0.0, 200.0), ("mm0", 0.0, 1.0), ("mm1", 100.0, 1.0),
        ("ProfilerStep#2", 200.0, 200.0), ("mm0", 200.0, 1.0), ("mm1", 300.0, 1.0)]
    assert events[0]["cat"] == "user_annotation" and events[1]["cat"] == "cpu_op"
    assert comm("allreduce", 7.0, 1000, True)["args"] == {"Collective name": "allreduce",
                                                         "In msg nelems": 1000}
    assert comm("allreduce", 7.0, 1000, False)["args"] == {"Collective name": "allreduce"}
    assert comm("_allgather_base", 7.0)["args"] == {"Collective name": "_allgather_base"}
    assert comm("broadcast", 7.0, dur_us=10.0)["dur"] == 10.0
