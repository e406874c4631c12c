"""calibrate --from-trace into an existing profile keeps its parameter count, and says so (session 52).

A new profile takes the gradient elements a DDP job's traces all-reduce a step as the model's
parameters; an existing one (``--out`` updated in place, ``--base PROFILE``) keeps its own. Where the
traces' count was within 20 % of it the profile kept it without a word; over 20 % a line said it
but pointed at ``--base``, which (a profile) keeps its count too. Now one line either way: both
counts, how far apart, the rule, and what takes the traces' count (a new profile).
"""

from __future__ import annotations

import json

import pytest
from test_traces import event

from scalesim.cli.main import main
from scalesim.profiles import load_profile


def write_traces(directory, elements: int) -> list[str]:
    """A 2-rank gloo job's traces: 2 steps of 1 ms, each all-reducing ``elements`` fp32."""
    directory.mkdir()
    paths = []
    for rank in (0, 1):
        ev = []
        for n in range(2):
            t = n * 1000.0
            ev += [event(f"ProfilerStep#{n + 1}", t, 1000.0, cat="user_annotation"),
                   event("aten::addmm", t, 600.0),
                   event("gloo:all_reduce", t + 600, 200.0, cat="user_annotation", tid=3,
                         **{"Input Dims": [[elements]], "Input type": ["float"]})]
        path = directory / f"r{rank}.json"
        path.write_text(json.dumps({"distributedInfo": {"backend": "gloo", "rank": rank,
                                                        "world_size": 2}, "traceEvents": ev}))
        paths.append(f"8={path}")
    return paths


@pytest.fixture
def existing(tmp_path, capsys):
    """A profile made from traces of 1,000 gradient elements (a new profile: 1,000 parameters)."""
    out = tmp_path / "p.json"
    assert main(["calibrate", "--from-trace", *write_traces(tmp_path / "a", 1000),
                 "--out", str(out)]) == 0
    assert load_profile(out).workload.params == 1000
    capsys.readouterr()
    return out


@pytest.mark.parametrize("elements, words", [
    (900, "900 gradient elements a step, 10% fewer (within 20%: read as the same model)"),
    (1150, "1,150 gradient elements a step, 15% more (within 20%: read as the same model)"),
    (500, "500 gradient elements a step, 50% fewer (over 20%: another model, or parts of it "
          "not trained)"),
])
def test_the_kept_parameter_count_is_said(existing, tmp_path, capsys, elements, words):
    """900 of 1,000 was kept silently (within 20 %); 500 was said, pointing at --base."""
    assert main(["calibrate", "--from-trace", *write_traces(tmp_path / "b", elements),
                 "--out", str(existing)]) == 0
    line = (f"parameters: kept the profile's 1,000; the traces all-reduce {words}; only a new "
            "profile takes the traces' count (--out a new file, or --base PRESET)")
    assert f"\n  {line}\n" in capsys.readouterr().out
    profile = load_profile(existing)
    assert profile.workload.params == 1000
    assert f"trace: {line}" in profile.notes


def test_the_same_count_says_nothing(existing, tmp_path, capsys):
    assert main(["calibrate", "--from-trace", *write_traces(tmp_path / "b", 1000),
                 "--out", str(existing)]) == 0
    assert "parameters: kept" not in capsys.readouterr().out


def test_a_preset_base_takes_the_traces_count(existing, tmp_path):
    """What the line says takes the traces' count does: --base PRESET (a new profile)."""
    assert main(["calibrate", "--from-trace", *write_traces(tmp_path / "b", 900),
                 "--base", "a2-highgpu-8g", "--out", str(existing)]) == 0
    assert load_profile(existing).workload.params == 900
