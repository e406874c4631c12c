"""The figures of docs/validation.md, "Collected held-out cases": summary groups and what-ifs.

    python benchmarks/collected_whatifs.py

Scores scalesim/data/validation/collected_dp_cases.json (held out: COLLECTED.md) next to the
public cases.json, grouped by server count and precision; then reruns named cases with ONE input
changed in memory (the step inputs of ``validate._inputs`` or the optimizer step of
``validate._optimizer_s``) to see how far a mechanism read in the sources would move them. Nothing
here changes the model or a default; the what-ifs are reports, not fits (C, E and F are
diagnostics: the value that would close a point, never applied).
"""

from __future__ import annotations

import statistics as st

import numpy as np
from scipy.optimize import brentq

import scalesim.validate as V
from scalesim.cli.main import OneLineParser
from scalesim.shipped import validation_path

COLLECTED = {c.id: c for c in V.load_cases(validation_path("collected_dp_cases.json"))}
PUBLIC = {c.id: c for c in V.load_cases(validation_path("cases.json"))}
_INPUTS, _OPTIMIZER = V._inputs, V._optimizer_s


def rows(cases):
    """(case, point result) for every predicted all-reduce point."""
    out = []
    for case in cases.values():
        if case.comm != "allreduce":
            continue
        out += [(case, p) for p in V.predict_case(case).points if not p.anchor]
    return out


def line(label, picked):
    e = [p.error_pct for _, p in picked]
    if e:
        a = [abs(x) for x in e]
        print(f"  {label:44s} {len(e):4d} points  |err| median {st.median(a):5.1f}%  mean "
              f"{st.mean(a):5.1f}%  max {max(a):6.1f}%  signed median {st.median(e):+5.1f}%")


FAMILIES = ("electra_pretrain", "electra_squad", "txl", "jasper", "quartznet", "rn50",
            "sernxt101", "rnxt101", "effnet", "tacotron2", "waveglow", "gnmt")


def family_of(cid: str) -> str:
    """The model family of a collected case id (dlex_<framework>_<family>...)."""
    rest = cid.split("_", 2)[2]
    return next((f for f in FAMILIES if rest.startswith(f)), rest.split("_")[0])


def predict_with(cid, inputs=None, optimizer=None):
    """The case predicted with its step inputs passed through ``inputs(case, points, inp)``."""
    def patched(case, points, b, k, params, wire):
        inp = _INPUTS(case, points, b, k, params, wire)
        return inputs(case, points, inp) if inputs else inp
    V._inputs, V._optimizer_s = patched, optimizer or _OPTIMIZER
    try:
        return V.predict_case(COLLECTED[cid])
    finally:
        V._inputs, V._optimizer_s = _INPUTS, _OPTIMIZER


def errors(result):
    return " ".join(f"{p.devices}:{p.error_pct:+.1f}" for p in result.points if not p.anchor)


def show(title, ids, **change):
    print(title)
    for cid in ids:
        print(f"  {cid:50s} {errors(V.predict_case(COLLECTED[cid])):28s} -> "
              f"{errors(predict_with(cid, **change))}")


def every_micro_step(case, points, inp):
    """DDP without no_sync: one exchange per micro-step (k = 1), the optimizer still once per k."""
    k = np.asarray(inp.accumulation, dtype=float)
    multi = np.array([p.devices > 1 for p in points])
    return inp.replace(accumulation=np.where(multi, 1.0, k),
                       optimizer_step_s=inp.optimizer_step_s * np.where(multi, 1.0 / k, 1.0))


def main(argv: list[str] | None = None) -> None:
    OneLineParser(prog="python benchmarks/collected_whatifs.py",
                  description=__doc__.split("\n\n")[0]).parse_args(argv)  # no flags
    for name, cases in (("collected", COLLECTED), ("public", PUBLIC)):
        r = rows(cases)
        print(f"{name}:")
        line("all", r)
        line("single server", [x for x in r if x[1].nodes == 1])
        line("several servers", [x for x in r if x[1].nodes > 1])
        for prec in ("fp16-mixed", "fp32", "tf32"):
            line(f"single server, {prec}",
                 [x for x in r if x[1].nodes == 1 and x[0].workload.precision == prec])
        if name == "public":  # DeepLearningExamples' cases only (ids dle_*)
            for prec in ("fp16-mixed", "fp32"):
                line(f"DLE cases, single server, {prec}",
                     [x for x in r if x[0].id.startswith("dle_") and x[1].nodes == 1
                      and x[0].workload.precision == prec])
    # signed medians by family and by framework (ids dlex_<framework>_<family>_...)
    collected = rows(COLLECTED)
    for label, key in (("family", family_of), ("framework", lambda cid: cid.split("_")[1])):
        groups = {}
        for case, point in collected:
            groups.setdefault(key(case.id), []).append(point.error_pct)
        print(f"collected, signed median by {label}: " + ", ".join(
            f"{g} {st.median(e):+.1f}% ({len(e)})" for g, e in sorted(groups.items())))

    # applied since the evidence audit (validate.NO_OVERLAP_SOURCES and _MIXED_PRECISION_SOURCES,
    # docs/validation.md "Fifth part"): overlap back on shows what the rule moved
    show("A. Horovod under XLA, applied (horovod#1673): with overlap back on",
         ["dlex_tf1_rn50_dgxa100_40g_amp", "dlex_tf1_rn50_dgx1v16_fp32", "dlex_tf1_rn50_dgx2_amp",
          "dlex_tf2_electra_squad_dgx1v16_amp", "dlex_tf2_electra_squad_dgxa100_40g_amp",
          "dlex_tf2_electra_pretrain_seq128_dgx2_amp"],
         inputs=lambda c, p, inp: inp.replace(overlap=True))
    show("B. all-reduce every micro-step (ConvNets: DDP without no_sync)",
         ["dlex_pyt_rnxt101_dgx1v16_fp32", "dlex_pyt_effnet_b0_dgxa100_80g_amp",
          "dlex_pyt_effnet_b4_dgxa100_80g_tf32", "dlex_pyt_effnet_b0_dgx1v16_fp32"],
         inputs=every_micro_step)
    # 6.28 ms: torch.optim.SGD (per tensor) on torchvision ResNet-101, pytorch/pytorch#45299
    show("D. optimizer step 6.28 ms (per-tensor SGD, ResNet-101 layers)",
         ["dlex_pyt_rnxt101_dgxa100_80g_amp", "dlex_pyt_rnxt101_dgx1v16_fp32"],
         optimizer=lambda case, params, anchor_step_s, flags: 6.28e-3)
    # The same published figures per parameter tensor (torchvision ResNet-101 has 314), times the
    # tensors of each DLE model (counted by instantiating image_classification/models at 7bdfc81d);
    # SGD for the ResNets, torch.optim.RMSprop (28.63 ms in #45299) for EfficientNet.
    tensors = {"rn50": 161, "rnxt101": 314, "sernxt101": 446, "effnet_b0": 213, "effnet_b4": 418}
    for family, count in tensors.items():
        per_tensor_s = (28.63e-3 if family.startswith("effnet") else 6.28e-3) / 314
        show(f"D'. optimizer step {count} tensors x {per_tensor_s * 1e6:.1f} us ({family})",
             [cid for cid in COLLECTED if cid.startswith(f"dlex_pyt_{family}_")],
             optimizer=lambda case, params, anchor_step_s, flags, t=count * per_tensor_s: t)
    def optimizer_of(cid):
        family = next((f for f in tensors if cid.startswith(f"dlex_pyt_{f}_")), None)
        if family is None:
            return None
        per_tensor_s = (28.63e-3 if family.startswith("effnet") else 6.28e-3) / 314
        return lambda case, params, anchor_step_s, flags, t=tensors[family] * per_tensor_s: t
    picked = []
    for cid, case in COLLECTED.items():
        r = predict_with(cid, optimizer=optimizer_of(cid))
        picked += [(case, p) for p in r.points if not p.anchor]
    print("D' applied to every PyTorch ConvNets case, collected summary:")
    line("all", picked)
    line("single server, fp16-mixed",
         [x for x in picked if x[1].nodes == 1 and x[0].workload.precision == "fp16-mixed"])
    # F. The fixed cost once per optimizer step (StepInputs.per_step_s, amortised at the anchor
    # over its k micro-steps as the model amortises it) that would close each PyTorch ConvNets
    # case's last point, and that cost per parameter tensor. Under fp16 loss scaling PyTorch's
    # GradScaler reads found_inf with .item() before it steps the optimizer (grad_scaler.py
    # _maybe_opt_step, since torch 1.6): the host waits for backward, then launches the
    # per-tensor optimizer while the GPU waits; FP32 / TF32 runs have no such sync, so the host
    # launches ahead of the GPU (docs/validation.md, "Collected held-out cases").
    print("F. fixed cost per optimizer step that would close the last point (diagnostic)")
    for cid, case in COLLECTED.items():
        family = next((f for f in tensors if cid.startswith(f"dlex_pyt_{f}_")), None)
        last = V.predict_case(case).points[-1]
        if family is None or last.error_pct <= 0:
            continue

        def closes(x, cid=cid):
            r = predict_with(cid, inputs=lambda c, p, inp: inp.replace(per_step_s=x))
            return r.points[-1].error_pct
        x = brentq(closes, 0.0, 0.3, xtol=1e-5)
        print(f"  {cid:50s} {case.workload.precision:10s} {last.devices:2d} GPUs "
              f"{last.error_pct:+6.1f}%  {x * 1e3:5.1f} ms a step, "
              f"{x / tensors[family] * 1e6:5.0f} us a tensor ({tensors[family]})")
    for cv in (0.05, 0.10):
        show(f"E. per-step jitter CV {cv} (diagnostic)",
             ["dlex_pyt_jasper_dgx2_amp_bs64", "dlex_pyt_quartznet_dgx2_fp32",
              "dlex_pyt_jasper_dgx1v16_fp32_bs16"],
             inputs=lambda c, p, inp, cv=cv: inp.replace(jitter_cv=cv))

    print("C. slowdown per extra busy device that would close the last single-server point "
          "(diagnostic)")
    for cid, case in COLLECTED.items():
        if any(p.nodes > 1 for p in case.points):
            continue

        def gap(slope, cid=cid):
            r = predict_with(cid, inputs=lambda c, p, inp: inp.replace(colocation_slope=slope))
            return r.points[-1].error_pct
        last = V.predict_case(case).points[-1]
        slope = brentq(gap, 0.0, 0.2, xtol=1e-5) if last.error_pct > 0 else float("nan")
        print(f"  {cid:50s} {case.workload.precision:10s} {last.devices:2d} GPUs "
              f"{last.error_pct:+6.1f}%  step {last.step_s * 1e3:7.1f} ms  slope "
              f"{100 * slope:5.2f}%/device")


if __name__ == "__main__":
    main()
