"""Property-based fuzzing (issue 14): every CLI command, every file reader, the share-link decoder.

For each generated input: exit code 0 or 2, no exception out of ``main`` (a traceback in a real
run), exactly one stderr line with exit 2, no NaN/Infinity in JSON printed or written, at most
``LIMIT_S`` seconds (tests/fuzz_inputs.py has the strategies and the harness). Commands run in
this process (``scalesim.cli.main.main``), so one example takes milliseconds; ``calibrate`` is
fuzzed up to the loading of its model (a module that does not exist) and through its
``--from-nccl-tests/--from-trace/--from-topo`` readers, ``app`` with its Streamlit child
replaced by one that exits at once. The flags come from the real parsers (a numeric flag is
found by its argparse type, whichever helper made it), so a new command or flag is fuzzed
without editing this file, and ``test_every_command_is_fuzzed`` fails for a command left out.

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

# Examples per target (a command, or a command with the flags every line of it has): about
# 40 s for all of them on 2 busy cores (docs/reliability.md).
EXAMPLES = {
    "predict": 120, "sweep": 80, "plan": 50, "decide": 50, "goal": 20,
    "goal --train-samples": 40, "presets": 15, "schema": 15, "calibrate": 30,
    "calibrate --from-nccl-tests": 60, "calibrate --from-trace": 40, "calibrate --from-topo": 40,
    "topo": 60, "validate": 40, "validate --parallel": 20, "diagnose": 100,
    "diagnose --smi": 60, "app": 30, "link": 100,
}
EDGE_COMMANDS = ["predict", "sweep", "plan", "decide", "goal", "diagnose", "calibrate", "app"]


def _settings(target: str):
    return settings(max_examples=EXAMPLES[target], derandomize=True, database=None,
                    deadline=None, phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=list(HealthCheck), print_blob=False)


def _cli_problems(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` made real in a fresh folder (``materialize``), and the promises it broke there."""
    with tempfile.TemporaryDirectory(prefix="scalesim-fuzz-") as tmp:
        line = materialize(argv, Path(tmp))
        return line, check_cli(line)


def _assert_none_broken(broken: list[str], tried: int) -> None:
    assert not broken, f"{len(broken)} of {tried} broke a promise:\n" + "\n".join(broken)


def _fuzz_command(target: str):
    @_settings(target)
    @given(argv=command_line(target))
    def run(argv):
        line, problems = _cli_problems(argv)
        assert not problems, f"{describe(line)}: {'; '.join(problems)}"

    return run


@pytest.mark.parametrize("target", [c for c in EXAMPLES if c != "link"])
def test_every_command_keeps_its_promises_on_any_input(target):
    _fuzz_command(target)()


# (profile, state) JSON texts the link fuzz planned without a broken promise: a link that decodes
# to one of them again is decoded and encoded, not planned again (the same input)
_PLANNED_LINKS: set[tuple[str, str]] = set()


@_settings("link")
@given(params=link_params())
def test_share_links_never_break_the_planner(params):
    problems = check_link(params, _PLANNED_LINKS)
    assert not problems, f"{ {k: v[:60] for k, v in params.items()} }: {'; '.join(problems)}"


# ---------------------------------------------------------------------- every number at its edges
# Systematic, beside the random examples: each numeric flag of each command alone at each edge
# value of its type (NaN, +-Infinity, 1e308, 1e400, 5e-324, -1, 0, 2**31, 2**63, 10**20, ...),
# and each number of a share link's profile at NaN, Infinity, 1e400, -1, 0, 10**25. Every broken
# promise is listed, not only the first.

@pytest.mark.parametrize("command", EDGE_COMMANDS)
def test_every_numeric_flag_at_its_edge_values(command):
    lines = odd_value_lines(command)
    assert lines
    broken = []
    for argv in lines:
        line, problems = _cli_problems(argv)
        broken += [f"{line[-1]}: {p}" for p in problems]
    _assert_none_broken(broken, len(lines))


def test_every_output_path_and_input_file_at_its_edges():
    lines = edge_file_lines()
    broken = []
    for label, argv in lines:
        broken += [f"{label}: {' '.join(p.splitlines()[:2])}" for p in _cli_problems(argv)[1]]
    _assert_none_broken(broken, len(lines))


def test_every_profile_number_of_a_link_at_its_edge_values():
    links = odd_profile_links()
    broken, planned = [], set()  # most blobs are refused and plan the same preset: planned once
    for label, params in links:
        broken += [f"{label}: {' '.join(p.splitlines()[:2])}"
                   for p in check_link(params, planned)]
    assert len(planned) > 1  # a refused blob and at least one accepted edge value were planned
    _assert_none_broken(broken, len(links))


def test_every_command_is_fuzzed():
    from fuzz_inputs import COMMANDS, numeric_flags, target_command

    assert {target_command(t)[0] for t in EXAMPLES if t != "link"} == set(COMMANDS)
    assert {c for c in COMMANDS if numeric_flags(c)} <= set(EDGE_COMMANDS)


def test_every_flag_type_is_known():
    """A numeric flag is found whatever helper types it (scalesim.bounds.flag_type,
    flag_list_type or a command's own); a type the harness does not know fails here."""
    from fuzz_inputs import ACTIONS, WORD_TYPES, flag_kind

    unknown = [f"{c} {a.option_strings or a.dest}: {getattr(a.type, '__qualname__', a.type)}"
               for c, actions in ACTIONS.items() for a in actions
               if a.type is not None and flag_kind(a) is None
               and a.type.__name__ not in WORD_TYPES
               and a.type.__name__ not in ("_words", "file_path")]  # file_path: a path, fuzzed as text
    assert not unknown
    kinds = {a.dest: flag_kind(a) for a in ACTIONS["predict"]}
    assert kinds["devices"] == ("int list", "devices")
    assert kinds["straggler_cv"] == ("float", "cv")
    assert kinds["batch"] == ("int", "micro_batch")


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
    limit_s = fuzz_inputs.LIMIT_S
    monkeypatch.setattr(fuzz_inputs, "LIMIT_S", 0.2)
    assert any("took longer" in p for p in check_cli(["presets"]))
    # the real limit again: on a busy machine --help alone may take over 0.2 s
    monkeypatch.setattr(fuzz_inputs, "LIMIT_S", limit_s)
    assert check_cli(["presets", "--help"]) == []


def test_every_base_link_plans():
    """The share-link fuzz starts from a real link of every version the decoder reads, each one
    the planner runs without an error (its split base at 1 micro-step failed the interleaved
    schedule's rule, so the fuzz of v3 to v7 links never reached the plan)."""
    import warnings

    from fuzz_inputs import BASE_LINKS
    from scalesim.app.plan import make_plan
    from scalesim.app.state import READ_VERSIONS, decode_query

    assert sorted({link["v"] for link in BASE_LINKS}) == sorted(READ_VERSIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for link in BASE_LINKS:
            state, profile, _ = decode_query(link)
            assert make_plan(profile, state).rows, link


def test_the_time_limit_counts_cpu_time_not_waiting():
    """A runaway loop is stopped; a line that only waits (for busy cores, here a sleep) is not,
    so the limit holds on a loaded machine (session 43)."""
    import time

    from fuzz_inputs import TookTooLong, time_limit

    with pytest.raises(TookTooLong), time_limit(0.05):
        while True:
            pass
    with time_limit(0.05):
        time.sleep(0.2)
