"""Input files a demanding user hands over: duplicate JSON keys, UTF-16 or BOM text, empty
paths. Each is one line naming the file (or the flag), never a silent last-key-wins."""

from __future__ import annotations

import json

import pytest
from app_harness import open_app
from cli_harness import run_cli

from scalesim.errors import ScalesimError
from scalesim.jsonio import decode_text, parse_json_text, read_json
from scalesim.presets import get_workload
from scalesim.profiles import default_profile

DUPLICATE = '{"devices": [1, 2], "accumulation": 2, "accumulation": 4}'
NESTED = '{"layout": {"tp": 2, "tp": 4}}'


def _one_line_error(code: int, err: str) -> str:
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_duplicate_keys_are_refused_naming_the_key_and_the_file(tmp_path):
    for text, key in ((DUPLICATE, "accumulation"), (NESTED, "tp")):
        path = tmp_path / "scenario.json"
        path.write_text(text)
        with pytest.raises(ScalesimError) as exc:
            read_json(path)
        assert f"key '{key}' appears twice" in str(exc.value)
        assert str(path) in str(exc.value)
    assert parse_json_text('{"a": {"b": 1}, "b": 2}', "x.json") == {"a": {"b": 1}, "b": 2}


def test_utf16_and_bom_files(tmp_path):
    data = {"devices": [1, 2]}
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(data).encode())
    assert read_json(bom) == data  # UTF-8 with a byte-order mark, as Windows Notepad saves it
    for name, encoding in (("utf16.json", "utf-16"), ("utf16le.json", "utf-16-le")):
        path = tmp_path / name
        path.write_bytes(json.dumps(data).encode(encoding))
        with pytest.raises(ScalesimError) as exc:
            read_json(path)
        assert str(exc.value) == f"file {path} is not UTF-8 text: save it as UTF-8"
    assert decode_text(b"\xef\xbb\xbf{}", "a.json") == "{}"
    with pytest.raises(ScalesimError, match="file a.json is not UTF-8 text"):
        decode_text("{}".encode("utf-16"), "a.json")


@pytest.mark.parametrize("flag", ["--scenario", "--workload", "--hardware", "--profile"])
def test_cli_refuses_duplicate_keys_in_one_line(capsys, tmp_path, flag):
    if flag == "--scenario":
        text = DUPLICATE
    else:
        data = (default_profile().model_dump_json() if flag == "--profile"
                else get_workload("bert-large").model_dump_json() if flag == "--workload"
                else default_profile().hardware.model_dump_json())
        text = data.replace('"name":', '"name": "first", "name":', 1)
    path = tmp_path / "in.json"
    path.write_text(text)
    line = _one_line_error(*run_cli(capsys, ["predict", flag, str(path)])[::2])
    assert "appears twice" in line and str(path) in line


def test_cli_refuses_duplicate_keys_in_cases_and_runs(capsys, tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text('{"schema_version": "x", "schema_version": "y", "cases": []}')
    line = _one_line_error(*run_cli(capsys, ["validate", str(cases)])[::2])
    assert "key 'schema_version' appears twice" in line and str(cases) in line
    runs = tmp_path / "runs.json"
    runs.write_text('[{"devices": 1, "devices": 2, "step_time_s": 0.1}]')
    line = _one_line_error(*run_cli(capsys, ["diagnose", str(runs)])[::2])
    assert "key 'devices' appears twice" in line and str(runs) in line


def test_cli_utf16_file_is_one_clear_line(capsys, tmp_path):
    path = tmp_path / "scenario.json"
    path.write_bytes(json.dumps({"devices": [1, 2]}).encode("utf-16"))
    line = _one_line_error(*run_cli(capsys, ["predict", "--scenario", str(path)])[::2])
    assert f"file {path} is not UTF-8 text: save it as UTF-8" in line


@pytest.mark.parametrize("argv, flag", [
    (["plan", "--global-batch", "64", "--devices", "8", "--profile", ""], "--profile"),
    (["validate", ""], "FILE"),
    (["topo", ""], "FILE"),
    (["diagnose", ""], "RUNS"),
    (["diagnose", "--smi", ""], "--smi"),
    (["calibrate", "--from-topo", ""], "--from-topo"),
])
def test_an_empty_path_names_its_flag(capsys, argv, flag):
    line = _one_line_error(*run_cli(capsys, argv)[::2])
    assert flag in line and "empty" in line, line


def test_app_upload_refuses_duplicates_and_utf16_and_reads_a_bom():
    at = open_app()
    text = default_profile().model_dump_json()
    dup = text.replace('"name":', '"name": "first", "name":', 1).encode()
    at.sidebar.file_uploader(key="upload").set_value(("dup.json", dup, "application/json"))
    at.run()
    assert not at.exception
    error = at.sidebar.error[0].value.replace("\\", "")
    assert "dup.json" in error and "key 'name' appears twice" in error
    at.sidebar.file_uploader(key="upload").set_value(
        ("wide.json", text.encode("utf-16"), "application/json"))
    at.run()
    error = at.sidebar.error[0].value.replace("\\", "")
    assert "file wide.json is not UTF-8 text: save it as UTF-8" in error
    at.sidebar.file_uploader(key="upload").set_value(
        ("bom.json", b"\xef\xbb\xbf" + text.encode(), "application/json"))
    at.run()
    assert not at.sidebar.error and any("Loaded profile" in s.value for s in at.sidebar.success)


@pytest.mark.parametrize("field, value, says", [
    (("device_memory_bytes",), 40, ["40 given", "bytes (not GB)"]),
    (("inter_node", "busbw_GBps"), 192e9, ["192,000,000,000 given", "GB/s"]),  # exact (session 19)
    (("inter_node", "latency_s"), 6, ["6 given", "<= 1 s"]),
])
def test_an_out_of_bounds_number_in_a_file_is_named_with_its_unit(tmp_path, capsys, field,
                                                                  value, says):
    """A hardware file with a number in the wrong unit (memory in GB, bandwidth in bytes/s,
    latency in microseconds) said only "field 'device_memory_bytes': Input should be greater
    than or equal to 1000000": now the value given and the field's unit and bounds, in one
    line, as the flags say them."""
    import json

    from cli_harness import run_cli

    from scalesim.presets import HARDWARE

    data = HARDWARE["dgx-a100"].model_dump(mode="json")
    target = data
    for part in field[:-1]:
        target = target[part]
    target[field[-1]] = value
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["predict", "--hardware", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"field '{'.'.join(field)}'" in err and "allowed:" in err
    for text in says:
        assert text in err, err


@pytest.mark.parametrize("text, shown", [("a\nb", "a\\nb"), ("\x1b[31mRED\x1b[0m", "\\x1b[31mRED"),
                                         ("left\u202eright", "left\\u202eright"),
                                         ("tab\there", "tab\\there")])
def test_a_profiles_free_text_cannot_split_a_line_or_drive_the_terminal(tmp_path, capsys, text,
                                                                        shown):
    """A hand-edited or shared profile whose note held a line break printed `note: a` and `b`
    on two lines; an ESC sequence coloured the terminal, a U+202E reordered the line. Every text
    of a file but a name (refused) is read with its control characters escaped now."""
    from scalesim.cli.main import main
    from scalesim.profiles import default_profile

    profile = default_profile()
    data = json.loads(profile.model_dump_json())
    data["notes"] = [text]
    data["hardware"]["intra_node"]["source"] = text
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["predict", "--profile", str(path), "--devices", "1,2"]) == 0
    out, _ = capsys.readouterr()
    assert f"note: {shown}" in out, out
    assert not any(c in out for c in "\x1b\u202e\t"), out
    assert all(line.isprintable() for line in out.splitlines())


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(foo=1), "field 'foo': not a field this scalesim reads (a typo, or "
     "another version's field): remove it; scalesim schema profile lists the fields"),
    (lambda d: d["hardware"]["intra_node"].update(bogus=1), "field 'hardware.intra_node.bogus': "
     "not a field this scalesim reads"),
    (lambda d: d.pop("hardware"), "field 'hardware': missing: this field is required; "
     "scalesim schema profile lists the fields"),
])
def test_an_unknown_or_missing_field_says_what_to_do(tmp_path, capsys, change, says):
    """A hand-edited profile (or one of another version) with a field this scalesim does not
    know said `field 'foo': Extra inputs are not permitted`, one without a required field
    `Field required`: pydantic's words, not what to do or where the fields are listed."""
    from scalesim.cli.main import main
    from scalesim.profiles import default_profile

    data = json.loads(default_profile().model_dump_json())
    change(data)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["predict", "--profile", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("flag, kind, version, does", [
    ("--profile", "profile", "scalesim-profile/2", "re-run the scalesim calibrate command"),
    ("--profile", "profile", None, "re-run the scalesim calibrate command"),
    ("--hardware", "hardware", "scalesim-hardware/2", "scalesim schema hardware lists"),
    ("--workload", "workload", "scalesim-workload/0", "scalesim schema workload lists"),
    ("--scenario", "scenario", "scalesim-scenario/2", "scalesim schema scenario lists"),
])
def test_another_schema_version_says_which_one_is_read_and_what_to_do(tmp_path, capsys, flag,
                                                                      kind, version, does):
    """A profile of another version said `re-run scalesim calibrate or convert the file`, and
    no converter exists; a hardware, workload or scenario file said pydantic's `Input should
    be 'scalesim-hardware/1' (+6 more problems)`. Now the version this scalesim reads, that it
    converts none, and what to do, one line (the version's error alone: it explains the rest)."""
    from scalesim import __version__

    data = {"name": "old", "devices_per_node": "eight"}
    if version is not None:
        data["schema_version"] = version
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["predict", flag, str(path)])
    line = _one_line_error(code, err)
    said = f"schema_version is '{version}'" if version else "no schema_version"
    assert f"{path}: {said}; this scalesim ({__version__}) reads 'scalesim-{kind}/1' only" in line
    assert "converts no other version" in line and does in line, line
    assert "convert the file" not in line and "more problems" not in line, line


@pytest.mark.parametrize("given, flag, wanted", [
    ("profile", "--hardware", "hardware"),
    ("profile", "--workload", "workload"),
    ("profile", "--scenario", "scenario"),
    ("hardware", "--profile", "profile"),
    ("workload", "--hardware", "hardware"),
])
def test_a_file_of_another_kind_says_which_flag_takes_it(tmp_path, capsys, given, flag, wanted):
    """Session 39 newcomer pass: the profile `scalesim calibrate` wrote, given as `--hardware`,
    said `schema_version is 'scalesim-profile/1'; this scalesim reads 'scalesim-hardware/1'
    only and converts no other version: write it again for this version`, as if the file were
    old. It is the right version of another kind: the line now says which kind and flag."""
    from scalesim.presets import HARDWARE

    files = {
        "profile": default_profile().model_dump_json(),
        "hardware": HARDWARE["dgx-a100"].model_dump_json(),
        "workload": get_workload("bert-large").model_dump_json(),
    }
    path = tmp_path / f"{given}.json"
    path.write_text(files[given])
    code, _, err = run_cli(capsys, ["predict", flag, str(path)])
    line = _one_line_error(code, err)
    assert line.endswith(
        f"{path}: a scalesim {given} file (schema_version 'scalesim-{given}/1'), not a {wanted} "
        f"file: commands take it as --{given} FILE"
    ), line
    assert "converts no other version" not in line and "write it again" not in line, line


@pytest.mark.parametrize("kind, flag, change, field, says", [
    ("scenario", "--scenario", {"micro_batch": "16"}, "micro_batch",
     "'16' is text (in quotes); this field takes a whole number: write it without quotes"),
    ("scenario", "--scenario", {"devices": ["8", 16]}, "devices", "'8' is text (in quotes)"),
    ("scenario", "--scenario", {"train_samples": "1e9"}, "train_samples",
     "this field takes a number: write it without quotes"),
    ("scenario", "--scenario", {"accumulation": "two"}, "accumulation",
     "'two' is text (in quotes); this field takes a whole number: write one"),
    ("hardware", "--hardware", {"peak_tflops": "312"}, "peak_tflops", "takes a number"),
    ("workload", "--workload", {"micro_batch": "32"}, "micro_batch", "takes a whole number"),
])
def test_a_number_written_as_text_is_refused_naming_the_field(tmp_path, capsys, kind, flag,
                                                              change, field, says):
    """`"micro_batch": "16"` in a file was read as 16 (pydantic's lax mode), though the JSON
    Schema `scalesim schema` prints says a number and every writer of the files writes one. It
    is refused in one line naming the field and the type; text fields still take text, and the
    app's share links (all text) are read by their own lax model."""
    from scalesim.presets import HARDWARE

    data = {"scenario": {"devices": [8]}, "hardware": HARDWARE["dgx-a100"].model_dump(mode="json"),
            "workload": get_workload("bert-large").model_dump(mode="json")}[kind]
    data.update(change)
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, ["predict", flag, str(path), "--devices", "8"]
                           if kind != "scenario" else ["predict", flag, str(path)])
    line = _one_line_error(code, err)
    assert f"field '{field}': " in line and says in line, line


def test_numbers_as_text_stay_lax_in_share_links_and_calibrate_writes_numbers(tmp_path):
    """A share link's query string is all text (`?mb=16`): read by ``AppState``, not the file
    models. A profile written by calibrate loads (its numbers are numbers)."""
    from scalesim.profiles import load_profile
    from scalesim.sources.calibrate_from import calibrate_from_sources

    at = open_app({"v": "5", "mb": "16", "dmax": "8", "price": "2.5"})
    assert not at.exception and at.session_state["app_state"].mb == 16
    from pathlib import Path

    nccl = Path(__file__).parent / "fixtures" / "nccl_tests" / "h100_8gpu_all_reduce.txt"
    calibrate_from_sources(tmp_path / "p.json", nccl_tests_files=[str(nccl)])
    assert load_profile(tmp_path / "p.json").hardware.devices_per_node == 8
