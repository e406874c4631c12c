"""Does the planner beat the published layouts? The planner's best against each expert layout.

    python benchmarks/plan_vs_published.py [--cases FILE ...] [--over PCT] [--markdown]

For every case of the public and the collected model-parallel files (``scalesim validate
--parallel``: parallel_cases.json, collected_parallel_cases.json) the published layout is what
the team chose. The case is evaluated as the validator evaluates it (``case_inputs``, the
group's anchor-pinned efficiency: ``validate_parallel_cases``); then ``scalesim plan``'s search
(``plan.candidate_grid``: every dp x tp x pp x cp split, ZeRO stage, micro-batch 1-32,
schedule, virtual stages, recompute, sequence parallelism, hybrid shard groups) is evaluated on
the same inputs (hardware, precision, efficiency, framework settings, device count, global batch,
sequence length) and ranked as plan ranks (fitting layouts by samples/s). Printed: the planner's
best / the published layout's predicted samples/s, and the best layout. The framework settings
that the validator derives per layout (tp overlap, FSDP prefetch and reduce dtype, the recompute
style) are derived per searched layout by the same rules (``framework_fields``); the script
checks that they reproduce the validator's prediction of every published layout exactly.
docs/validation.md, "Planner against the published layouts", has the table and the findings.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import numpy as np

from scalesim.cli.main import OneLineParser
from scalesim.layout import SCHEDULES, ParallelLayout, schedule_words
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.transformer import RECOMPUTE
from scalesim.plan import RECOMPUTE_CHOICES, Setting, candidate_grid
from scalesim.schemas import TransformerShape
from scalesim.shipped import validation_path
from scalesim.validate_parallel import (
    BACKWARD_PREFETCH_POST_SOURCES,
    TP_OVERLAP_FROM_YEAR,
    ParallelCase,
    _year,
    allocation_of,
    case_inputs,
    load_parallel_cases,
    recompute_early_stop_of,
    recompute_op_sac_of,
    stated_reduce_bytes,
    validate_parallel_cases,
)

FILES = ("parallel_cases.json", "collected_parallel_cases.json")
CP_DEGREES = (1, 2, 4, 8)  # scalesim plan --cp 1,2,4,8 (those that divide the count are kept)
LAYOUT_FIELDS = ("dp", "tp", "pp", "cp", "zero", "micro_batch", "global_batch", "schedule",
                 "virtual_stages", "recompute", "sequence_parallel")


def framework_fields(case: ParallelCase, grid: dict) -> dict:
    """The framework settings the validator derives from a case's source for its layout
    (``validate_parallel.case_inputs``), here for every layout of ``grid`` by the same rules."""
    year = _year(case.source)
    zero, tp, rec = (np.asarray(grid[k]) for k in ("zero", "tp", "recompute"))
    return {
        "tp_overlap": (year is not None and year >= TP_OVERLAP_FROM_YEAR) & (tp > 1),
        "fsdp_backward_prefetch_post": (zero >= 3) & any(
            s in case.source for s in BACKWARD_PREFETCH_POST_SOURCES),
        "reduce_bytes_per_param": stated_reduce_bytes(case, zero),
        "recompute_early_stop": (rec == RECOMPUTE["full"]) & recompute_early_stop_of(case.source),
        "recompute_op_sac": (rec == RECOMPUTE["selective"]) & recompute_op_sac_of(case.source),
    }


def published_grid(layout: ParallelLayout) -> dict:
    """The published layout as one row of a grid (``framework_fields``' argument)."""
    return {"dp": layout.dp, "tp": layout.tp, "pp": layout.pp, "cp": layout.cp,
            "zero": layout.zero, "micro_batch": layout.micro_batch,
            "global_batch": layout.global_batch, "schedule": SCHEDULES[layout.schedule],
            "virtual_stages": layout.virtual_stages, "recompute": RECOMPUTE[layout.recompute],
            "sequence_parallel": layout.sequence_parallel, "shard_group": 0}


def searched(case: ParallelCase, x: LayoutInputs, cp_degrees=CP_DEGREES):
    """(grid, result): ``scalesim plan``'s candidate layouts of the case's device count and
    global batch, evaluated on the case's inputs ``x`` (its pinned efficiency)."""
    n = case.layout.devices
    shape = TransformerShape(layers=int(x.layers), hidden=int(x.hidden), heads=int(x.heads),
                             kv_heads=int(x.kv_heads), ffn_hidden=int(x.ffn_hidden),
                             gated_mlp=bool(x.gated), seq_len=int(x.seq_len), vocab=int(x.vocab),
                             flash_attention=bool(x.flash_attention))
    # candidate_grid reads the server size and the allocation unit only of the hardware (a GB200
    # NVL72 case: trays of 4 in a rack of 72, as the validator reads it)
    g = case.hardware.gpus_per_node
    setting = Setting(shape, SimpleNamespace(devices_per_node=g,
                                             allocation_devices=allocation_of(case.hardware) or g),
                      case.layout.global_batch)
    grid = candidate_grid([n], setting, [c for c in cp_degrees if n % c == 0])
    fields = {k: grid[k] for k in (*LAYOUT_FIELDS, "shard_group")}
    return grid, evaluate_layouts(x.replace(**fields, **framework_fields(case, grid)))


def layout_words(g: dict, i: int | None = None) -> str:
    """'dp 8 tp 4 pp 2 cp 1 z1 mb 2 interleaved 1F1B, 2 virtual stages, full, sp'."""
    v = {k: (np.asarray(g[k]).reshape(-1)[i if i is not None else 0]) for k in g}
    sched = next(k for k, c in SCHEDULES.items() if c == v["schedule"])
    words = (f"dp{v['dp']} tp{v['tp']} pp{v['pp']}" + (f" cp{v['cp']}" if v["cp"] > 1 else "")
             + f" z{v['zero']}" + (f"/{v['shard_group']}" if 0 < v["shard_group"] < v["dp"] * v["cp"]
                                   and v["zero"] else "")
             + f" mb{v['micro_batch']}")
    if v["pp"] > 1:
        words += f" {schedule_words(sched, int(v['virtual_stages']))}"
    words += f" rc-{RECOMPUTE_CHOICES[int(v['recompute'])]}"
    if v["sequence_parallel"] and v["tp"] > 1:
        words += " sp"
    return words


def case_row(case: ParallelCase, efficiency: float, memory_margin: float = 0.0,
             grad_bytes: float | None = None) -> dict:
    """The case's published layout and the planner's best, at the group's pinned
    ``efficiency``: samples/s of each, their ratio, the layouts, the step parts.
    ``memory_margin`` (share of device memory kept free) and ``grad_bytes`` (bytes per
    parameter of the gradients; None: the validator's 2) are sensitivities, applied to the
    published and the searched layouts alike after the check against the validator."""
    x, layout = case_inputs(case, [])
    x = x.replace(efficiency=efficiency)
    pub = evaluate_layouts(x)
    # the per-layout rules reproduce the validator's inputs on the published layout
    again = evaluate_layouts(x.replace(**framework_fields(case, published_grid(layout))))
    if float(again.step_time_s) != float(pub.step_time_s):
        raise SystemExit(f"{case.id}: framework_fields disagrees with case_inputs")
    x = x.replace(memory_margin=memory_margin, **(
        {} if grad_bytes is None else {"grad_bytes_per_param": grad_bytes}))
    pub = evaluate_layouts(x)
    grid, r = searched(case, x)
    fits = np.flatnonzero(r.fits)
    row = {"id": case.id, "group": case.group, "devices": case.layout.devices,
           "published_sps": float(pub.samples_per_s), "published_fits": bool(pub.fits),
           "published_gib": float(pub.memory_bytes) / 2**30,
           "published": layout_words(published_grid(layout)), "evaluated": int(r.fits.size)}
    if fits.size == 0:
        return {**row, "ratio": float("nan"), "best": "nothing fits"}
    i = int(fits[np.lexsort((r.memory_bytes[fits], -r.samples_per_s[fits]))[0]])
    parts = ("compute_s", "tp_comm_s", "cp_comm_s", "bubble_s", "p2p_s", "dp_exposed_s",
             "straggler_s")
    return {**row, "ratio": float(r.samples_per_s[i]) / row["published_sps"],
            "best": layout_words(grid, i), "best_gib": float(r.memory_bytes[i]) / 2**30,
            "best_parts": {p: float(np.asarray(getattr(r, p))[i]) for p in parts},
            "published_parts": {p: float(getattr(pub, p)) for p in parts}}


def compare(path, memory_margin: float = 0.0, grad_bytes: float | None = None) -> list[dict]:
    """``case_row`` of every case of a file the validator predicts (its efficiencies)."""
    cases = load_parallel_cases(path)
    efficiency = {r.id: r.efficiency for r in validate_parallel_cases(cases).cases}
    return [case_row(c, efficiency[c.id], memory_margin, grad_bytes) for c in cases
            if c.id in efficiency]


def main() -> None:
    parser = OneLineParser(description=__doc__)
    parser.add_argument("--cases", nargs="*", default=None,
                        help="parallel cases files (default: the two shipped ones)")
    parser.add_argument("--over", type=float, default=15.0,
                        help="list the step breakdowns of the cases the planner beats by more "
                             "than this many percent")
    parser.add_argument("--memory-margin", type=float, default=0.0,
                        help="sensitivity: share of device memory a layout must leave free")
    parser.add_argument("--grad-bytes", type=float, default=None,
                        help="sensitivity: gradient bytes per parameter (fp32 main grads: 4)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    t0 = time.process_time()
    paths = args.cases or [validation_path(f) for f in FILES]
    every = []
    for path in paths:
        rows = compare(path, args.memory_margin, args.grad_bytes)
        every += rows
        ratios = np.array([r["ratio"] for r in rows if np.isfinite(r["ratio"])])
        print(f"\n### {os.path.basename(str(path))}: {len(rows)} cases; planner / published "
              f"median {np.median(ratios):.3f}, max {ratios.max():.3f}; above +{args.over:g}%: "
              f"{int(np.sum(ratios > 1 + args.over / 100))}; below 1: {int(np.sum(ratios < 1 - 1e-9))}"
              "\n")
        print("| case | GPUs | published layout | fits | planner's best | best / published |")
        print("|---|---:|---|---|---|---:|")
        for r in rows:
            print(f"| {r['id']} | {r['devices']} | {r['published']} | "
                  f"{'yes' if r['published_fits'] else 'NO'} ({r['published_gib']:.0f} GiB) | "
                  f"{r['best']} | {r['ratio']:.3f} |")
    over = [r for r in every if np.isfinite(r["ratio"]) and r["ratio"] > 1 + args.over / 100]
    if over:
        print(f"\n### Above +{args.over:g}%: where the step time goes (s), published -> best\n")
        for r in over:
            diffs = ", ".join(f"{p.removesuffix('_s')} {r['published_parts'][p]:.3g}->"
                              f"{r['best_parts'][p]:.3g}" for p in r["best_parts"]
                              if abs(r["published_parts"][p] - r["best_parts"][p]) > 1e-4)
            print(f"- {r['id']} ({r['ratio']:.3f}): {diffs}; memory {r['published_gib']:.0f} -> "
                  f"{r['best_gib']:.0f} GiB")
    print(f"\nCPU time: {time.process_time() - t0:.1f} s (one core)")


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
