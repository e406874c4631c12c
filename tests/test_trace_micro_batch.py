"""diagnose --trace reads the micro-batch from the input shapes torch.profiler records
(record_shapes=True, session 44). A first-day user's 2-process gloo DDP traces recorded with
record_shapes still got "Double the per-process batch (the traces do not record its size)",
though every op's ``Input Dims`` held the batch of 32. Read where the model's first op in the
DDP forward and the loss agree (``trace_batch``); today's words where the trace records no
shapes or the two disagree. A real 2-rank job (tests/trace_job.py, batch 16) and hand-made ones."""

from __future__ import annotations

import json

import pytest

from scalesim import traces
from scalesim.diagnosis import NOMINAL_BATCH_TITLES, traced_batch_title
from scalesim.trace_batch import leading_dimension
from scalesim.trace_diagnosis import diagnose_traces
from scalesim.trace_ranks import load_traces

DDP_FORWARD = "DistributedDataParallel.forward"
BACKWARD = "autograd::engine::evaluate_function: AddmmBackward0"


@pytest.mark.slow
def test_a_real_ddp_job_with_record_shapes_gives_its_batch(ddp_trace_jobs):
    summaries = load_traces(ddp_trace_jobs["loader"])  # 2 ranks, batch 16, record_shapes
    for s in summaries:
        assert s.micro_batch == 16, s.micro_batch_from
        assert "aten::linear" in s.micro_batch_from and "aten::mse_loss" in s.micro_batch_from
    report = diagnose_traces(summaries, "loader")
    (batch,) = [r for r in report.remedies if r.key == "bigger_batch"]
    assert batch.title == traced_batch_title("process", 16, 32)
    assert batch.title == "Double the per-process batch (16 -> 32, from the traces' input shapes)"
    assert report.details["micro_batch"] == 16
    (note,) = [n for n in report.notes if "input shapes (record_shapes)" in n]
    assert "a micro-batch of 16 samples" in note and note.endswith("on every rank")
    assert json.loads(report.to_json())["details"]["micro_batch"] == 16


def _op(name, ts, dur, cat="cpu_op", dims=None):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {} if dims is None else {"Input Dims": dims}}


def _trace(tmp_path, rank, first_dims, loss_dims, steps=3, evaluation=False, name="r"):
    """Steps of 1000 us: a DDP forward (its first op ``first_dims``), the loss (``loss_dims``),
    a backward and an all-reduce; ``evaluation``: one more forward without a backward (a
    no_grad pass with a batch of 1000) in each step, as the training one's loss is."""
    events = []
    for n in range(steps):
        t = n * 1000.0
        events += [_op(f"ProfilerStep#{n + 1}", t, 1000.0, "user_annotation"),
                   _op(DDP_FORWARD, t + 10, 300.0, "user_annotation"),
                   _op("aten::linear", t + 20, 200.0, dims=first_dims),
                   _op("aten::cross_entropy_loss", t + 320, 30.0, dims=loss_dims),
                   _op(BACKWARD, t + 400, 300.0),
                   _op("record_param_comms", t + 720, 200.0)]
        events[-1]["args"] = {"Collective name": "allreduce"}
        if evaluation:
            events += [_op(DDP_FORWARD, t + 930, 50.0, "user_annotation"),
                       _op("aten::linear", t + 935, 30.0, dims=[[1000, 512], [10, 512]]),
                       _op("aten::cross_entropy_loss", t + 970, 5.0, dims=[[1000, 10], [1000]])]
    path = tmp_path / f"{name}{rank}.json"
    path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                    "world_size": 2}, "traceEvents": events}))
    return traces.summarise(path)


def _bigger_batch_title(summaries):
    report = diagnose_traces(summaries, "t")
    return next(r.title for r in report.remedies if r.key == "bigger_batch"), report


def test_the_first_op_and_the_loss_agreeing_give_the_batch_and_an_evaluation_pass_is_left_out(
        tmp_path):
    ranks = [_trace(tmp_path, r, [[32, 512], [1024, 512], [1024]], [[32, 10], [32], [], []],
                    evaluation=True) for r in (0, 1)]
    assert [s.micro_batch for s in ranks] == [32, 32]
    title, report = _bigger_batch_title(ranks)
    assert title == "Double the per-process batch (32 -> 64, from the traces' input shapes)"


def test_no_shapes_keep_the_words_that_the_size_is_not_recorded(tmp_path):
    ranks = [_trace(tmp_path, r, None, None) for r in (0, 1)]
    assert [s.micro_batch for s in ranks] == [None, None]
    title, report = _bigger_batch_title(ranks)
    assert title == NOMINAL_BATCH_TITLES["bigger_batch"].format(device="process")
    assert not any("input shapes" in n for n in report.notes)
    assert report.details["micro_batch"] is None


def test_a_language_models_shapes_that_disagree_name_no_batch(tmp_path):
    """An embedding takes its weight first (vocabulary 50,257) and the loss the flattened tokens
    (4 x 128): neither is the batch of 4, so none is said, and a note says why."""
    ranks = [_trace(tmp_path, r, [[50257, 64], [4, 128]], [[512, 50257], [512]])
             for r in (0, 1)]
    assert [s.micro_batch for s in ranks] == [None, None]
    title, report = _bigger_batch_title(ranks)
    assert title == NOMINAL_BATCH_TITLES["bigger_batch"].format(device="process")
    (note,) = [n for n in report.notes if "input shapes" in n]
    assert "not read" in note and "[50257]" in note and "[512]" in note


def test_ranks_that_read_two_batches_name_none(tmp_path):
    ranks = [_trace(tmp_path, r, [[b, 512]], [[b, 10], [b]]) for r, b in ((0, 32), (1, 16))]
    title, report = _bigger_batch_title(ranks)
    assert title == NOMINAL_BATCH_TITLES["bigger_batch"].format(device="process")
    assert any("rank 0: 32, rank 1: 16" in n for n in report.notes)


@pytest.mark.parametrize("args, lead", [
    ({"Input Dims": [[32, 512], [1024, 512]]}, 32),
    ({"Input Dims": [[], [32]]}, None),  # the first input is no tensor
    ({"Input Dims": "[[32, 512]]"}, None),  # not the list torch.profiler writes
    ({"Input Dims": [[0, 4]]}, None),
    ({}, None),
    (None, None),
])
def test_the_leading_dimension_is_read_only_from_a_first_tensor_input(args, lead):
    assert leading_dimension(args) == lead


def _fsdp1_trace(tmp_path, rank, steps=3):
    """FSDP1 (FullyShardedDataParallel, FULL_SHARD) as a real 2-rank gloo job traced it (torch
    2.13, session 46): the root's forward opens with its ``_root_pre_forward`` and each unit's
    ``_pre_forward``, which unshard the flat parameter (``aten::chunk`` of its 262,656
    elements, a ``c10d::allgather_`` of half of them) before the model's ``aten::linear`` on
    the micro-batch of 32."""
    flat = [[262656], [], []]
    events = []
    for n in range(steps):
        t = n * 1000.0
        events += [_op(f"ProfilerStep#{n + 1}", t, 1000.0, "user_annotation"),
                   _op("FullyShardedDataParallel.forward", t + 10, 400.0, "user_annotation"),
                   _op("FullyShardedDataParallel._root_pre_forward", t + 12, 40.0,
                       "user_annotation"),
                   _op("aten::chunk", t + 14, 5.0, dims=flat),
                   _op("FullyShardedDataParallel._pre_forward", t + 60, 60.0, "user_annotation"),
                   _op("aten::narrow", t + 62, 5.0, dims=[[262656], [], [], []]),
                   _op("c10d::allgather_", t + 70, 40.0, dims=[[], [[131328]], [], [], []]),
                   _op("aten::linear", t + 130, 200.0, dims=[[32, 512], [512, 512], [512]]),
                   _op("aten::mse_loss", t + 420, 30.0, dims=[[32, 1], [32, 1], []]),
                   _op(BACKWARD, t + 500, 300.0)]
    path = tmp_path / f"fsdp{rank}.json"
    path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                    "world_size": 2}, "traceEvents": events}))
    return traces.summarise(path)


def test_fsdp1s_unsharding_before_the_model_is_no_input(tmp_path):
    """The first shaped op of FSDP1's root forward was the unshard's ``aten::chunk`` of the flat
    parameter, so no batch was read ("the forwards' first inputs lead with [262656] and the
    losses' with [32]"); the ops inside FSDP1's pre-forward hooks are passed over."""
    ranks = [_fsdp1_trace(tmp_path, r) for r in (0, 1)]
    assert [s.micro_batch for s in ranks] == [32, 32], ranks[0].micro_batch_from
    assert "aten::linear" in ranks[0].micro_batch_from
    title, _ = _bigger_batch_title(ranks)
    assert title == "Double the per-process batch (32 -> 64, from the traces' input shapes)"


def test_calibrate_says_when_its_given_micro_batch_is_not_the_traces(tmp_path):
    """calibrate --from-trace 64=FILE of traces whose shapes give 32 took 64 in silence, its
    per-sample time half the traces' (session 59 bug hunt). B= still wins, as said; a note
    names both and the entry to give."""
    from scalesim.sources import trace_compute as tc

    dims = ([[32, 512], [1024, 512], [1024]], [[32, 10], [32], [], []])
    for r in (0, 1):
        _trace(tmp_path, r, *dims)
    paths = [str(tmp_path / f"r{r}.json") for r in (0, 1)]
    (run,) = tc.read_runs({64: paths})
    (note,) = [n for n in run.ranks[0].summary.notes if "as given" in n]
    assert note.startswith("micro-batch 64 as given (64=r0.json), but the traces' input shapes")
    assert "a micro-batch of 32 samples" in note and note.endswith("give 32=r0.json if they are right")
    (same,) = tc.read_runs({32: paths})
    assert not any("as given" in n for x in same.ranks for n in x.summary.notes)
