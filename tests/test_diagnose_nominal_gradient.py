"""diagnose without --params: the note says what the nominal gradient size decides (session 44).

A first-day user's runs file (their own 2-process gloo DDP job of 1.585 M parameters, measured at
1 and 2 processes on one host) read without --params priced "Shard optimizer state" at +14.4 %
and "Double the per-process batch" at +74.9 %; with --params 1.585e6, -10.5 % and +42.1 %. The
note said only that link speeds were reported as transfer times, as if --params changed the
report's units and nothing else.
"""

from __future__ import annotations

import json

from cli_harness import run_cli

from scalesim.fit_runs import NOMINAL_GRADIENT_BYTES

RUNS = "devices,nodes,step_time_s,per_device_batch,device\n1,1,0.02522,32,cpu\n2,1,0.06192,32,cpu\n"


def _report(capsys, path, *flags):
    code, out, err = run_cli(capsys, ["diagnose", str(path), "--json", *flags])
    assert code == 0, err
    return json.loads(out)


def test_without_params_the_note_says_the_gains_rest_on_a_nominal_gradient(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(RUNS)
    nominal = _report(capsys, path)
    given = _report(capsys, path, "--params", "1.585e6")
    (note,) = [n for n in nominal["notes"] if n.startswith("no --params")]
    assert f"nominal gradient of {NOMINAL_GRADIENT_BYTES / 1e9:g} GB" in note
    assert "remedies' gains and the extrapolation rest on" in note
    assert not any(n.startswith("no --params") for n in given["notes"])
    # what the note warns of: the same runs price remedies otherwise at the model's own size
    gains = [{r["key"]: r["gain"] for r in rep["remedies"]} for rep in (nominal, given)]
    assert abs(gains[0]["bigger_batch"] - gains[1]["bigger_batch"]) > 0.1, gains
    assert gains[0]["sharding"] > 0 > gains[1]["sharding"], gains
