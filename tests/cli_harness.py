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


def fitted_of(report):
    """(profile, scenario) a runs diagnosis fitted, read back from its details as its --json
    writes them (a round trip through JSON, as a user's file would be)."""
    import json

    from scalesim.schemas import Profile, Scenario

    profile = Profile.model_validate(json.loads(json.dumps(report.details["fitted_profile"])))
    return profile, Scenario.model_validate(report.details["fitted_scenario"])
