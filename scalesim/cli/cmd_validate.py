"""scalesim validate: predict published scaling measurements from their anchor and show the error."""

from __future__ import annotations

import argparse
import json

NAME = "validate"
HELP = "predict published scaling results (scalesim-validation-cases/1) and report the error"
EXAMPLE = """examples:
  scalesim validate                 # the 57 published cases shipped with scalesim
  scalesim validate --json
  scalesim validate my-cases.json

Each case's smallest device count (its anchor) pins down compute; every other point is
predicted from the case's hardware and workload with one set of documented defaults
(docs/validation.md). Errors are (predicted - published) / published; the summary excludes
anchors."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", nargs="?", default=None,
                   help="validation cases JSON (scalesim-validation-cases/1); default: the "
                   "published cases shipped with scalesim (scalesim/data/validation/cases.json)")
    p.add_argument("--json", action="store_true",
                   help="print {cases: [{id, points: [{devices, published, predicted, "
                   "error_pct}]}], summary}")


def _stats_line(stats) -> str:
    if stats.points == 0:
        return "no predicted points"
    return (f"|error| mean {stats.mean_abs_pct:.1f}%, median {stats.median_abs_pct:.1f}%, "
            f"max {stats.max_abs_pct:.1f}% over {stats.points} points")


def render_text(report) -> str:
    lines = []
    for case in report.cases:
        lines.append(f"{case.id} ({case.comm}, {case.unit}/s, trust {case.trust})")
        for flag in case.flags:
            lines.append(f"  flag: {flag}")
        lines.append(f"  {'devices':>7} {'nodes':>5} {'published':>13} {'predicted':>13} "
                     f"{'error':>8} {'step ms':>9} {'exp.comm':>9}")
        for p in case.points:
            err = "anchor" if p.anchor else f"{p.error_pct:+.1f}%"
            lines.append(f"  {p.devices:>7} {p.nodes:>5} {p.published:>13.1f} "
                         f"{p.predicted:>13.1f} {err:>8} {p.step_s * 1e3:>9.1f} "
                         f"{p.exposed_comm_s * 1e3:>9.1f}")
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
        lines.append(f"  {key:<17} {g['cases']:>5} {g['points']:>6} {g['mean_abs_pct']:>7.1f}% "
                     f"{g['median_abs_pct']:>7.1f}% {g['max_abs_pct']:>7.1f}%")
    t = s["targets"]
    lines.append(
        f"targets (all-reduce): median <= {t['allreduce_median_abs_pct']:g}% "
        f"{'met' if t['median_met'] else 'NOT met'}; mean <= {t['allreduce_mean_abs_pct']:g}% "
        f"{'met' if t['mean_met'] else 'NOT met'}"
    )
    lines.append(f"{s['flagged_cases']} of {len(report.cases)} cases use a default or an assumed "
                 "field (see their flags)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from scalesim.shipped import validation_path
    from scalesim.validate import validate_file

    report = validate_file(args.file if args.file is not None else validation_path("cases.json"))
    if args.json:
        print(json.dumps(report.model_dump(), indent=2))
    else:
        print(render_text(report))
    return 0
