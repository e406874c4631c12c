"""Session 53's fuzz of the file readers earlier fuzzing left out (validation cases, profiles,
runs files, profiler traces), one field at a time: each finding, one clear line."""

from __future__ import annotations

import json

import pytest
from test_traces import gpu_trace

from scalesim.cli.main import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("points", [3, -1, 1.5])
@pytest.mark.parametrize("inter_node", ["null", "left out"])
def test_a_case_whose_points_are_a_number_is_refused_by_its_field(tmp_path, capsys, points,
                                                                   inter_node):
    """The data-parallel format's defaults look through a case's points (a network null or
    left out while a point spans nodes): points of a number raised TypeError there (a traceback)."""
    from scalesim.shipped import validation_path

    data = json.loads(validation_path("cases.json").read_text())
    case = data["cases"][0] | {"points": points}
    case["hardware"]["inter_node"] = None
    if inter_node == "left out":
        del case["hardware"]["inter_node"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**data, "cases": [case]}))
    assert main(["validate", str(path)]) == 2
    assert _one_line(capsys) == (f"scalesim validate: error: {path}: case '{case['id']}': "
                                 "field 'points': Input should be a valid list")


BIG = 10**30  # past 2**63: the traces' 64-bit integer columns overflowed


def _launched_gpu_traces():
    """``gpu_trace``'s two ranks with what Kineto records beside them: the matmul's input
    shapes, and each kernel's correlation id matched by a host launch."""
    docs = [gpu_trace(0), gpu_trace(1, slow_us=50.0)]
    for doc in docs:
        events = doc["traceEvents"]
        for ev in events:
            if ev["name"] == "aten::mm":
                ev["args"]["Input Dims"] = [[8, 4], [4, 4]]
            if ev.get("cat") == "kernel":
                ev["args"]["correlation"] = 7
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": 95.0, "dur": 3.0, "args": {"correlation": 7}})
    return docs


def _set_tid(ev, value):
    if ev.get("cat") == "kernel":
        ev["tid"] = value


def _set_arg(name: str, value_of):
    """A change setting the event's arg ``name`` to ``value_of(value)``, or leaving it out
    where ``value`` is None."""
    def change(ev, value):
        if name in ev["args"]:
            ev["args"][name] = value_of(value)
            if value is None:
                del ev["args"][name]
    return change


_set_correlation = _set_arg("correlation", lambda value: value)
_set_lead = _set_arg("Input Dims", lambda value: [[value, 4], [4, 4]])


def _diagnosis(tmp_path, capsys, change, value) -> str:
    docs = _launched_gpu_traces()
    for ev in docs[0]["traceEvents"]:
        change(ev, value)
    paths = []
    for rank, doc in enumerate(docs):
        paths.append(tmp_path / f"r{rank}.json")
        paths[-1].write_text(json.dumps(doc))
    assert main(["diagnose", "--trace", *map(str, paths)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out


@pytest.mark.parametrize("change, same_as", [
    (_set_tid, str(BIG)),  # a thread of its own, as a tid string is (hashed)
    (_set_correlation, None),  # no launch matched, as a kernel of no correlation id
    (_set_lead, None),  # no batch read off it, as an op that records no shapes
])
def test_a_trace_id_or_shape_past_64_bits_is_read_as_no_such_number(tmp_path, capsys, change,
                                                                     same_as):
    """A tid, a correlation id or an input's leading dimension of 10**30 in one rank's trace
    raised OverflowError (diagnose --trace: a traceback): it is read as what the trace would
    say without it."""
    big = _diagnosis(tmp_path, capsys, change, BIG)
    assert big == _diagnosis(tmp_path, capsys, change, same_as)
    assert "Likely cause" in big


@pytest.mark.parametrize("layers, shown", [(1e20, "1e20"), (1e308, "1e308")])
def test_a_whole_number_past_64_bits_is_refused_by_its_bounds(tmp_path, capsys, layers, shown):
    """A whole-number field given a float past 2**63 got pydantic's "Unable to parse input
    string as an integer, exceeded maximum size" (the file held a number, not a string), where
    10**30 got the field's bounds."""
    from scalesim.presets import get_workload

    path = tmp_path / "w.json"
    path.write_text(json.dumps(get_workload("bert-large").model_dump(mode="json")
                               | {"layers": layers}))
    assert main(["predict", "--workload", str(path), "--devices", "1"]) == 2
    assert _one_line(capsys) == (
        f"scalesim predict: error: {path}: field 'layers': {shown} given; allowed: 1 <= x <= "
        "100,000 layers (transformer layers or repeated blocks (GPT-3: 96; 1000x the deepest "
        "dense models))")


def test_a_case_point_past_64_bits_is_flagged_by_its_bounds(tmp_path, capsys):
    from scalesim.shipped import validation_path

    data = json.loads(validation_path("cases.json").read_text())
    case = data["cases"][0]
    case["points"][0]["devices"] = 1e308
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({**data, "cases": [case]}))
    assert main(["validate", str(path)]) == 0
    assert ("  flag: point not read, not predicted: points.0: field 'devices': 1e308 given; "
            "allowed: 1 <= x <= 1,048,576 devices") in capsys.readouterr().out
