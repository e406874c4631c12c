"""Property-based fuzzing (issue 14): every CLI command, every file reader, the share-link decoder.

For each generated input: exit code 0 or 2, no exception out of ``main`` (a traceback in a real
run), exactly one stderr line with exit 2, no NaN/Infinity in JSON printed or written, at most
``LIMIT_S`` seconds (tests/fuzz_inputs.py has the strategies and the harness). Commands run in
this process (``scalesim.cli.main.main``), so one example takes milliseconds; ``calibrate`` is
fuzzed up to the loading of its model (a module that does not exist), ``app`` with its
Streamlit child replaced by one that exits at once.

Deterministic: ``derandomize=True`` and no example database, so every run tries the same
``EXAMPLES`` inputs (docs/reliability.md records the counts and what they found). Shrinking is
off to bound the time of a failing run; the falsifying example is printed as generated.
Reproduce: ``python -m pytest tests/test_fuzz.py -q``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from fuzz_inputs import (
    check_cli,
    check_link,
    command_line,
    describe,
    edge_file_lines,
    link_params,
    materialize,
    odd_profile_links,
    odd_value_lines,
)
from hypothesis import HealthCheck, Phase, given, settings

# Examples per target: about 40 s for all of them on 2 busy cores (docs/reliability.md).
EXAMPLES = {
    "predict": 150, "sweep": 100, "presets": 15, "schema": 15, "calibrate": 40,
    "validate": 60, "diagnose": 150, "app": 30, "link": 120,
}


def _settings(target: str):
    return settings(max_examples=EXAMPLES[target], derandomize=True, database=None,
                    deadline=None, phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=list(HealthCheck), print_blob=False)


def _fuzz_command(command: str):
    @_settings(command)
    @given(argv=command_line(command))
    def run(argv):
        with tempfile.TemporaryDirectory(prefix="scalesim-fuzz-") as tmp:
            line = materialize(argv, Path(tmp))
            problems = check_cli(line)
            assert not problems, f"{describe(line)}: {'; '.join(problems)}"

    return run


@pytest.mark.parametrize("command", [c for c in EXAMPLES if c != "link"])
def test_every_command_keeps_its_promises_on_any_input(command):
    _fuzz_command(command)()


@_settings("link")
@given(params=link_params())
def test_share_links_never_break_the_planner(params):
    problems = check_link(params)
    assert not problems, f"{ {k: v[:60] for k, v in params.items()} }: {'; '.join(problems)}"


# ---------------------------------------------------------------------- every number at its edges
# Systematic, beside the random examples: each numeric flag of each command alone at each edge
# value of its type (NaN, +-Infinity, 1e308, 1e400, 5e-324, -1, 0, 2**31, 2**63, 10**20, ...),
# and each number of a share link's profile at NaN, Infinity, 1e400, -1, 0, 10**25. Every broken
# promise is listed, not only the first.

@pytest.mark.parametrize("command", ["predict", "sweep", "diagnose", "calibrate", "app"])
def test_every_numeric_flag_at_its_edge_values(command):
    lines = odd_value_lines(command)
    assert lines
    broken = []
    for argv in lines:
        with tempfile.TemporaryDirectory(prefix="scalesim-fuzz-") as tmp:
            line = materialize(argv, Path(tmp))
            broken += [f"{line[-1]}: {p}" for p in check_cli(line)]
    assert not broken, f"{len(broken)} of {len(lines)} broke a promise:\n" + "\n".join(broken)


def test_every_output_path_and_input_file_at_its_edges():
    lines = edge_file_lines()
    broken = []
    for label, argv in lines:
        with tempfile.TemporaryDirectory(prefix="scalesim-fuzz-") as tmp:
            line = materialize(argv, Path(tmp))
            broken += [f"{label}: {' '.join(p.splitlines()[:2])}" for p in check_cli(line)]
    assert not broken, f"{len(broken)} of {len(lines)} broke a promise:\n" + "\n".join(broken)


def test_every_profile_number_of_a_link_at_its_edge_values():
    links = odd_profile_links()
    broken = []
    for label, params in links:
        broken += [f"{label}: {' '.join(p.splitlines()[:2])}" for p in check_link(params)]
    assert not broken, f"{len(broken)} of {len(links)} broke a promise:\n" + "\n".join(broken)


def test_every_command_is_fuzzed():
    from fuzz_inputs import COMMANDS

    assert set(COMMANDS) == set(EXAMPLES) - {"link"}


def test_the_harness_sees_each_broken_promise(monkeypatch, tmp_path):
    """The checks can fail: a crash, a NaN in JSON, two stderr lines, a hang are each caught."""
    import fuzz_inputs

    import scalesim.cli.cmd_presets as presets_cmd

    def crash(args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(presets_cmd, "run", crash)
    assert any("ZeroDivisionError" in p for p in check_cli(["presets"]))

    def nan_json(args):
        print('{"x": NaN}')
        return 0

    monkeypatch.setattr(presets_cmd, "run", nan_json)
    assert any("NaN" in p for p in check_cli(["presets", "--json"]))

    def two_lines(args):
        import sys

        print("one\ntwo", file=sys.stderr)
        return 2

    monkeypatch.setattr(presets_cmd, "run", two_lines)
    assert any("2 stderr lines" in p for p in check_cli(["presets"]))

    def hang(args):
        while True:
            pass

    monkeypatch.setattr(presets_cmd, "run", hang)
    monkeypatch.setattr(fuzz_inputs, "LIMIT_S", 0.2)
    assert any("took longer" in p for p in check_cli(["presets"]))
    assert check_cli(["presets", "--help"]) == []
