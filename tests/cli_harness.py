"""Shared helper of the CLI tests: one command run in this process."""

from __future__ import annotations

from scalesim.cli.main import main


def run_cli(capsys, argv: list[str]):
    """Exit code, stdout, stderr of one command in this process (argparse exits are caught)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def run_cli_as_process(capsys, argv: list[str]):
    """``run_cli`` of ``argv`` as ``subprocess.run`` returns it (``returncode``, ``stdout``,
    ``stderr``): a test of a command's output, not of the entry point, runs it in this process
    (a subprocess costs 2-3 s of start and imports)."""
    from types import SimpleNamespace

    code, out, err = run_cli(capsys, argv)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def diagnose_file(capsys, tmp_path, text: str, *args: str):
    """Exit code, stdout, stderr of ``scalesim diagnose`` on ``text`` written as the runs file
    ``tmp_path``/runs.csv, ``args`` after its path."""
    path = tmp_path / "runs.csv"
    path.write_text(text)
    return run_cli(capsys, ["diagnose", str(path), *args])


def scenario_file(tmp_path, name: str, scenario: dict) -> str:
    """The path of a --scenario file ``name`` under ``tmp_path`` holding ``scenario`` as JSON."""
    import json

    path = tmp_path / name
    path.write_text(json.dumps(scenario))
    return str(path)


def refused_line(capsys, argv: list[str]) -> str:
    """The one line a command refuses ``argv`` with (exit 2, nothing on stdout)."""
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, err)
    return err.removesuffix("\n")


def kept_diagnoses(monkeypatch) -> list:
    """The reports ``runs_diagnosis.diagnose_runs`` makes from now on (the CLI's, the app's),
    appended to the list returned: a test reads the report a command printed, or its --json
    (``Report.to_json``), without fitting the same runs again."""
    from scalesim import runs_diagnosis

    made, real = [], runs_diagnosis.diagnose_runs

    def diagnose_and_keep(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(runs_diagnosis, "diagnose_runs", diagnose_and_keep)
    return made


def computed_once(real, made: dict):
    """``real`` that computes each set of arguments (pickled: the same runs, cases, options)
    once into ``made``; every call, the first too, gets a deep copy of that result, which is
    what computing them again gives where ``real`` is deterministic, and which the caller may
    change freely."""
    import copy
    import pickle

    def once(*args, **kwargs):
        key = pickle.dumps((args, sorted(kwargs.items())))
        if key not in made:
            made[key] = real(*args, **kwargs)
        return copy.deepcopy(made[key])

    return once


def diagnosed_once(monkeypatch, made: dict | None = None) -> None:
    """From now on ``runs_diagnosis.diagnose_runs`` (the CLI's, the app's) fits the same
    arguments (the same runs, source name and options) once in the test: a repeat, e.g. the
    text beside the --json of one file, gets a deep copy of the first report, which is what a
    fit of the same runs gives (the fit is deterministic); the command still renders it.
    ``made``: a dict the reports are kept in, e.g. one of a test module's, so that the tests
    that pass it fit the same arguments once in the module (each gets its own copy)."""
    from scalesim import runs_diagnosis

    monkeypatch.setattr(runs_diagnosis, "diagnose_runs", computed_once(
        runs_diagnosis.diagnose_runs, {} if made is None else made))


def sought_once(monkeypatch, made: dict) -> None:
    """From now on ``goal.seek`` (the CLI's) answers the same arguments once into ``made``, e.g.
    a test module's dict: the text and the --json of one goal command read one search (seconds
    for a transformer's layouts), a deep copy each; the command still renders it."""
    import scalesim.goal

    monkeypatch.setattr(scalesim.goal, "seek", computed_once(scalesim.goal.seek, made))


def fitted_of(report):
    """(profile, scenario) a runs diagnosis fitted, read back from its details as its --json
    writes them (a round trip through JSON, as a user's file would be)."""
    import json

    from scalesim.schemas import Profile, Scenario

    profile = Profile.model_validate(json.loads(json.dumps(report.details["fitted_profile"])))
    return profile, Scenario.model_validate(report.details["fitted_scenario"])


def whole_lines(text: str) -> str:
    """Decide's or goal's text as it read before it fit a terminal (``cli.terminal``): each
    wrapped line (``wrap``, a ``hanging_table``'s last cell) joined to the line it continues (a
    line that starts with a space: no row does), and each short title of decide's table
    ('Settings [1]') replaced by its '[1] ...' note, the notes taken out; a test then reads a
    sentence, a row or a note whole. A key without its note fails here."""
    import re

    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(" ") and lines and lines[-1]:
            lines[-1] += " " + line.lstrip()
        else:
            lines.append(line)
    titles = {m[1]: m[2] for m in (re.match(r"\[(\d+)\] (.*)", x) for x in lines) if m}
    out = []
    for line in lines:
        if re.match(r"\[\d+\] ", line):
            continue
        cut = re.match(r"(.*?) \[(\d+)\](?=  |$)", line)
        if cut:
            line = titles.pop(cut[2]) + line[cut.end():]
        out.append(line)
    assert not titles, f"notes no row refers to: {titles}"
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
