"""Hostile runs files and traces: every one is one line naming the file, the event or row, and
what is wrong (exit 2), never a traceback (issue 14, parsers)."""

from __future__ import annotations

import gzip
import json

import pytest
from test_traces import event

from scalesim import traces
from scalesim.cli.main import main
from scalesim.errors import ScalesimError
from scalesim.runs import load_runs, parse_runs_text

DEEP = 100_000  # nesting levels: far past Python's recursion limit


def _events(step_dur=100.0):
    return [event("ProfilerStep#1", 0, step_dur, cat="user_annotation"), event("aten::mm", 1, 10),
            event("ProfilerStep#2", 200, 100.0, cat="user_annotation"), event("aten::mm", 201, 10)]


def _trace(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line_exit_2(capsys, *argv) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


# ------------------------------------------------------------------ runs files


def test_deeply_nested_runs_json(tmp_path, capsys):
    path = _trace(tmp_path, "runs.json", "[" * DEEP + "]" * DEEP)
    with pytest.raises(ScalesimError, match="runs.json.*nested"):
        load_runs(path)
    err = _one_line_exit_2(capsys, "diagnose", str(path))
    assert "runs.json" in err and "nested" in err


def test_csv_cell_over_the_cell_limit_names_the_line(tmp_path, capsys):
    huge = "9" * (5 << 20)
    path = _trace(tmp_path, "runs.csv", f"devices,nodes,samples_per_s\n1,1,100\n2,1,{huge}\n")
    err = _one_line_exit_2(capsys, "diagnose", str(path))
    assert "runs.csv" in err and "line 3" in err and "characters" in err


def test_csv_cell_over_128_kib_of_rank_times_is_read():
    # 16 384 ranks of "0.1234567;" is 160 KiB in one cell: more than csv's default limit.
    n = 16_384
    times = ";".join(["0.1234567"] * n)
    text = (f"devices,nodes,step_time_s,rank_step_times_s\n8192,1024,0.12,{';'.join(['0.1'] * 8192)}"
            f"\n{n},2048,0.13,{times}\n")
    runs = parse_runs_text(text, "r.csv")
    assert len(runs.rows[-1].rank_step_times_s) == n


def test_huge_digit_string_cell_is_a_field_error():
    text = "devices,nodes,samples_per_s\n1,1,100\n" + "9" * 5000 + ",1,200\n"
    with pytest.raises(ScalesimError, match="run 2.*devices"):
        parse_runs_text(text, "r.csv")


# ------------------------------------------------------------------ traces


def test_deeply_nested_trace_event(tmp_path, capsys):
    path = _trace(tmp_path, "t.json", '{"traceEvents":[' + "[" * DEEP + "]" * DEEP + "]}")
    with pytest.raises(ScalesimError, match=r"t\.json: event 1 .*nested"):
        traces.summarise(path)
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path))


def test_deeply_nested_trace_metadata(tmp_path):
    path = _trace(tmp_path, "t.json", '{"deviceProperties":' + "[" * DEEP + "]" * DEEP
                  + ',"traceEvents":[]}')
    with pytest.raises(ScalesimError, match=r"t\.json: .*deviceProperties.*nested"):
        traces.summarise(path)


def test_corrupt_gzip_trace(tmp_path, capsys):
    data = gzip.compress(json.dumps({"traceEvents": _events() * 500}).encode())
    path = tmp_path / "t.json.gz"
    path.write_bytes(data[:20] + b"\x00" * 64 + data[84:])
    with pytest.raises(ScalesimError, match=r"t\.json\.gz: .*(corrupt|cannot read)"):
        traces.summarise(path)
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path))


def test_distributed_info_as_a_list(tmp_path, capsys):
    path = _trace(tmp_path, "t.json", json.dumps({"distributedInfo": [0, 2],
                                                  "traceEvents": _events()}))
    with pytest.raises(ScalesimError, match=r"t\.json: distributedInfo .*list.*object"):
        traces.summarise(path)
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path))


@pytest.mark.parametrize("info, field", [({"rank": 0, "world_size": "8"}, "world_size"),
                                         ({"rank": 0, "world_size": 0}, "world_size"),
                                         ({"rank": 0, "world_size": 10**30}, "world_size"),
                                         ({"rank": 0, "world_size": True}, "world_size"),
                                         ({"rank": "0", "world_size": 2}, "rank"),
                                         ({"rank": -1, "world_size": 2}, "rank"),
                                         ({"rank": 3, "world_size": 2}, "rank")])
def test_distributed_info_fields_of_the_wrong_type(tmp_path, capsys, info, field):
    path = _trace(tmp_path, "t.json", json.dumps({"distributedInfo": info,
                                                  "traceEvents": _events()}))
    with pytest.raises(ScalesimError, match=rf"t\.json: distributedInfo\.{field}"):
        traces.summarise(path)
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path))


def test_zero_length_step_is_left_out_with_a_note(tmp_path, capsys):
    path = _trace(tmp_path, "t.json", json.dumps({"traceEvents": _events(step_dur=0.0)}))
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [2]
    assert any("ProfilerStep#1" in n and "duration 0" in n for n in s.notes)
    assert main(["diagnose", "--trace", str(path)]) == 0


@pytest.mark.parametrize("step_dur", [1e-300, 1e-7, 2e12])
def test_a_step_outside_the_duration_bounds_is_left_out_like_a_zero_one(tmp_path, capsys,
                                                                         step_dur):
    """Session 10: a step of 1e-300 us (1e-306 s) was measured: calibrate --from-trace then
    stopped on an internal object, `Jitter: field 'per_rank_median_s.1': 5e-307 given`. A step
    outside positive_duration_s (1 ps to 11.6 days) is left out with a note, as duration 0 is;
    when no step is left, one line naming the file."""
    path = _trace(tmp_path, "t.json", json.dumps({"traceEvents": _events(step_dur=step_dur)}))
    s = traces.summarise(path)
    assert [st.step for st in s.steps] == [2]
    assert any("ProfilerStep#1" in n and "outside" in n for n in s.notes)
    every = [event("ProfilerStep#1", 0, step_dur, cat="user_annotation"),
             event("aten::mm", 1, 10)]
    only = _trace(tmp_path, "only.json", json.dumps({"traceEvents": every}))
    err = _one_line_exit_2(capsys, "calibrate", "--from-trace", f"8={only}", "--out",
                           str(tmp_path / "p.json"))
    assert "only.json: every ProfilerStep" in err and "Jitter" not in err
    assert not (tmp_path / "p.json").exists()


def test_only_zero_length_steps_is_an_error(tmp_path, capsys):
    events = [event("ProfilerStep#1", 0, 0, cat="user_annotation"), event("aten::mm", 1, 10)]
    path = _trace(tmp_path, "t.json", json.dumps({"traceEvents": events}))
    with pytest.raises(ScalesimError, match=r"t\.json: .*ProfilerStep.*duration 0"):
        traces.summarise(path)
    for second in (tmp_path / "t1.json",):
        second.write_text(json.dumps({"traceEvents": events}))
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path), str(second))


@pytest.mark.parametrize("field", ["ts", "dur"])
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400])
def test_non_finite_or_huge_times_name_the_event(tmp_path, capsys, field, literal):
    bad = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5, "dur": 10}
    bad[field] = "@@"
    body = json.dumps({"traceEvents": [event("ProfilerStep#1", 0, 100, cat="user_annotation"),
                                       bad]}).replace('"@@"', literal)
    path = _trace(tmp_path, "t.json", body)
    with pytest.raises(ScalesimError, match=rf"t\.json: event 2 \(aten::mm\): {field} "):
        traces.summarise(path)
    _one_line_exit_2(capsys, "diagnose", "--trace", str(path))


def test_args_of_the_wrong_type_are_ignored(tmp_path):
    events = _events() + [dict(event("record_param_comms", 5, 3), args=[1, 2])]
    s = traces.summarise(_trace(tmp_path, "t.json", json.dumps({"traceEvents": events})))
    assert "record_param_comms:?" in s.collectives


@pytest.mark.parametrize("argv", [["diagnose", "/dev/zero"], ["predict", "--profile", "/dev/zero"],
                                  ["diagnose", "--trace", "/dev/zero"],
                                  ["diagnose", "--trace", "/dev/urandom"]])
def test_endless_inputs_end_with_one_line(capsys, argv):
    _one_line_exit_2(capsys, *argv)


def test_text_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    from scalesim import jsonio

    monkeypatch.setattr(jsonio, "MAX_TEXT_CHARS", 100)
    path = _trace(tmp_path, "runs.csv", "devices,nodes,samples_per_s\n" + "1,1,10\n" * 20)
    with pytest.raises(ScalesimError, match=r"runs\.csv: over 100 characters"):
        load_runs(path)


# ------------------------------------------------------------------ calibrate --from-* arguments
# Fuzz findings (tests/test_fuzz.py, merged code): a too-long B= or name raised OSError from
# Path.exists, a B= beyond the bounds reached ComputePoint's validation (a field error naming
# no argument), a 5000-digit B= raised ValueError (int's digit limit).

@pytest.mark.parametrize("batch, message", [
    ("0", "the micro-batch: 0 is outside 1 <= x"),
    ("16777217", "the micro-batch: 16777217 is outside 1 <= x"),
    ("1" * 5000, "the micro-batch: a whole number of 5000 digits is outside"),
])
def test_from_trace_batch_prefix_is_bounded(tmp_path, capsys, batch, message):
    assert main(["calibrate", "--from-trace", f"{batch}={tmp_path / 'r0.json'}",
                 "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "--from-trace" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flag, prefix", [("--from-trace", "32="), ("--from-nccl-tests", "intra=")])
def test_from_entries_with_a_name_too_long_for_the_os(tmp_path, capsys, flag, prefix):
    assert main(["calibrate", flag, f"{prefix}{tmp_path / ('x' * 300)}",
                 "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "too long" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ one line, whatever the value
# docs/reliability.md's earlier finding, still open on the merged code: a value with a line break
# quoted in an error message printed it over two lines; a NUL in a path raised ValueError.

@pytest.mark.parametrize("argv", [
    ["predict", "--hardware", "a\nb"], ["predict", "--profile", "a\r\nb.json"],
    ["predict", "--workload", "a\x1cb\u2028c\x85d"],  # what str.splitlines also breaks at
    ["plan", "--global-batch", "8", "--model", "x\ny"], ["diagnose", "a\nb.csv"],
    ["calibrate", "--from-topo", "a\nb", "--out", "p.json"],
])
def test_a_line_break_in_a_value_stays_on_the_error_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "\\" in err


@pytest.mark.parametrize("argv", [
    ["predict", "--hardware", "\x1b[31mred"], ["diagnose", "\x1b]0;title\x07.csv"],
    ["predict", "--workload", "a\u202eb"],  # a text-direction control reorders the line
])
def test_a_control_character_in_a_value_is_escaped_on_the_error_line(capsys, argv):
    """One line was not enough: an ESC (or BEL, or U+202E) quoted in an error reached the
    terminal raw and drove it (colours, the window title); now written as Python writes it."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert not any(c in err for c in "\x1b\x07\u202e") and ("\\x1b" in err or "\\u202e" in err)


def test_a_nul_in_a_path_is_a_scalesim_error():
    from scalesim.jsonio import read_json

    with pytest.raises(ScalesimError, match="path: a file path cannot hold a NUL character"):
        read_json("a\x00b.json")


@pytest.mark.parametrize("value", ["1" + "0" * 400, "NaN", "Infinity"])
def test_from_trace_checks_event_times_before_reading_them(tmp_path, capsys, value):
    """Fuzz finding: calibrate --from-trace raised OverflowError on a ts of 10**400 (its reader
    saw the event before diagnose's check did)."""
    from test_traces import gpu_trace

    trace = gpu_trace(0)
    trace["traceEvents"][2]["ts"] = "@@"
    path = _trace(tmp_path, "r0.json", json.dumps(trace).replace('"@@"', value))
    assert main(["calibrate", "--from-trace", f"32={path}", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "event 3 (ProfilerStep#1): ts is" in err and len(err.strip().splitlines()) == 1
