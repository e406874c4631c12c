"""scalesim validate: predict published scaling measurements from their anchor and show the error."""

from __future__ import annotations

import argparse
import sys

from scalesim.errors import file_path
from scalesim.jsonio import to_json_text

NAME = "validate"
HELP = (
    "predict published scaling results (scalesim-validation-cases/1 or "
    "scalesim-parallel-cases/1) and report the error"
)
EXAMPLE = """examples:
  scalesim validate                 # the 57 published data-parallel cases shipped with scalesim
  scalesim validate --parallel      # the published model-parallel runs shipped with scalesim
  scalesim validate --json
  scalesim validate my-cases.json   # scalesim-validation-cases/1 or scalesim-parallel-cases/1

Each case's smallest device count (its anchor) pins down compute; every other point is
predicted from the case's hardware and workload with one set of documented defaults
(docs/validation.md). Errors are (predicted - published) / published; the summary excludes
anchors. A case that cannot be read is not predicted: it is listed with its reason and the
rest of the file is validated (exit 0; 2 where no point is left to score). A file of format
scalesim-parallel-cases/1 (model-parallel transformer runs) is detected by its format field:
each group's anchor case pins the sustained matmul efficiency and every other case is predicted
from its description."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        default=None,
        type=file_path,
        help="validation cases JSON (scalesim-validation-cases/1 or "
        "scalesim-parallel-cases/1); default: the published cases shipped with "
        "scalesim (scalesim/data/validation/cases.json, or parallel_cases.json with "
        "--parallel)",
    )
    p.add_argument(
        "--parallel", action="store_true", help="without FILE: run the shipped model-parallel cases"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print {cases: [{id, points: [{devices, published, predicted, "
        "error_pct}]}], summary, skipped: [{id, reason}]} (skipped: the cases that "
        "could not be read, not predicted)",
    )


def _stats_line(stats) -> str:
    if stats.points == 0:
        return "no predicted points"
    return (
        f"|error| mean {stats.mean_abs_pct:.1f}%, median {stats.median_abs_pct:.1f}%, "
        f"max {stats.max_abs_pct:.1f}% over {stats.points} points"
    )


# An anchor pins compute so that it is predicted exactly; one it cannot reach (its modelled
# communication alone slower than its step, or above the datasheet peak) keeps an error, and
# the table's 'anchor' would hide it (the JSON has it)
ANCHOR_MISS_PCT = 0.05


def _missed_anchor(point) -> str:
    """'' for a non-anchor or an anchor predicted exactly; else the line that says its error."""
    if not point.anchor or abs(point.error_pct) < ANCHOR_MISS_PCT:
        return ""
    return (f"anchor not reached: predicted {point.predicted:.4g} against {point.published:.4g} "
            f"published ({point.error_pct:+.1f}%; see the flag)")


def render_text(report) -> str:
    lines = []
    for case in report.cases:
        lines.append(f"{case.id} ({case.comm}, {case.unit}/s, trust {case.trust})")
        for flag in case.flags:
            lines.append(f"  flag: {flag}")
        lines.append(
            f"  {'devices':>7} {'nodes':>5} {'published':>13} {'predicted':>13} "
            f"{'error':>8} {'step ms':>9} {'exp.comm':>9}"
        )
        for p in case.points:
            err = "anchor" if p.anchor else f"{p.error_pct:+.1f}%"
            lines.append(
                f"  {p.devices:>7} {p.nodes:>5} {p.published:>13.1f} "
                f"{p.predicted:>13.1f} {err:>8} {p.step_s * 1e3:>9.1f} "
                f"{p.exposed_comm_s * 1e3:>9.1f}"
            )
        lines += [f"  {line}" for p in case.points if (line := _missed_anchor(p))]
        lines.append(f"  {_stats_line(case.stats)}")
        lines.append("")
    s = report.summary
    lines.append("summary (absolute error over predicted points; anchors excluded)")
    lines.append(f"  {'':<17} {'cases':>5} {'points':>6} {'mean':>8} {'median':>8} {'max':>8}")
    for key in ("allreduce", "parameter-server", "all"):
        g = s[key]
        if g["points"] == 0:
            lines.append(f"  {key:<17} {g['cases']:>5} {0:>6}        -        -        -")
            continue
        lines.append(
            f"  {key:<17} {g['cases']:>5} {g['points']:>6} {g['mean_abs_pct']:>7.1f}% "
            f"{g['median_abs_pct']:>7.1f}% {g['max_abs_pct']:>7.1f}%"
        )
    t = s["targets"]
    lines.append(
        _targets_line(
            "targets (all-reduce)",
            [
                ("median", t["allreduce_median_abs_pct"], t["median_met"]),
                ("mean", t["allreduce_mean_abs_pct"], t["mean_met"]),
            ],
            "no all-reduce point to score (anchors excluded)",
        )
    )
    if t["parameter_server_median_met"] is not None:
        lines.append(
            _targets_line(
                "target (parameter-server)",
                [("median", t["parameter_server_median_abs_pct"], t["parameter_server_median_met"])],
                "",
            )
        )
    lines.append(
        f"{s['flagged_cases']} of {len(report.cases)} cases use a default or an assumed "
        f"field{_part_not_read(report.cases)} (see their flags)"
    )
    return "\n".join(lines)


def _part_not_read(cases) -> str:
    """``', or have a part not read (N)'`` where the reader flagged a field ignored or a point
    dropped in any of ``cases`` (the flag count's words would miss them), else ''."""
    from scalesim.validate import FIELDS_IGNORED, POINT_NOT_READ

    n = sum(1 for c in cases if any(f.startswith((FIELDS_IGNORED, POINT_NOT_READ)) for f in c.flags))
    return f", or have a part not read: a field ignored or a point dropped ({n})" if n else ""


def _targets_line(title: str, targets: list[tuple[str, float, bool | None]], none: str) -> str:
    """``title: median <= 4% met; mean <= 7% NOT met`` for ``(statistic, limit in %, met)``;
    ``title: none`` where nothing was scored (met None: no predicted point)."""
    if all(met is None for _, _, met in targets):
        return f"{title}: {none}"
    return f"{title}: " + "; ".join(
        f"{name} <= {limit:g}% {'met' if met else 'NOT met'}" for name, limit, met in targets
    )


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1f}%"


def render_parallel_text(report) -> str:
    """Per-case table of a model-parallel validation, then the summary and the targets."""
    lines = [
        f"{'case':<40} {'metric':<20} {'published':>10} {'predicted':>10} {'error':>7} "
        f"{'step s':>8} {'GiB':>5}"
    ]
    for c in report.cases:
        err = "anchor" if c.anchor else f"{c.error_pct:+.1f}%"
        lines.append(
            f"{c.id:<40} {c.metric:<20} {c.published:>10.4g} {c.predicted:>10.4g} "
            f"{err:>7} {c.step_time_s:>8.2f} {c.memory_gib:>5.0f}"
        )
        if line := _missed_anchor(c):
            lines.append(f"  {line}")
    s = report.summary
    lines.append("")
    lines.append("per group (absolute error over non-anchor cases; efficiency from the anchor)")
    for group, g in s["groups"].items():
        lines.append(
            f"  {group:<36} {g['cases']:>3} cases  mean {_pct(g['mean_abs_pct']):>6}  "
            f"median {_pct(g['median_abs_pct']):>6}  max {_pct(g['max_abs_pct']):>6}  "
            f"efficiency {s['efficiency'][group]:.3f}"
        )
    a, t = s["all"], s["targets"]
    lines.append(
        f"all: {a['cases']} predicted cases, |error| mean {_pct(a['mean_abs_pct'])}, "
        f"median {_pct(a['median_abs_pct'])}, max {_pct(a['max_abs_pct'])}"
    )
    lines.append(
        _targets_line(
            "targets",
            [(k, t[f"{k}_abs_pct"], t[f"{k}_met"]) for k in ("median", "mean", "max")],
            "no non-anchor case predicted to score",
        )
    )
    flagged = sum(1 for c in report.cases if c.flags)
    too_big = sum(1 for c in report.cases if not c.fits)
    lines.append(
        f"{flagged} of {len(report.cases)} cases carry flags: a default for a field their "
        f"source does not state, or a layout that would not fit its device ({too_big})"
        f"{_part_not_read(report.cases)}; "
        "--json lists them"
    )
    return "\n".join(lines)


def skipped_text(report, what: str) -> str:
    """The text report's closing section: each case not predicted, with its reason ('' when
    every case was predicted). Every reason names its case (``case 'id':``); the file ``what``
    that begins most is said once, in the heading, not on every line."""
    if not report.skipped:
        return ""
    total = len(report.cases) + len(report.skipped)
    lines = [
        "",
        f"not predicted: {len(report.skipped)} of {total} cases of {what} (left out of "
        "the summary; each line is the reason)",
    ]
    lines += [f"  {s.reason.removeprefix(f'{what}: ')}" for s in report.skipped]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from scalesim.errors import ScalesimError, excerpt
    from scalesim.jsonio import KeysTwice, key_twice_text, read_json
    from scalesim.shipped import validation_path
    from scalesim.validate import FORMAT, format_words, none_read, read_cases, validate_cases
    from scalesim.validate_parallel import (
        FORMAT as PARALLEL_FORMAT,
    )
    from scalesim.validate_parallel import (
        read_parallel_cases,
        validate_parallel_cases,
    )

    path = args.file
    if path is None:
        path = validation_path("parallel_cases.json" if args.parallel else "cases.json")
    data = read_json(path, keys_twice=True)  # a key twice inside one case skips that case
    if isinstance(data, KeysTwice):  # ... one at the top level refuses the file
        raise ScalesimError(key_twice_text(str(path), data.twice[0]))
    fmt = data.get("format") if isinstance(data, dict) else None
    if isinstance(data, dict) and fmt not in (FORMAT, PARALLEL_FORMAT):
        raise ScalesimError(
            f"{path}: {format_words(data)}; validate reads '{FORMAT}' (data-parallel runs, "
            f"scalesim/data/validation/README.md) or '{PARALLEL_FORMAT}' (model-parallel runs, "
            'scalesim/data/validation/parallel_cases.md): set the file\'s "format"'
        )
    if args.parallel and args.file is not None and fmt != PARALLEL_FORMAT:
        raise ScalesimError(
            f"--parallel: {path} is not of format '{PARALLEL_FORMAT}' (a file's "
            "format field says how it is validated; --parallel picks the "
            "shipped model-parallel cases when no FILE is given): drop --parallel "
            f"to validate it as '{FORMAT}', or give a model-parallel file"
        )
    if fmt == PARALLEL_FORMAT:
        read = read_parallel_cases(data, str(path))
        report = validate_parallel_cases(read.cases, read.skipped)
        text = render_parallel_text(report)
    else:
        read = read_cases(data, str(path))
        report = validate_cases(read.cases, read.skipped)
        text = render_text(report)
    if not report.cases:  # every case read was refused by the model: as when none is read
        raise none_read(str(path), report.skipped, read.total)
    print(
        to_json_text(report.model_dump(), what="the validation report")
        if args.json
        else text + skipped_text(report, str(path))
    )
    notes = []  # one stderr line, whatever was left out
    if report.skipped:
        where = '"skipped" in the report' if args.json else "the report's last section"
        notes.append(
            f"{len(report.skipped)} of {read.total} cases not predicted (see {where}; "
            "the summary leaves them out)"
        )
    if read.ignored:
        notes.append(
            f"{path}: top-level field(s) "
            f"{', '.join(repr(excerpt(f)) for f in read.ignored)} ignored (the format "
            "has only format and cases)"
        )
    scored = report.summary["all"]["points" if fmt != PARALLEL_FORMAT else "cases"]
    if not scored:  # a report of anchors alone scores nothing: not a pass
        notes.insert(0, f"error: {path}: no point was predicted (every case read is only its "
                        "anchor, or its other points were not read); fix what the report names")
    if notes:
        print("scalesim validate: " + "; ".join(notes), file=sys.stderr)
    return 0 if scored else 2
