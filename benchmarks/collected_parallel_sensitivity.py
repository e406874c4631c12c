"""What would move the held-out model-parallel misses: one input or one cost changed on a copy.

    python benchmarks/collected_parallel_sensitivity.py [CASES_JSON]

Scores the collected held-out runs (default: the shipped ``collected_parallel_cases.json``;
docs/validation.md, "Collected held-out model-parallel runs") as ``scalesim validate`` does, then
again with one change at a time, each group's anchor re-pinned every time, and prints the cases
that move and the group / overall |error| figures before -> after. Nothing here changes the model
or a default: the changes live in this script only (the cast and pipeline-send ones wrap private
functions of ``scalesim.model.layout_step`` for the duration of the run). Last, it tries every
case of each group of three or more as that group's anchor, to show how much the anchor choice
matters.

- S1: Nemotron's vocabulary 256,000 (Nemotron-4 reports) instead of the null default 51,200.
- S2: the "vanilla TP" rows with their tensor-parallel collectives not overlapped
  (``tp_overlap`` False; the validator turns it on for every TP source of 2024 or later).
- S3: on the torchtitan fp8 rows, the activations' amax as its own pass (torchao's float8
  roofline without its fusion option, pytorch/ao ``torchao/testing/training/roofline_utils.py``):
  2 bytes more per element of each Linear's input and output gradient (on every token, also
  where sequence parallelism shards them), the forward's again under full recompute. The model
  itself now charges the fused casts (docs/model.md §13, fp8); S3 first added torchao's unfused
  bytes to a model with no casts (docs/validation.md, "fp8's casts").
- S5: torchtitan's op-level selective checkpoint (``_custom_policy`` in parallelize_llama.py at
  9dec370 and 820504e: "Saves output of all compute ops, except every second mm") reruns the
  2nd, 4th and 6th matmul of each block (wk, wo, w3): that share r of the block's weight-matmul
  FLOPs. The model's ``selective`` reruns the attention core only, its ``full`` the whole forward;
  the step is taken as selective + r x (full - selective) for the torchtitan selective rows.
  Superseded: the model now has the policy (recompute style op-sac, docs/model.md §11) and the
  validator applies it to these rows; S5 keeps the earlier interpolation (from Korthikanti's
  selective) for the record, against a base that has the policy.
- S6: the attention core of the llm-foundry H100 rows at a fixed share of the 16-bit peak
  (on the model's non-causal count) instead of the anchored matmul efficiency, for shares 0.45,
  0.35 and 0.25: a sweep, not a fit. The published rows show why: the same rows' H100/A100
  speed-up falls from 2.1-2.3 at 2K tokens to 1.8-1.9 at 64K (the attention share), against 3.2
  for the datasheet peaks; llm-foundry's default attention there is its Triton kernel.
- S7: PyTorch's checkpoint early stop (docs/model.md §13; the validator applies it to
  llm-foundry sources from 2023-12-07 on) for the October-2023 llm-foundry rows too, whose torch
  version is not recorded (the public section's sensitivity did the same on the public rows).
- S4: pipeline sends hidden behind compute (Megatron's ``overlap_p2p_comm``, set in the NeMo
  launcher configs of 2024 for the interleaved layouts) on interleaved NeMo / Megatron-Bridge
  rows, but for the contention share c = 0.159 (docs/model.md §3).
- S8: the NeMo 24.07 rows with the settings of NVIDIA/NeMo-Framework-Launcher at its tag 24.07
  (8325688d8, 2024-08-01), which the table does not say it used: (a) ``NVTE_FUSED_ATTN: 0``
  ("Disable cudnn FA until we've tested it more", launcher_scripts/conf/config.yaml line 72),
  so Transformer Engine runs FlashAttention-2 (``flash2``: 0.35 of the 16-bit peak on H100);
  (b) ``ub_tp_comm_overlap: False`` in gpt3/175b.yaml and nemotron/nemotron_340b.yaml (tensor-
  parallel collectives not overlapped there); (c) ``activations_checkpoint_granularity:
  selective`` in nemotron_340b.yaml.
- S9: the two 30B rows at 8,192 tokens (H100 and A100 80GB, October 2023) without the
  checkpoint early stop: their MicroBatchSize 1 / GradAccum 21 is not a run that the same
  commit's sweep.sh lists (it runs 30b at -s 13 with --microbatch_size 2 --accum 1), so the
  torch 2.1.0 image that sweep.sh sets is not established for them.
"""

from __future__ import annotations

import copy
import json
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

import scalesim.model.layout_step as ls
from scalesim.cli.main import OneLineParser
from scalesim.model.transformer import RECOMPUTE
from scalesim.presets import FLASH2_ON_HOPPER_EFFICIENCY
from scalesim.shipped import validation_path
from scalesim.validate_parallel import EFFICIENCY_BOUNDS, case_inputs, load_parallel_cases, metric_of

CONTENTION = 0.159  # docs/model.md §3: the share of hidden communication that still costs


def cast_bytes(x, tokens):
    """The unfused amax pass of torchao's float8 tensorwise casts, one layer and micro-batch:
    (forward, backward) bytes over torchtitan's Llama linears wq, wk, wv, wo, w1, w3, w2 at the
    local shard, 2 per element of each input and output gradient (S3)."""
    h, f, a, kv, t = (np.asarray(v, dtype=float) for v in
                      (x.hidden, x.ffn_hidden, x.heads, x.kv_heads, x.tp))
    hd = h / a
    linears = [(h, h / t), (h, kv * hd / t), (h, kv * hd / t), (h / t, h), (h, f / t), (h, f / t),
               (f / t, h)]  # (K, N) of each Linear
    forward = sum(2 * tokens * k for k, n in linears)
    backward = sum(2 * tokens * n for k, n in linears)
    return forward, backward


ATTENTION_SHARE = {"share": None}  # S6: the attention core at this share of the 16-bit peak


@contextmanager
def attention_at(share):
    """The attention core at ``share`` of the 16-bit peak for one evaluation (S6)."""
    layer_times = ls._layer_times

    def fixed_core(x, tokens, flops_per_s, mem_per_s, core):
        peak = x.peak_flops_per_s if x.peak16_flops_per_s is None else x.peak16_flops_per_s
        return layer_times(x, tokens, flops_per_s, mem_per_s, share * np.asarray(peak, float))

    if share is not None:
        ls._layer_times = fixed_core
    try:
        yield
    finally:
        ls._layer_times = layer_times


@contextmanager
def extra_costs(cast: bool, hide_p2p: bool):
    """Wrap the layer times (float8 casts) and the pipeline sends (hidden) for one evaluation."""
    layer_times, p2p = ls._layer_times, ls.p2p_s

    def layer_times_cast(x, tokens, flops_per_s, mem_per_s, core):
        fwd, bwd, rec, matmul, attention, weight_grad = layer_times(x, tokens, flops_per_s,
                                                                    mem_per_s, core)
        bw = np.asarray(x.memory_bandwidth_GBps, dtype=float) * 1e9
        f_bytes, b_bytes = cast_bytes(x, tokens)
        full = np.asarray(x.recompute) == RECOMPUTE["full"]
        return (fwd + f_bytes / bw, bwd + b_bytes / bw, rec + np.where(full, f_bytes / bw, 0.0),
                matmul, attention, weight_grad)

    if cast:
        ls._layer_times = layer_times_cast
    if hide_p2p:
        ls.p2p_s = lambda *args, **kw: CONTENTION * p2p(*args, **kw)
    try:
        yield
    finally:
        ls._layer_times, ls.p2p_s = layer_times, p2p


def pinned_errors(prepared, predict):
    """{id: (group, anchor, error %)}: each group's efficiency pinned on its anchor by
    ``predict(case, inputs, efficiency)``, every case then predicted at it."""
    efficiency = {}
    for c, x in prepared:
        if c.anchor:
            def gap(eff, c=c, x=x):
                return predict(c, x, eff) - c.measured.value
            lo, hi = EFFICIENCY_BOUNDS
            efficiency[c.group] = brentq(gap, lo, hi, xtol=1e-9) if gap(hi) > 0 else hi
    return {c.id: (c.group, c.anchor, 100.0 * (predict(c, x, efficiency[c.group])
                                               / c.measured.value - 1.0)) for c, x in prepared}


def score(cases, change=None, cast=None, hide_p2p=None, attention=None):
    """{id: (group, anchor, error %)} with each group's anchor re-pinned under the changes."""
    prepared = []
    for c in cases:
        x, _ = case_inputs(c, [])
        prepared.append((c, change(c, x) if change else x))

    def predict(c, x, eff):
        with attention_at(attention(c) if attention else None), \
                extra_costs(bool(cast and cast(c)), bool(hide_p2p and hide_p2p(c))):
            return metric_of(c, x, ls.evaluate_layouts(x.replace(efficiency=eff)))

    return pinned_errors(prepared, predict)


def op_sac_share(c) -> float:
    """Share of a Llama block's weight-matmul FLOPs in wk, wo and w3 (torchtitan op-level SAC)."""
    m = c.model
    h, f, kv = m.hidden, m.ffn_hidden, (m.kv_heads or m.heads) * m.hidden / m.heads
    return (h * kv + h * h + h * f) / (2 * h * h + 2 * h * kv + 3 * h * f)


def score_op_sac(cases, change=None, cast=None):
    """``score`` with torchtitan's selective rows between the model's selective and full."""
    def is_op_sac(c):
        return c.layout.recompute == "selective" and "torchtitan" in c.source

    # the validator now applies the modelled policy (recompute_op_sac, session 10); S5 is the
    # earlier interpolation between Korthikanti's selective and full, kept for the record
    prepared = [(c, case_inputs(c, [])[0].replace(recompute_op_sac=False)) for c in cases]
    prepared = [(c, change(c, x) if change else x) for c, x in prepared]

    def predict(c, x, eff):
        with extra_costs(bool(cast and cast(c)), False):
            sel = metric_of(c, x, ls.evaluate_layouts(x.replace(efficiency=eff)))
            if not is_op_sac(c):
                return sel
            full = metric_of(c, x, ls.evaluate_layouts(x.replace(efficiency=eff,
                                                                 recompute=RECOMPUTE["full"])))
        return 1.0 / (1.0 / sel + op_sac_share(c) * (1.0 / full - 1.0 / sel))

    return pinned_errors(prepared, predict)


def figures(errors) -> str:
    e = np.abs(errors)
    return f"mean {e.mean():.1f}  median {np.median(e):.1f}  max {e.max():.1f}%  (n={len(e)})"


def report(title, base, new):
    print(f"\n== {title}")
    for k, (_, anchor, before) in base.items():
        after = new[k][2]
        if not anchor and abs(after - before) > 0.05:
            print(f"   {k:64s} {before:+6.1f} -> {after:+6.1f}")
    for g in dict.fromkeys(v[0] for v in base.values()):
        b = [v[2] for v in base.values() if v[0] == g and not v[1]]
        n = [new[k][2] for k, v in base.items() if v[0] == g and not v[1]]
        if b and any(abs(p - q) > 0.05 for p, q in zip(b, n, strict=True)):
            print(f"   group {g}: {figures(b)} -> {figures(n)}")
    print(f"   all: {figures([v[2] for v in base.values() if not v[1]])} -> "
          f"{figures([v[2] for v in new.values() if not v[1]])}")


def anchor_sensitivity(path):
    raw = json.loads(Path(path).read_text())
    groups: dict[str, list[str]] = {}
    for c in raw["cases"]:
        groups.setdefault(c["group"], []).append(c["id"])
    print("\n== every case of a group as its anchor (groups of 3 or more)")
    for g, ids in groups.items():
        if len(ids) < 3:
            continue
        rows = []
        for a in ids:
            trial = copy.deepcopy(raw)
            for c in trial["cases"]:
                if c["group"] == g:
                    c["anchor"] = c["id"] == a
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(trial, f)
            out = score(load_parallel_cases(f.name))
            e = np.abs([v[2] for v in out.values() if v[0] == g and not v[1]])
            rows.append((float(np.median(e)), float(e.mean()), a))
        chosen = next(c["id"] for c in raw["cases"] if c["group"] == g and c["anchor"])
        rank = sorted(rows).index(next(r for r in rows if r[2] == chosen)) + 1
        print(f"   {g}: median |error| {min(rows)[0]:.1f} to {max(rows)[0]:.1f}%, mean "
              f"{min(r[1] for r in rows):.1f} to {max(r[1] for r in rows):.1f}% over "
              f"{len(rows)} anchors; the file's anchor ranks {rank} of {len(rows)}")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python benchmarks/collected_parallel_sensitivity.py",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="?", default=str(validation_path("collected_parallel_cases.json")),
                        help="the held-out parallel cases (default: the shipped "
                        "collected_parallel_cases.json)")
    path = parser.parse_args(argv).cases
    cases = load_parallel_cases(path)
    base = score(cases)
    print(f"{path}: {figures([v[2] for v in base.values() if not v[1]])}")
    report("S1 Nemotron vocabulary 256,000", base,
           score(cases, change=lambda c, x: x.replace(vocab=256000) if "nemotron" in c.id else x))
    report("S2 vanilla-TP rows: tensor-parallel collectives not overlapped", base,
           score(cases, change=lambda c, x: x.replace(tp_overlap=False) if "vanilla" in c.id
                 else x))

    def torchao_fp8(c):
        return c.precision == "fp8" and "torchtitan" in c.source

    report("S3 torchao float8 casts with the amax unfused on the torchtitan fp8 rows", base,
           score(cases, cast=torchao_fp8))
    report("S2 + S3", base, score(
        cases, change=lambda c, x: x.replace(tp_overlap=False) if "vanilla" in c.id else x,
        cast=torchao_fp8))

    report("S5 torchtitan op-level selective checkpoint: every second matmul rerun", base,
           score_op_sac(cases))
    print("   (share of the weight-matmul FLOPs rerun: Llama 3 8B "
          f"{op_sac_share(next(c for c in cases if c.model.hidden == 4096)):.3f})")
    report("S2 + S3 + S5", base, score_op_sac(
        cases, change=lambda c, x: x.replace(tp_overlap=False) if "vanilla" in c.id else x,
        cast=torchao_fp8))
    public_tt = load_parallel_cases(validation_path("parallel_cases.json"))
    report("S5 on the public parallel_cases.json", score(public_tt), score_op_sac(public_tt))

    for share in (0.45, 0.35, 0.25):
        report(f"S6 llm-foundry H100 rows: attention core at {share} of the 16-bit peak", base,
               score(cases, attention=lambda c, share=share: share if (
                   "mosaicml/llm-foundry" in c.source and "H100" in c.hardware.gpu) else None))

    def october_2023_llmfoundry(c, x):
        full = c.layout.recompute == "full"
        return x.replace(recompute_early_stop=True) if (
            full and "mosaicml/llm-foundry" in c.source and "2023-10-19" in c.source) else x

    report("S7 checkpoint early stop on the October-2023 llm-foundry rows", base,
           score(cases, change=october_2023_llmfoundry))
    report("S6 (0.35) + S7", base, score(
        cases, change=october_2023_llmfoundry, attention=lambda c: 0.35 if (
            "mosaicml/llm-foundry" in c.source and "H100" in c.hardware.gpu) else None))
    public_lf = load_parallel_cases(validation_path("parallel_cases.json"))
    report("S6 at 0.35 on the public parallel_cases.json", score(public_lf), score(
        public_lf, attention=lambda c: 0.35 if ("mosaicml/llm-foundry" in c.source
                                                and "H100" in c.hardware.gpu) else None))

    def megatron_interleaved(c):
        return (("NVIDIA/NeMo" in c.source or "Megatron-Bridge" in c.source)
                and c.layout.schedule == "interleaved")

    report("S4 interleaved NeMo / Megatron-Bridge rows: pipeline sends overlapped", base,
           score(cases, hide_p2p=megatron_interleaved))
    public = load_parallel_cases(validation_path("parallel_cases.json"))
    report("S4 on the public parallel_cases.json", score(public),
           score(public, hide_p2p=megatron_interleaved))
    nemo_launcher_2407(cases, base)
    not_in_sweep = {"llmfoundry_h100_bf16_30b_s8192_8gpu", "llmfoundry_a100_bf16_30b_s8192_8gpu"}
    report("S9 early stop off for the 30B rows at 8K tokens that sweep.sh does not list", base,
           score(cases, change=lambda c, x: x.replace(recompute_early_stop=False)
                 if c.id in not_in_sweep else x))
    anchor_sensitivity(path)
    return 0


def nemo_launcher_2407(cases, base):
    """S8: the NeMo 24.07 rows under NeMo-Framework-Launcher 24.07's settings (docstring)."""
    def nemo(c):
        return c.group.startswith("nemo_2407")

    def flash2(c, x):
        return x.replace(attention_efficiency=FLASH2_ON_HOPPER_EFFICIENCY) if nemo(c) else x

    no_overlap = {"nemo2407_h100_gpt3_175b_128gpu", "nemo2407_h100_gpt3_175b_512gpu",
                  "nemo2407_h100_nemotron_340b"}

    def launcher_yaml(c, x):
        if c.id in no_overlap:
            x = x.replace(tp_overlap=False)
        if c.id == "nemo2407_h100_nemotron_340b":
            x = x.replace(recompute=RECOMPUTE["selective"])
        return x

    report("S8a NeMo 24.07: FlashAttention-2 (launcher NVTE_FUSED_ATTN: 0)", base,
           score(cases, change=flash2))
    report("S8b+c NeMo 24.07: launcher yamls' ub_tp_comm_overlap False (175B, 340B), 340B "
           "selective", base, score(cases, change=launcher_yaml))
    report("S8a+b+c", base, score(cases, change=lambda c, x: flash2(c, launcher_yaml(c, x))))


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
