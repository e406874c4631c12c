"""One rule for "the JSON text ran out" (``jsonio.ends_mid_json``), read by a scalesim file's
parse and by the profiler trace's chunked reader (``trace_files._Stream.value``). The trace reader had
its own: any decode error within 64 characters of the end of what it had read, or an
unterminated string. So a whole trace with a wrong character near its end read as cut short
("the trace ends early (truncated file?)"), and the file rule missed a text cut inside a number
("12." at the end: no "cut short" note) or a \\uXXXX escape."""

from __future__ import annotations

import json

import pytest

from scalesim import trace_files, traces
from scalesim.errors import ScalesimError
from scalesim.jsonio import ends_mid_json, may_go_on, parse_json_text

CUT = "; the text ends before the JSON does: the file is cut short (truncated?)"
# every kind of value the decoder reads: numbers with a fraction and an exponent, a minus sign,
# each literal (NaN and the infinities too), escapes, a surrogate pair, an empty list and object
WHOLE = ('{"a": [1, -0.0025, 0, 1E+3, 2e-7, true, false, null, NaN, -Infinity, Infinity, '
         '"x\\\\y\\"z\\u00e9\\ud83d\\ude00", {"k": []}], "b": {}, "c": -0.0}')


def _error(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as info:
        json.loads(text)
    return info.value


def test_every_cut_of_a_whole_text_is_said_to_run_out():
    json.loads(WHOLE)  # whole, it reads
    cuts = [WHOLE[:k] for k in range(1, len(WHOLE))]
    assert all(ends_mid_json(t, _error(t)) for t in cuts)


@pytest.mark.parametrize("cut", ['{"a": 12.', '{"a": -', '{"a": 1e', '{"a": 1E+', '["\\u00',
                                 '["\\ud83d\\ude', '{"a": Na', '{"a": -Inf'])
def test_the_cuts_the_file_rule_missed(cut):
    # before: a number, escape or NaN/Infinity cut short was a wrong character
    assert ends_mid_json(cut, _error(cut))


@pytest.mark.parametrize("text", ['[1 x]', '{"a": fals}', '{"a"; 1}', '[1.5.2]', '["\\x"]',
                                  '[1, 2]]', '{"a": 1 x}]}', '[-.]', '[01]', '["\\u12g4"]'])
def test_a_wrong_character_is_not_a_cut(text):
    assert not ends_mid_json(text, _error(text))


def test_a_file_cut_inside_a_number_says_it_is_cut_short():
    with pytest.raises(ScalesimError) as info:
        parse_json_text('{\n  "busbw_GBps": 230.', "p.json")
    assert str(info.value) == ("p.json: not valid JSON (line 2, column 20: Expecting ',' "
                               "delimiter)" + CUT)


def test_a_whole_trace_with_a_wrong_character_near_its_end_is_malformed_not_cut(tmp_path):
    """Before: 'the trace ends early (truncated file?)' (the character was within 64 of the end;
    tests/test_traces.py padded its malformed case with 20 events to get past that)."""
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": nonsense}]}')
    with pytest.raises(ScalesimError) as info:
        traces.summarise(path)
    assert str(info.value) == f"{path}: event 1: malformed JSON (Expecting value)"


def test_a_trace_cut_inside_a_number_still_ends_early(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 12.')
    with pytest.raises(ScalesimError, match=r"the trace ends early \(truncated file\?\)"):
        traces.summarise(path)
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 11])
def test_chunks_cut_anywhere_read_every_event_whole(tmp_path, monkeypatch, chunk):
    """Chunk ends inside every number, literal, escape and surrogate pair of the events: each
    is read on (none called malformed or cut short) and comes out as json.loads reads it."""
    events = [json.loads(WHOLE), {"ph": "X", "name": "caf\u00e9 \U0001F600", "ts": -1.5e-3,
                                  "dur": 1e+3, "args": {"n": None, "t": True, "f": False}}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events, "x": -0.5}))  # ensure_ascii: escapes
    monkeypatch.setattr(trace_files, "CHUNK_CHARS", chunk)
    metadata: dict = {}
    read = [event for _, event in trace_files.iter_trace(path, metadata)]
    assert json.dumps(read) == json.dumps(events) and metadata == {"x": -0.5}


@pytest.mark.parametrize("text, goes_on", [
    ("12", True), ("12.", True), ("12e", True), ("12E-", True), ("1.5e+", True),
    ("12,", False), ("12 ", False), ("12]", False), ('"a"x', False)])
def test_a_number_may_go_on_only_where_its_digits_can(text, goes_on):
    value, end = json.JSONDecoder().raw_decode(text)
    assert may_go_on(text, end) is goes_on
