"""The readable end-of-run summary: what was measured beside what was fitted."""

from __future__ import annotations

from scalesim.calibration.results import CollectiveResult, PhaseRecord

from scalesim.attention_kernel import ATTENTION_KERNELS, planner_kernel_of
from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.figures import bytes_text, latency_us, link_GBps
from scalesim.model import collectives as coll
from scalesim.model.compute import micro_step_s
from scalesim.schemas import BLOCK_NOT_USABLE, LAUNCH_BOUND


def compute_lines(record: PhaseRecord, words: Nouns = GPU_NOUNS) -> list[str]:
    r = record.parsed()
    c = r.curve
    lines = [
        f"compute: {r.model_name}, {r.params:,} params, {r.precision}, {r.optimizer}",
        f"  fit: {c.overhead_s * 1e3:.3f} ms + {c.per_sample_s * 1e3:.4f} ms/sample "
        f"(rel. RMSE {c.rel_rmse:.1%}); optimizer step {c.optimizer_step_s * 1e3:.3f} ms; "
        f"backward share {r.backward_fraction:.2f}",
        f"  {'batch':>6} {'fwd ms':>9} {'bwd ms':>9} {'f+b ms':>9} {'iqr ms':>8} {'fit ms':>9}",
    ]
    for p, f, b in zip(c.points, r.forward_s, r.backward_s, strict=False):
        fit = float(micro_step_s(p.micro_batch, c.overhead_s, c.per_sample_s))
        lines.append(
            f"  {p.micro_batch:>6} {f * 1e3:>9.3f} {b * 1e3:>9.3f} {p.time_s * 1e3:>9.3f} "
            f"{p.spread_s * 1e3:>8.3f} {fit * 1e3:>9.3f}"
        )
    if c.colocated_devices > 1:
        lines.append(f"  co-location: {words.count(c.colocated_devices)} of one {words.server} "
                     "computing at "
                     f"once take {c.colocation_slowdown:+.1%} longer than one alone (the points "
                     "above are with all busy)")
    lines.append("  ceiling: " + (f"micro-batch {r.oom_batch} ran out of memory"
                                  if r.oom_batch else "no out-of-memory in the sweep"))
    if c.attention_kernel:
        lines.append(f"  {attention_line(c.attention_kernel)}")
    return lines


def attention_line(family: str) -> str:
    """The attention kernel a phase's timings ran, in one line (attention_probe); the rate
    predictions price its core at is the planner's kernel's (``planner_kernel_of``: the
    memory-efficient kernel has no published rate and is priced as the vendor kernel)."""
    priced = planner_kernel_of(family)
    if priced == family:  # the other kernel may be asked of these timings (a swap)
        other = next(k for k in ATTENTION_KERNELS if k != family)
        rate = f"at its rate, and at the {other} kernel's where --attention-kernel {other} asks"
    else:
        rate = f"as the {priced} kernel's (it has no published rate of its own)"
    return (f"attention: SDPA ran the {family} kernel; predictions from this profile price "
            f"the attention core {rate} (docs/calibration.md, 'The attention kernel')")


def collective_lines(record: PhaseRecord, words: Nouns = GPU_NOUNS) -> list[str]:
    r: CollectiveResult = record.parsed()
    lines = []
    for cal, link in zip(r.links, (r.intra, r.inter), strict=False):
        if not cal.measured:
            lines.append(
                f"{cal.level}: {link_GBps(link.busbw_GBps)} busbw, "
                f"{latency_us(link.latency_s)} latency: {cal.note}"
            )
            continue
        lines.append(
            f"{cal.level}: {link.kind}, fit alpha {latency_us(link.latency_s)}, "
            f"busbw {link_GBps(link.busbw_GBps)} (all-reduce, rel. RMSE {cal.rel_rmse:.1%})"
        )
        if cal.method == "all_ranks":
            bound = (f"a lower bound: the ring ran at the {words.servers}' inside speed"
                     if cal.lower_bound else "the network limited that ring")
            lines.append(f"  timed with all {cal.ranks_per_node} ranks of every {words.server} in "
                         f"one ring; {bound}")
        lines.append(f"  {'op':<15} {'size':>10} {'ranks':>5} {'time us':>11} {'algbw':>8} "
                     f"{'busbw':>8} {'fit us':>11}")
        for p in cal.points:
            fit = r.fits.get(f"{cal.level}/{p.op}")
            t_fit = ""
            if fit:
                if p.op == "all_reduce":
                    t = coll.ring_allreduce_s(p.size_bytes, p.ranks, fit["latency_s"], fit["busbw_GBps"])
                else:
                    t = coll.ring_reduce_scatter_s(p.size_bytes, p.ranks, fit["latency_s"], fit["busbw_GBps"])
                t_fit = f"{float(t) * 1e6:>11.1f}"
            lines.append(
                f"  {p.op:<15} {bytes_text(p.size_bytes):>10} {p.ranks:>5} "
                f"{p.time_s * 1e6:>11.1f} {p.algbw_GBps:>8.3f} {p.busbw_GBps:>8.3f} "
                f"{t_fit}"
            )
    return lines


def loader_lines(record: PhaseRecord, words: Nouns = GPU_NOUNS) -> list[str]:
    r = record.parsed()
    lines = [f"loader: {r.dataset}, batch {r.batch_size}", f"  {'workers':>7} {'samples/s':>10}"]
    lines += [f"  {p.workers:>7} {p.samples_per_s:>10.1f}" for p in r.curve.points]
    return lines


def jitter_lines(record: PhaseRecord, words: Nouns = GPU_NOUNS) -> list[str]:
    r = record.parsed()
    j = r.jitter
    medians = ", ".join(f"{m * 1e3:.2f}" for m in j.per_rank_median_s)
    slow = (
        f"rank {j.slow_rank} is slow ({j.slow_factor:.2f}x the others)"
        if j.slow_rank is not None
        else "no consistently slow rank"
    )
    return [
        f"jitter: {r.steps} steps at micro-batch {r.micro_batch}: step-time CV "
        f"{j.step_time_cv:.3f}; per-rank median ms [{medians}]; {slow}",
        *(f"  {line}" for line in r.device_health),
    ]


def noise_lines(record: PhaseRecord, words: Nouns = GPU_NOUNS) -> list[str]:
    r = record.parsed()
    if r.noise is None:
        return [f"noise: {r.note}"]
    return [
        f"noise: B_simple = {r.noise.b_simple:.1f} samples (|G|^2 at {r.noise.small_batch}: "
        f"{r.small_sq_norm:.4g}, at {r.noise.big_batch}: {r.big_sq_norm:.4g})"
    ]


def block_not_usable_lines(profile, prog: str) -> list[str]:
    """A --block-hidden whose timings could not be fitted, said when the run ends (it was only in
    the profile's notes, found when plan refused the profile)."""
    return [f"{prog}: note: {n}" for n in profile.notes if n.startswith(BLOCK_NOT_USABLE)]


def model_parallel_lines(mp) -> list[str]:
    """The block at tensor-parallel shard shapes beside the fitted roofline, and the messages."""
    b = mp.block
    eff = (
        f", efficiency {mp.matmul_efficiency:.3f} of {mp.peak_tflops:g} TFLOP/s"
        if mp.matmul_efficiency is not None
        else ", no datasheet peak"
    )
    lines = [
        f"block ({b.module}): hidden {b.hidden}, heads {b.heads}, MLP {b.ffn_hidden}, seq "
        f"{b.seq_len}, batch {b.micro_batch}: sustained {mp.sustained_tflops * 1e3:.4g} "
        f"GFLOP/s, memory {mp.memory_bandwidth_GBps:.4g} GB/s{eff}; fit rel. RMSE "
        f"{mp.rel_rmse:.1%}",
        f"  {'tp':>3} {'fwd ms':>9} {'bwd ms':>9} {'total ms':>9} {'fit ms':>9}",
    ]
    if b.attention_kernel:
        lines.insert(1, f"  {attention_line(b.attention_kernel)}")
    if mp.above_peak(mp.peak_tflops):
        lines.insert(1, f"  warning: {LAUNCH_BOUND}")
    lines += [
        f"  {p.tp:>3} {p.forward_s * 1e3:>9.3f} {p.backward_s * 1e3:>9.3f} "
        f"{p.time_s * 1e3:>9.3f} {p.model_s * 1e3:>9.3f}"
        for p in mp.points
    ]
    if mp.messages:
        lines.append(
            f"  {'message':<15} {'for':<3} {'ranks':>5} {'size':>10} {'time us':>10} {'link model us':>13}"
        )
        lines += [
            f"  {m.op:<15} {m.purpose:<3} {m.ranks:>5} {bytes_text(m.size_bytes):>10} "
            f"{m.time_s * 1e6:>10.1f} {m.model_s * 1e6:>13.1f}"
            for m in mp.messages
        ]
    if mp.p2p_latency_s is not None and mp.p2p_bandwidth_GBps is not None:
        lines.append(
            f"  send/recv fit: {latency_us(mp.p2p_latency_s)} + S / "
            f"{link_GBps(mp.p2p_bandwidth_GBps)}: layout predictions on this profile charge "
            "pipeline sends inside a server with it (docs/model.md §15)"
        )
    return lines


RENDER = {
    "compute": compute_lines,
    "collectives": collective_lines,
    "loader": loader_lines,
    "jitter": jitter_lines,
    "noise": noise_lines,
}


def render(records: dict[str, PhaseRecord], reused: set[str], words: Nouns = GPU_NOUNS) -> str:
    """The summary of ``records``, in the words of the run's devices (``words``: processes on a
    host for a CPU run, ``device_nouns``)."""
    lines = []
    for phase, render_phase in RENDER.items():
        if phase not in records:
            continue
        rec = records[phase]
        how = "kept from an earlier run" if phase in reused else "measured now"
        lines.append(f"== {phase} ({rec.wall_s:.1f} s, {how})")
        lines += render_phase(rec, words)
    return "\n".join(lines)
