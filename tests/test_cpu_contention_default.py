"""A CPU profile written before ``hardware.comm_compute_contention`` existed took the schema's
default 0.159, NCCL's figure on GPUs, so its hidden gloo collectives cost 15.9 % of their time;
``scalesim calibrate`` on CPU writes 1 (gloo sums on the compute cores: overlap hides nothing).
Such a profile now takes 1 and its notes say so (session 39, docs/model.md §3)."""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.model.overlap import CPU_COMM_CONTENTION, GPU_COMM_CONTENTION
from scalesim.profiles import default_profile, parse_profile
from scalesim.schemas import CPU_CONTENTION_NOTE, Profile


def _without_contention(device_name: str) -> dict:
    data = json.loads(default_profile().model_dump_json())
    data["hardware"]["device_name"] = device_name
    del data["hardware"]["comm_compute_contention"]
    return data


def test_an_old_cpu_profile_takes_gloos_contention_and_says_so():
    profile = parse_profile(_without_contention("CPU: AMD EPYC"))
    assert profile.hardware.comm_compute_contention == CPU_COMM_CONTENTION == 1.0
    assert profile.notes.count(CPU_CONTENTION_NOTE) == 1
    assert "1 taken, as scalesim calibrate writes on CPU" in CPU_CONTENTION_NOTE
    again = Profile.model_validate_json(profile.model_dump_json())  # written back: given now
    assert again.hardware.comm_compute_contention == 1.0
    assert again.notes.count(CPU_CONTENTION_NOTE) == 1


def test_a_gpu_profile_and_a_given_value_keep_theirs():
    gpu = parse_profile(_without_contention("NVIDIA A100-SXM4-40GB"))
    assert gpu.hardware.comm_compute_contention == GPU_COMM_CONTENTION
    assert CPU_CONTENTION_NOTE not in gpu.notes
    data = _without_contention("CPU: AMD EPYC")
    data["hardware"]["comm_compute_contention"] = 0.25
    given = parse_profile(data)
    assert given.hardware.comm_compute_contention == 0.25 and CPU_CONTENTION_NOTE not in given.notes


def test_predict_on_an_old_cpu_profile_pays_every_collective_second(capsys, tmp_path):
    """exposed = exposed_free + c (total - exposed_free): with c = 1 the exposed communication
    is the whole collective time, as with overlap off; with the old 0.159 it was less."""
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(_without_contention("CPU: AMD EPYC")))
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "2,4",
                                      "--json"])
    assert code == 0, err
    rows = json.loads(out)
    assert all(r["comm_total_s"] > 0 for r in rows)
    assert all(abs(r["exposed_comm_s"] - r["comm_total_s"]) <= 1e-12 * r["comm_total_s"]
               for r in rows)
    code, out, err = run_cli(capsys, ["predict", "--profile", str(path), "--devices", "2,4"])
    assert code == 0, err
    assert f"note: {CPU_CONTENTION_NOTE}" in out.splitlines()


def test_a_hardware_file_replacing_a_profiles_gets_the_same_note(capsys, tmp_path):
    """``--profile P --hardware FILE`` copied the file's hardware in without the profile's
    validation (session 39): a CPU hardware file without comm_compute_contention took 1 (its own
    validator) in silence, and an old profile's note that 1 was taken stayed where the new
    hardware gives 0.25. The note now follows the hardware the rows run on."""
    data = _without_contention("CPU: AMD EPYC")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    bare = tmp_path / "bare_hw.json"
    bare.write_text(json.dumps({**data["hardware"], "name": "cpu hosts"}))
    given = {**data, "hardware": {**data["hardware"], "comm_compute_contention": 0.25}}
    new = tmp_path / "new.json"
    new.write_text(json.dumps(given))
    quarter = tmp_path / "quarter_hw.json"
    quarter.write_text(json.dumps({**given["hardware"], "name": "cpu hosts"}))

    def rows_and_notes(profile, hardware):
        argv = ["predict", "--profile", str(profile), "--hardware", str(hardware), "--devices",
                "2,4"]
        code, out, err = run_cli(capsys, [*argv, "--json"])
        assert code == 0, err
        rows = json.loads(out)
        code, out, err = run_cli(capsys, argv)
        assert code == 0, err
        return rows, f"note: {CPU_CONTENTION_NOTE}" in out.splitlines()

    rows, said = rows_and_notes(new, bare)  # 0.25 in the profile, none in the file: 1, said
    assert said
    assert all(r["comm_total_s"] > 0 and abs(r["exposed_comm_s"] - r["comm_total_s"])
               <= 1e-12 * r["comm_total_s"] for r in rows)
    rows, said = rows_and_notes(old, quarter)  # none in the profile, 0.25 in the file: not said
    assert not said
    assert all(r["exposed_comm_s"] < r["comm_total_s"] for r in rows)
