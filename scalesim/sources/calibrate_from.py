"""``scalesim calibrate --from-nccl-tests / --from-trace / --from-topo``: write or update a
profile from data the user already has, atomically, leaving every other part as it was.

The base is ``--base PROFILE``, else the ``--out`` file when it exists (updated in place), else
the built-in default profile (published presets; the profile says so). Each source replaces only
its own parts and records where they came from (``source`` fields and ``notes``):

- nccl-tests logs: the link levels they measured (``hardware.intra_node`` / ``inter_node`` and the
  ``links`` entries of those levels);
- traces: the compute curve, the optimizer step, the backward share, the step-time jitter (and, on
  a new profile, the server size and the gradient size the traces show);
- topology: ``hardware.topology`` (the server size is kept; a topology of another size is
  noted).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scalesim import presets
from scalesim.attention_kernel import most_named_family
from scalesim.billing import sizes_within
from scalesim.errors import ScalesimError, cut_at_word
from scalesim.figures import MIB_BYTES, count, latency_us, link_GBps, sig3, whole_percent
from scalesim.jsonio import write_model
from scalesim.model.compute import fit_compute_curve
from scalesim.model.stragglers import (
    SLOW_DEVICE_FACTOR,
    persistence_words,
    slowest_in_most_steps,
)
from scalesim.presets import same_device
from scalesim.profiles import (
    MAX_ORIGIN_CHARS,
    PRESET_LINKS,
    default_profile,
    load_profile,
    profile_from_presets,
    refuse_newer_profile_out,
)
from scalesim.schemas import (
    ComputeCurve,
    ComputePoint,
    Fingerprint,
    Jitter,
    Profile,
    Topology,
)
from scalesim.sources import nccl_tests, trace_compute
from scalesim.sources.trace_compute import BatchRun

PRESET_COMPUTE_NOTES = ("compute: ", "no fixed per-micro-step overhead is known for presets",
                        "compute from traces: ", "trace: ")


def base_profile(out: str | os.PathLike[str], base: str | None = None) -> tuple[Profile, bool, str]:
    """(profile to update, whether it is new from the presets, where it came from in words).
    ``base``: a profile file, or a hardware preset's name (``scalesim presets``; a file of that
    name wins) for a new profile of that hardware and the default workload."""
    if base is not None and base in presets.HARDWARE and not os.path.exists(base):
        return (profile_from_presets(presets.HARDWARE[base], default_profile().workload), True,
                new_profile_words(f"the hardware preset {base} (--base)"))
    if base is not None and not base.endswith(".json") and not os.path.exists(base):
        raise ScalesimError(f"--base {base}: no such profile file, nor a hardware preset: give "
                            f"a profile JSON file or one of {', '.join(presets.HARDWARE)}")
    if base is not None:
        return load_profile(base), False, f"updated from {base}"
    if os.path.exists(out):  # False for a name the OS refuses (too long): the writer says why
        return load_profile(out), False, f"updated in place ({out})"
    return default_profile(), True, new_profile_words(
        f"the built-in default presets ({presets.DEFAULT_HARDWARE})")


def new_profile_words(presets_words: str) -> str:
    """The report's first line for a new profile: the presets its unmeasured parts come from
    (``presets_words``: the --base preset, the default presets, or the preset of the GPU a
    source ran on, ``rebased_on_device``), so one line names them for every source."""
    return f"new profile: the parts no source here measured come from {presets_words}; see its notes"


def _names(paths) -> str:
    return ", ".join(Path(p).name for p in paths)


# Why a link level of an nccl-tests profile was not measured (``LinkCalibration
# .not_measured_because``): the logs' hosts set each log's level (``nccl_tests.LevelFit``).
NOT_IN_THE_LOGS = {"inter_node": "no nccl-tests log ran across servers",
                   "intra_node": "no nccl-tests log ran within one server"}


TRACES_TIME_NO_LINK = "profiler traces time compute, not the links"  # calibrate --from-trace


def said_why(links, why_by_level: dict[str, str], skip=()) -> list:
    """The profile's link records but those of the levels in ``skip``, each level a preset gave
    (``profiles.PRESET_LINKS``) told why the source at hand did not measure it
    (``why_by_level``): its numbers stay, and where they came from."""
    return [c.model_copy(update={"not_measured_because": why_by_level[c.level]})
            if not c.measured and c.not_measured_because == PRESET_LINKS
            and c.level in why_by_level else c
            for c in links if c.level not in skip]


def one_device(fits: dict[str, nccl_tests.LevelFit]) -> list[str]:
    """The GPU the logs' rank lines name, as a list of one (empty where no log lists ranks);
    ScalesimError where they name two that are not one device (``the_one_gpu``)."""
    return the_one_gpu([(d, r.path) for f in fits.values() for r in f.runs for d in r.devices],
                       "logs")


def the_one_gpu(named: list[tuple[str, str]], what: str) -> list[str]:
    """The GPU of (GPU name, file) pairs, as a list of one (empty where there are none), names
    that are one device (``presets.same_device``) counted once; ScalesimError where they are
    two or more: a profile describes one machine, and links or a compute curve from two would
    be taken for one's. ``what``: the files, as the error names them ('logs', 'traces')."""
    distinct: list[str] = []
    for d in sorted({d for d, _ in named}):
        if not any(same_device(d, seen) for seen in distinct):
            distinct.append(d)
    if len(distinct) > 1:
        where = "; ".join(
            f"{d} in {_names(dict.fromkeys(p for x, p in named if same_device(x, d)))}"
            for d in distinct)
        raise ScalesimError(f"the {what} ran on {len(distinct)} different GPUs ({where}): a "
                            f"profile describes one machine; calibrate each machine from its "
                            f"own {what}, each into its own --out")
    return distinct


def with_nccl_tests(profile: Profile, fits: dict[str, nccl_tests.LevelFit], fresh: bool,
                    chosen: str | None = None, traced: str | None = None
                    ) -> tuple[Profile, list[str], str | None]:
    """The profile with the link levels the logs measured; other levels and parts untouched.
    A new profile is rebased on the hardware preset of the logs' GPU (``rebased_on_device``;
    ``chosen``: the preset --base named, kept), or of ``traced``, the GPU traces of the same
    call ran on (``traced_gpu``), where the logs name none (a results table without its rank
    lines): the logs still choose among that GPU's presets. The inter level is derived given
    the final intra level (``intra_for_inter``). Returns (profile, report lines, the hardware
    preset the new profile was rebased on, else None)."""
    said: list[str] = []
    preset = None
    devices = one_device(fits)
    per_node = sorted({r.ranks // r.nodes for f in fits.values() for r in f.runs})
    gpu, what = ((devices[0], "the logs") if len(devices) == 1
                 else (traced, "the traces") if not devices and traced else (None, ""))
    if fresh and gpu is not None:
        networks = {r.network for f in fits.values() for r in f.runs} - {None}
        inter = fits.get("inter_node")
        profile, words, preset = rebased_on_device(
            profile, gpu, per_node[-1] if per_node else None,
            networks.pop() if len(networks) == 1 else None,
            inter.link.busbw_GBps if inter is not None else None, chosen=chosen, what=what)
        said += words
    if "inter_node" in fits:  # after the rebase: the intra level it is derived with is final
        fits = {**fits, "inter_node": nccl_tests.inter_as_modelled(
            fits["inter_node"], *intra_for_inter(fits, profile))}
    hw = profile.hardware
    changes: dict = {}
    for level, fit in fits.items():
        changes[level] = fit.link
        said.append(f"{level}: busbw {link_GBps(fit.link.busbw_GBps)}"
                    f"{' (a lower bound)' if fit.calibration.lower_bound else ''}, alpha "
                    f"{latency_us(fit.link.latency_s)}"
                    f"{' per server-boundary hop' if fit.calibration.method == 'all_ranks' else ''}"
                    f" (rel. RMSE {fit.calibration.rel_rmse:.1%}) "
                    f"from {_names(r.path for r in fit.runs)}")
    if fresh and per_node:
        changes["devices_per_node"] = per_node[-1]
        changes["instance_sizes"] = sizes_within(hw.instance_sizes, per_node[-1])
        if len(devices) == 1 and same_device(devices[0], hw.device_name):
            changes["device_name"] = devices[0]
        changes["name"] = f"{devices[0] if devices else 'servers'} x{per_node[-1]} (nccl-tests)"
    elif per_node and per_node[-1] != hw.devices_per_node:
        said.append(f"the logs ran {per_node[-1]} ranks per server, the profile has "
                    f"{count(hw.devices_per_node, 'device')} per server (kept)")
    if not fresh and len(devices) == 1 and not same_device(devices[0], hw.device_name):
        # as --from-trace says of traces of another GPU: the links are not this device's
        said.append(f"the logs ran on {devices[0]}, the profile's device is {hw.device_name}: "
                    "these links are that GPU's servers', the rest of the profile another "
                    "machine's (run nccl-tests on the machine the profile describes)")
    if "inter_node" not in fits:
        said.append("inter-server link not measured by these logs (one server each); it stays: "
                    f"{cut_at_word(hw.inter_node.source, MAX_ORIGIN_CHARS)}")
    links = said_why(profile.links, NOT_IN_THE_LOGS, skip=fits)
    links += [f.calibration for f in fits.values()]
    links.sort(key=lambda c: c.level != "intra_node")
    notes = list(profile.notes) + [f"links from nccl-tests: {s}" for s in said]
    update = {"hardware": hw.model_copy(update=changes), "links": links, "notes": notes}
    if fresh:  # where the logs ran (a profile that existed keeps its own calibration's)
        runs = [r for f in fits.values() for r in f.runs]
        update["fingerprint"] = Fingerprint(
            device_name=changes.get("device_name", hw.device_name),
            device_count=max(r.ranks for r in runs), nodes=max(r.nodes for r in runs),
            backend="nccl (nccl-tests)",
            hostnames=list(dict.fromkeys(h for r in runs for h in r.hosts)),
            date_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return profile.model_copy(update=update), said, preset


def intra_for_inter(fits: dict[str, nccl_tests.LevelFit], profile: Profile
                    ) -> tuple[dict[str, float], str]:
    """(latency_s and busbw_GBps of the intra level, where they came from in words) that the
    inter level of these logs is derived with (``nccl_tests.inter_as_modelled``): the fit of a
    one-server log of the same op, else of its first op, as calibrate uses its own intra
    sweep; else the profile's intra level (its source said)."""
    intra = fits.get("intra_node")
    if intra is not None:
        from scalesim.calibration.link_fit import level_op

        op = level_op(fits["inter_node"].fits)
        fit = intra.level_terms(op if op in intra.fits else next(iter(intra.fits)))
        return fit, f"intra alpha from {_names(r.path for r in intra.runs)}"
    link = profile.hardware.intra_node
    return ({"latency_s": link.latency_s, "busbw_GBps": link.busbw_GBps},
            "intra alpha the profile's, no one-server log given: "
            + cut_at_word(link.source, MAX_ORIGIN_CHARS))


def presets_of_device(device: str) -> list[str]:
    """The hardware presets whose GPU is ``device`` (``presets.same_device``), in table order."""
    return [name for name, h in presets.HARDWARE.items() if same_device(h.device_name, device)]


def preset_for_logs(device: str, per_node: int | None = None, network: str | None = None,
                    inter_busbw_GBps: float | None = None) -> tuple[str | None, list[str],
                                                                     list[str]]:
    """(preset, what in the logs chose it, the presets with that GPU the logs do not tell
    apart from it) among the hardware presets whose GPU is ``device``
    (``presets.same_device``), narrowed in turn by the logs' GPUs per server ``per_node``, then
    by their measured inter-server busbw (the nearest preset's, on a log scale), else by
    NCCL's transport ``network`` (a preset inter-server kind: ``nccl_tests.NETWORK_KINDS``);
    the first left is taken. (None, [], []) when no preset has that GPU."""
    pool = presets_of_device(device)
    why: list[str] = []
    if not pool:
        return None, [], []
    hw = presets.HARDWARE
    if per_node is not None and 0 < len(same := [n for n in pool if hw[n].devices_per_node
                                                 == per_node]) < len(pool):
        pool, why = same, why + [f"{per_node} GPUs per server"]
    if inter_busbw_GBps is not None and len(pool) > 1:
        gap = {n: abs(np.log(hw[n].inter_node.busbw_GBps / inter_busbw_GBps)) for n in pool}
        pool = [n for n in pool if gap[n] == min(gap.values())]
        why.append(f"an inter-server busbw ({link_GBps(hw[pool[0]].inter_node.busbw_GBps)}) "
                   f"nearest the logs' {sig3(inter_busbw_GBps)}")
    elif network is not None and 0 < len(same := [n for n in pool if hw[n].inter_node.kind
                                                  == network]) < len(pool):
        pool, why = same, why + [f"{network} between servers, as NCCL's transport in the logs"]
    return pool[0], why, pool[1:]


def rebased_on_device(profile: Profile, device: str, per_node: int | None = None,
                      network: str | None = None, inter_busbw_GBps: float | None = None,
                      chosen: str | None = None, what: str = "the logs"
                      ) -> tuple[Profile, list[str], str | None]:
    """A new profile's presets for the GPU the logs ran on: ``profile`` where its device is
    that GPU (``presets.same_device``); else the hardware preset of that GPU the logs point to
    (``preset_for_logs``: their GPUs per server ``per_node``, NCCL transport ``network``,
    measured inter-server busbw), with the same workload (its peak, memory, price and compute
    estimate are that GPU's, not the default's); else ``profile`` unchanged and a note that its
    device stays the presets' (the logs' name is not given to numbers of another GPU). The note
    names the preset taken, why, and how to take another (--base PRESET). ``chosen``: the
    preset --base named: kept where its GPU is the logs' (said, with the others of that GPU),
    refused where it is not. ``what``: the files, as the words name them ('the logs', 'the
    traces'). Returns (profile, words, the preset's name where it was rebased on one)."""
    hw = profile.hardware
    name, why, others = preset_for_logs(device, per_node, network, inter_busbw_GBps)
    if chosen is not None:
        if not same_device(device, hw.device_name):
            raise ScalesimError(
                f"--base {chosen}: its GPU is {hw.device_name}, {what} ran on {device}; give "
                + (f"a preset of that GPU ({', '.join([name, *others])})" if name else
                   "a profile calibrated on that GPU") + " or drop --base")
        return profile, [], None
    if same_device(device, hw.device_name):
        return profile, [], None
    if name is None:
        kept = "peak and memory" if what == "the traces" else "peak, memory and compute"
        return profile, [f"{what} ran on {device}, which no hardware preset lists: this new "
                         f"profile's device, {kept} stay the default "
                         f"presets' {hw.device_name} (give --base a profile calibrated on "
                         f"{device})"], None  # the traces measure the compute, not the default
    preset = presets.HARDWARE[name]
    rebased = profile_from_presets(preset, profile.workload)
    choice = (f", chosen for {' and '.join(why)}" if why else "") + (
        f"; {what} do not tell it from {', '.join(others)}, which {'has' if len(others) == 1 else 'have'} "
        f"that GPU too: the first listed is taken" if others else "")
    every = presets_of_device(device)
    another = (f"; to start from another, give --base {' or --base '.join(n for n in every if n != name)}"
               if len(every) > 1 else "")
    return rebased, [f"{what} ran on {device}: the parts they do not measure come from the "
                     f"hardware preset {name} ({preset.device_name}, {preset.devices_per_node} "
                     f"per server, inter-server {preset.inter_node.kind} "
                     f"{link_GBps(preset.inter_node.busbw_GBps)} busbw{choice}), not the default's "
                     f"{hw.device_name}{another}"], name


def compute_curve(runs: list[BatchRun], base: ComputeCurve) -> tuple[ComputeCurve, str]:
    """The compute curve the traced runs pin (one point per micro-batch)."""
    points = [ComputePoint(micro_batch=r.micro_batch, time_s=max(r.fwd_bwd_s, 1e-9),
                           spread_s=r.spread_s, repeats=max(r.steps, 1)) for r in runs]
    files = sum(len(r.ranks) for r in runs)
    if len(points) >= 2:
        overhead, per_sample, rmse = fit_compute_curve([p.micro_batch for p in points],
                                                       [p.time_s for p in points])
        how = (f"fitted overhead + per-sample time to {len(points)} micro-batches "
               f"(rel. RMSE {rmse:.1%})")
    else:
        p = points[0]
        overhead, per_sample, rmse = 0.0, p.time_s / p.micro_batch, None
        how = (f"ONE micro-batch ({p.micro_batch}): a line through the origin and that point "
               "(no fixed per-step overhead known; trace two or more batch sizes to fit it)")
    hosts = [sum(1 for x in r.ranks if x.summary.host == h) for r in runs
             for h in {x.summary.host for x in r.ranks}]
    opt = float(np.median([r.optimizer_s for r in runs]))
    source = (f"torch.profiler traces ({files} files): forward+backward per micro-step = (step - "
              "exposed communication - data wait - optimizer) / the micro-steps a step the "
              "traces show, median over ranks and steps; " + how)
    # the attention kernel the traced job ran (the family most ranks' kernels name, as
    # diagnose reads it): its timings price the attention core at that kernel's rate
    kernel = most_named_family(x.summary.attention_family for r in runs for x in r.ranks)
    curve = ComputeCurve(
        overhead_s=overhead, per_sample_s=max(per_sample, 1e-12), optimizer_step_s=opt,
        rel_rmse=rmse, points=points, colocated_devices=max(hosts or [1]),
        colocation_slowdown=0.0, precision=base.precision if base.measured else "as traced",
        measured=True, attention_kernel=kernel,
        source=source + (f"; attention kernel: {kernel} (the traces' kernels)" if kernel else ""))
    return curve, how


def _jitter(run: BatchRun) -> Jitter:
    cr = run.cross
    per_rank = [float(np.median([s.step_s for s in r.summary.steps])) for r in run.ranks]
    persistent = slowest_in_most_steps(cr["slowest_counts"].get(cr["slowest_rank"], 0),
                                       cr["steps_compared"], len(run.ranks))
    slow = (cr["slowest_rank"] if persistent and cr["slowest_factor"] >= SLOW_DEVICE_FACTOR
            else None)
    return Jitter(step_time_cv=run.step_cv(), per_rank_median_s=per_rank, slow_rank=slow,
                  slow_factor=max(float(cr["slowest_factor"]), 1.0) if slow is not None else 1.0)


def describe_run(run: BatchRun) -> list[str]:
    """What one traced run says, in lines (the CLI prints them, the profile keeps them)."""
    cr = run.cross
    micro_steps, how = run.micro_steps()
    out = [f"micro-batch {run.micro_batch}, {len(run.ranks)} rank(s), {run.steps} rank-steps: "
           f"step {cr['step_s'] * 1e3:.3g} ms, forward+backward {run.fwd_bwd_s * 1e3:.3g} ms "
           f"a micro-step, optimizer {run.optimizer_s * 1e3:.3g} ms, data-loader wait "
           f"{cr['data_wait_s'] * 1e3:.3g} ms, exposed communication "
           f"{(cr['step_s'] - np.median(cr['own_s'])) * 1e3:.3g} ms",
           f"  {how}" + ("" if micro_steps is not None else
                         f"; if the job accumulates gradients over k micro-steps of "
                         f"{run.micro_batch}, this forward+backward is k of them")]
    share = run.backward_fraction
    out.append("  backward share of forward+backward: "
               + (f"{share:.3f}" if share is not None else "not found (no autograd events)"))
    if any(r.summary.device == "gpu" and not r.matched_gpu for r in run.ranks):
        out.append("  GPU kernels could not be matched to their launches (no 'correlation' "
                   "ids): backward and optimizer not separated from forward")
    for op, c in run.comm().items():
        size = ""
        if c.bytes is not None:
            size = (f", {c.bytes / MIB_BYTES:.4g} MiB per step in "
                    f"{len(c.sizes)} distinct message size(s) "
                    f"{'/'.join(f'{s / MIB_BYTES:.4g}' for s in c.sizes[:4])} MiB")
        calls = "call" if c.count == 1 else "calls"
        if c.count == 0 and size:  # sized by the host's posts, but nothing of it timed
            out.append(f"  {op}: no call timed inside the traced steps{size}, as its host's "
                       "posts record them")
            continue
        out.append(f"  {op}: {c.count:g} {calls}, {c.time_s * 1e3:.3g} ms per step{size}")
    if rebuild := run.bucket_rebuild_calls():
        out.append(f"  left out: {count(rebuild, 'broadcast')} of 32-bit integers, DDP's bucket "
                   "rebuild (once in a job: rank 0 sends the rebuilt buckets' parameter indices "
                   "in the first forward after the first backward), no per-step communication")
    if not run.comm():
        out.append("  no communication in the steps (one process, or no NCCL/gloo events)")
    elif all(c.bytes is None for c in run.comm().values()):
        out.append("  message sizes not in the traces (record with record_shapes=True, or a "
                   "PyTorch whose NCCL kernels carry sizes)")
    if len(run.ranks) > 1:
        words = persistence_words(cr["slowest_counts"].get(cr["slowest_rank"], 0),
                                  cr["steps_compared"], len(run.ranks))
        out.append(f"  per-rank step spread: slowest rank {cr['slowest_rank']} "
                   f"({cr['slowest_factor']:.2f}x the others' own time, {words}); "
                   f"step-time cv {run.step_cv():.3f}")
    return out


def traced_gpu(runs: list[BatchRun]) -> str | None:
    """The GPU the traces' kernels ran on (their ``deviceProperties`` name, as diagnose reads
    it); None where no GPU trace names one. ScalesimError where they name two that are not one
    device (``the_one_gpu``), as for nccl-tests logs: one compute curve fitted to two GPUs'
    steps is neither's."""
    gpus = the_one_gpu([(x.summary.device_name, x.summary.path) for r in runs for x in r.ranks
                        if x.summary.device == "gpu" and x.summary.device_name], "traces")
    return gpus[0] if gpus else None


# an existing profile's parameter count and the gradient elements traces all-reduce a step within
# this share of it read as one model (DDP all-reduces the trainable parameters: frozen ones and
# buffers are not in its buckets); the count is kept either way
SAME_MODEL_SHARE = 0.2


def params_kept(params: float, traced: float) -> list[str]:
    """The line an existing profile's parameter count ``params``, kept, gets where the traces
    all-reduce another count of gradient elements a step (``traced``): both counts and the rule
    (``SAME_MODEL_SHARE``); none where the two are one whole number."""
    if round(traced) == round(params):
        return []
    share = traced / params - 1.0
    apart = f"{sig3(100.0 * abs(share))}% {'more' if share > 0 else 'fewer'}"
    rule = (f"within {whole_percent(SAME_MODEL_SHARE)}: read as the same model"
            if abs(share) <= SAME_MODEL_SHARE else
            f"over {whole_percent(SAME_MODEL_SHARE)}: another model, or parts of it not trained")
    return [f"parameters: kept the profile's {params:,.0f}; the traces all-reduce {traced:,.0f} "
            f"gradient elements a step, {apart} ({rule}); only a new profile takes the traces' "
            "count (--out a new file, or --base PRESET)"]


def with_traces(profile: Profile, runs: list[BatchRun], fresh: bool, set_server: bool | None = None,
                chosen: str | None = None) -> tuple[Profile, list[str], str | None]:
    """The profile with the traced compute curve, optimizer, backward share and jitter; on a new
    profile (``fresh``) also the gradient size, and the server size unless ``set_server`` is
    False (nccl-tests logs of the same call describe the server instead). A new profile whose
    server nccl-tests logs did not describe (``set_server`` not False) is first rebased on the
    hardware preset of the traces' GPU (``traced_gpu``, ``rebased_on_device``; ``chosen``: the
    preset --base named, kept where its GPU is the traces'). Returns (profile, report lines,
    the preset rebased on, else None)."""
    said: list[str] = []
    preset = None
    device = traced_gpu(runs)
    if fresh and set_server is not False and device is not None:
        profile, words, preset = rebased_on_device(profile, device, chosen=chosen,
                                                   what="the traces")
        said += words
    elif (fresh and set_server is not False and chosen is None
          and any(x.summary.device == "gpu" for r in runs for x in r.ranks)):
        said.append(f"the traces do not name their GPU (no deviceProperties): this new "
                    f"profile's device, peak and memory stay the default presets' "
                    f"{profile.hardware.device_name} (give --base the hardware preset of the GPU "
                    "that ran them: scalesim presets)")
    elif device is not None and not same_device(device, profile.hardware.device_name):
        said.append(f"the traces ran on {device}, the profile's device is "
                    f"{profile.hardware.device_name}: their compute is that GPU's, the rest "
                    "of the profile another's (trace the GPU the profile describes)")
    curve, how = compute_curve(runs, profile.compute)
    said += [line for r in runs for line in describe_run(r)]
    wl_changes: dict = {"micro_batch": max(r.micro_batch for r in runs)}
    shares = [r.backward_fraction for r in runs if r.backward_fraction is not None]
    if shares:
        wl_changes["backward_fraction"] = float(np.median(shares))
    big = max(runs, key=lambda r: (len(r.ranks), r.micro_batch))
    comm = big.comm()
    hw_changes: dict = {}
    if fresh and (set_server is None or set_server):
        hw_changes["devices_per_node"] = curve.colocated_devices
        hw_changes["instance_sizes"] = sizes_within(profile.hardware.instance_sizes,
                                                    curve.colocated_devices)
    if fresh:
        ar = comm.get("all_reduce")
        if ar and ar.bytes and ar.element_bytes and set(comm) <= {"all_reduce", "broadcast",
                                                                  "barrier"}:
            params = ar.bytes / ar.element_bytes
            wl_changes.update(params=params, wire_bytes_per_param=float(ar.element_bytes),
                              name="traced job")
            said.append(f"gradients: {params:,.0f} elements of {ar.element_bytes} bytes "
                        "all-reduced per step (DDP), taken as the model's parameters")
    wl = profile.workload
    wl_changes["source"] = (wl.source + "; " if wl.source else "") + (
        f"micro-batch and backward share from torch.profiler traces "
        f"({sum(len(r.ranks) for r in runs)} files)")
    ar = comm.get("all_reduce")
    if not fresh and ar and ar.bytes and ar.element_bytes:
        said += params_kept(profile.workload.params, ar.bytes / ar.element_bytes)
    if fresh and all(x.summary.device == "cpu" for r in runs for x in r.ranks):
        said.append(f"the traces ran on the CPU (no GPU kernel in any step), and this new "
                    f"profile's hardware is the presets' {profile.hardware.device_name}: its "
                    "name, memory and links are not those of the machine that ran them (give "
                    "--base a profile calibrated there, e.g. scalesim calibrate --device cpu)")
    # Notes the presets wrote about the compute they estimated no longer apply.
    kept = [n for n in profile.notes if not n.startswith(PRESET_COMPUTE_NOTES)]
    notes = kept + [f"compute from traces: {how}"] + [f"trace: {s.strip()}" for s in said]
    update = {"compute": curve, "workload": wl.model_copy(update=wl_changes), "notes": notes,
              "jitter": _jitter(big),
              "links": said_why(profile.links, dict.fromkeys(NOT_IN_THE_LOGS,
                                                             TRACES_TIME_NO_LINK))}
    if hw_changes:
        update["hardware"] = profile.hardware.model_copy(update=hw_changes)
    return profile.model_copy(update=update), said, preset


# how to replace a preset's intra-server link with this server's own (with_topology's notes)
MEASURE_INTRA = "measure it with scalesim calibrate, or nccl-tests (--from-nccl-tests intra=FILE)"


def with_topology(profile: Profile, topo: Topology) -> tuple[Profile, list[str]]:
    """The profile with the server's topology (``hardware.topology``); its server size is kept,
    as nccl-tests logs of another size keep it: a topology describes the server, and the
    profile's numbers were measured on its own count (a one-GPU calibration on an 8-GPU server
    records the 8-GPU topology too). A count that differs is said, with both numbers."""
    hw = profile.hardware.model_copy(update={"topology": topo})
    notes = [f"topology from {topo.source}: {topo.intra_kind}"]
    said = []
    gpus, per_server = len(topo.gpus), profile.hardware.devices_per_node
    links = profile.links
    intra_measured = any(c.measured for c in links if c.level == "intra_node")
    suggested = topo.suggested_intra_preset
    if not intra_measured and gpus > 1 and suggested and suggested != hw.intra_node.kind:
        # a preset's figures for a link this server does not have (an NVSwitch A100's 230 GB/s
        # on a PCIe box) would be predicted in silence: take those of the link it shows
        link = presets.intra_link(suggested)
        why = (f"the topology's intra-server link ({suggested}); was {hw.intra_node.kind}'s "
               f"{link_GBps(hw.intra_node.busbw_GBps)}, a preset's, not this server's")
        hw = hw.model_copy(update={"intra_node": link})
        links = [c.model_copy(update={"numbers_from": f"preset {suggested}: {link.source}",
                                      "note": f"preset {suggested} from {why}"})
                 if c.level == "intra_node" else c for c in links]
        said.append(f"intra-server link: preset {suggested}'s figures "
                    f"({link_GBps(link.busbw_GBps)} busbw), from {why}; {MEASURE_INTRA}")
    elif not intra_measured and gpus > 1 and not suggested:
        said.append(f"intra-server link: {hw.intra_node.kind}'s preset figures "
                    f"({link_GBps(hw.intra_node.busbw_GBps)} busbw) kept, not this server's: "
                    f"the topology names no preset; {MEASURE_INTRA}")
    if gpus == 1 and per_server > 1:  # no pair, so no link: nothing is divided by gpus - 1
        said.append(f"the topology shows 1 GPU in a server, which has no intra-server link; "
                    f"the profile has {count(per_server, 'device')} per server (kept: its "
                    "intra-server link is a link this server does not have; predict with "
                    "--gpus-per-node 1 to model servers of this one GPU)")
    elif gpus != per_server:
        said.append(f"the topology shows {count(gpus, 'GPU')} in a server, the profile has "
                    f"{count(per_server, 'device')} per server (kept: its numbers are "
                    f"for servers of {per_server}; calibrate on {count(gpus, 'GPU')} to model "
                    "the whole server)")
    update = {"hardware": hw, "links": links, "notes": [*profile.notes, *notes, *said]}
    return profile.model_copy(update=update), said


def parts_a_measurement_drops(old: Profile, new: Profile) -> list[str]:
    """What ``old`` (an ``--out`` that exists) measured, or took from --from-nccl-tests /
    --from-topo, that ``new``, a measured profile written over it, has not measured itself:
    link levels measured there (by nccl-tests logs or an earlier calibration) where ``new``'s
    are presets' numbers, and a topology where ``new`` has none. A measurement writes a new
    profile and reads none, so these are lost unless said."""
    lost = []
    measured_now = {c.level for c in new.links if c.measured}
    for c in old.links:
        if c.measured and c.level not in measured_now:
            hw = getattr(old.hardware, c.level)
            lost.append(f"its {c.level} link measured ({link_GBps(hw.busbw_GBps)} busbw; this "
                        f"run: {link_GBps(getattr(new.hardware, c.level).busbw_GBps)}, not "
                        "measured)")
    if old.hardware.topology is not None and new.hardware.topology is None:
        lost.append(f"its topology ({old.hardware.topology.intra_kind}, from "
                    f"{old.hardware.topology.source})")
    return lost


def calibrate_from_sources(out: str | os.PathLike[str], nccl_tests_files=(), traces=(),
                           micro_batch: int | None = None, topo_file: str | None = None,
                           base: str | None = None, name: str | None = None,
                           write: bool = True) -> tuple[Profile, list[str]]:
    """The Python API of ``calibrate --from-...``: (profile, report lines); writes ``out``
    atomically when ``write``. ``traces``: ``B=FILE`` or ``FILE`` with ``micro_batch``."""
    if not nccl_tests_files and not traces and topo_file is None:
        raise ScalesimError("give --from-nccl-tests FILE..., --from-trace FILE... or --from-topo "
                            "FILE")
    # Read every input before touching anything: a bad file leaves the profile as it was.
    fits = nccl_tests.fit_runs(nccl_tests.load_runs(nccl_tests_files)) if nccl_tests_files else {}
    runs = trace_compute.read_runs(trace_compute.parse_entries(list(traces), micro_batch)) \
        if traces else []
    topo = None
    if topo_file is not None:
        from scalesim.sources.nvidia_smi import parse_topo_file

        topo = parse_topo_file(topo_file)
    if write and base is not None:  # else a newer --out is read as the base, and refused so
        refuse_newer_profile_out(out)
    profile, fresh, origin = base_profile(out, base)
    report = [origin]
    preset = traced_preset = None
    if fits:
        profile, said, preset = with_nccl_tests(profile, fits, fresh,
                                        chosen=base if fresh and base is not None else None,
                                        traced=traced_gpu(runs) if runs else None)
        report += ["links from nccl-tests:"] + [f"  {s}" for s in said]
        for f in fits.values():
            report += [f"  note: {n}" for r in f.runs for n in r.notes]
    if runs:
        profile, said, traced_preset = with_traces(profile, runs, fresh, set_server=not fits,
                                    chosen=base if fresh and base is not None else None)
        report += ["compute from traces:"] + [f"  {s}" for s in said]
        for r in runs:
            report += [f"  note: {n}" for x in r.ranks for n in x.summary.notes]
    if fresh and base is None and (preset or traced_preset):  # rebased on a source's GPU
        report[0] = new_profile_words(
            f"the hardware preset {preset or traced_preset}, of the GPU the "
            f"{'logs' if preset else 'traces'} ran on")
    if topo is not None:
        profile, said = with_topology(profile, topo)
        report.append(f"topology: {topo.intra_kind}")
        report += [f"  note: {n}" for n in said]
    if name:
        profile = profile.model_copy(update={"name": name})
    elif fresh:  # what came from the user's files, not the workload's name (still the preset's)
        parts = (["links from your nccl-tests logs"] * bool(fits)
                 + ["compute from your traces"] * bool(runs)
                 + ["topology from your nvidia-smi topo -m"] * (topo is not None))
        profile = profile.model_copy(update={"name": f"{profile.hardware.name} + "
                                             f"{profile.workload.name} ({'; '.join(parts)})"})
    if write:
        write_model(out, profile)
    return profile, report


def run_from_sources(args) -> int:
    """The CLI path (``scalesim calibrate --from-...``)."""
    _, report = calibrate_from_sources(
        args.out, args.from_nccl_tests or (), args.from_trace or (), args.micro_batch,
        args.from_topo, args.base, args.name)
    print("\n".join(report))
    print(f"profile written to {args.out}; try: scalesim predict --profile {args.out} "
          "--devices 1,2,4,8,16")
    return 0
