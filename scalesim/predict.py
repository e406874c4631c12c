"""From a profile and a scenario to prediction rows: the public prediction API.

``scenario_inputs`` turns the pydantic edge types into the model's arrays (and checks them);
``predict`` evaluates one row per device count. Both raise ScalesimError on bad input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
from pydantic import BaseModel

from scalesim.bounds import KNOB_BY_FIELD, check_values
from scalesim.counts_left_out import callers_words
from scalesim.device_nouns import GPU_NOUNS, Nouns, hardware_nouns
from scalesim.errors import KNOB, Refusal, ScalesimError, require_model, within
from scalesim.figures import MIB_BYTES, count_list, either, link_GBps, sig3
from scalesim.layout import (
    SCHEDULES,
    count_problem,
    dp_ranks,
    knob_refusal,
    replica_devices,
    runs_on_count,
    shape_heads,
    tp_server_refusal,
    unused_settings,
)
from scalesim.model import collectives as coll
from scalesim.model.compute import colocation_factor, colocation_slope
from scalesim.model.memory import STRATEGIES
from scalesim.model.pipeline import loader_supply_per_device
from scalesim.model.quality import samples_to_quality
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.model.step import StepInputs, evaluate_scaling
from scalesim.presets import partial_server_inter_busbw_GBps
from scalesim.profiles import device_bandwidth_GBps
from scalesim.schemas import Hardware, LinkLevel, Profile, Scenario
from scalesim.training_time import resolve_goal, run_time_s, whole_steps


class Prediction(BaseModel):
    """One predicted row: a device count under one scenario. Times in seconds per step."""

    devices: int
    nodes: int
    devices_per_node: int
    micro_batch: int  # samples per device per micro-step (a split model: per replica)
    accumulation: int  # micro-steps per optimizer step
    global_batch: int  # samples per optimizer step
    step_time_s: float
    compute_s: float
    exposed_comm_s: float
    # seconds a step waits on its input; None where no input pipeline was measured or described
    # (``input_pipeline_modelled``): the model's loader is then infinitely fast, so its 0 would
    # read as "the loader keeps up", a number nobody checked (null in --json)
    data_stall_s: float | None
    straggler_s: float
    # all collective time, hidden or not; None for a split model (dp not None: the layout step
    # reports the exposed time alone): null in --json, not the exposed time again
    comm_total_s: float | None
    # bytes each device sends per step; None for a split model (the layout step times its
    # collectives but does not total their bytes): null in --json, never a made-up 0
    comm_bytes: float | None
    samples_per_s: float
    speedup: float  # throughput over one device's (ratio)
    efficiency: float  # speedup / devices (fraction, 1 = linear)
    memory_bytes: float
    fits: bool
    # whether the one-device run speedup and efficiency are against fits in device memory (the
    # model's fits, as ``fits``); where not, they are against a run that cannot happen (§10)
    one_device_fits: bool = True
    # samples per micro-step of that one-device run (§7): the micro-batch under weak scaling,
    # the global batch over the accumulation steps under strong scaling; None: not said
    one_device_micro_batch: int | None = None
    # whether one device holds the model at one sample per micro-step: where it does and
    # one_device_fits is False, one device cannot hold the baseline's micro-batch, not the model
    one_device_holds_model: bool = True
    steps_to_quality: float | None = None  # whole optimizer steps (docs/model.md §8, §9)
    time_to_quality_s: float | None = None
    time_to_train_s: float | None = None
    cost_usd: float | None = None  # time x billed_devices x price per device-hour
    billed_devices: int | None = None  # devices a cloud bills: whole instances (billing.py)
    # the model split (``Scenario.layout``; a transformer workload predicts through
    # ``evaluate_layouts``): dp x tp x pp x cp = devices; micro_batch is then per replica
    dp: int | None = None  # None: data parallel over all devices (parameter-count workload)
    tp: int = 1
    pp: int = 1
    cp: int = 1  # context-parallel degree: ranks that split each sequence (ring attention)
    # pipeline fill and drain, idle (a part of step_time_s): the layout's schedule, or the
    # pipelined replica of a workload fitted from runs (``pipeline_bubble_micro_steps``)
    bubble_s: float = 0.0
    tp_comm_s: float = 0.0  # tensor-parallel collectives (in exposed_comm_s)
    cp_comm_s: float = 0.0  # context-parallel (ring attention) exchanges (in exposed_comm_s)
    pipeline_comm_s: float = 0.0  # pipeline point-to-point sends (in exposed_comm_s)
    tokens_per_s: float | None = None
    mfu: float | None = None  # model FLOPs utilisation (None when the peak is not known)
    # the layers' matmul precision of a transformer's rows (``Scenario.precision``: mfu is
    # against its peak, fp8's in fp8); None for a parameter count, which has no matmuls to run
    precision: str | None = None
    # ranks that shard the ZeRO states: the shard group under hybrid sharding (HSDP,
    # --shard-group; all dp ranks where dp is within it), else every data-parallel rank; None
    # without sharding (DDP)
    shard_group: int | None = None
    # layers on each pipeline rank, the words on its stages where the model's are uneven, and
    # the words a user must know of them (torchtitan's differing split too)
    # (``pipeline_stages.stage_fields``, as plan's rows); None where no transformer shape is
    # known (a parameter-count workload) or there is nothing to say
    layers_per_stage: list[int] | None = None
    uneven_stages: str | None = None
    stage_notes: str | None = None


def one_device_note(rows: list[Prediction], words: Nouns = GPU_NOUNS) -> str | None:
    """Where the one-device run speed-up and efficiency are against does not fit in memory
    (``Prediction.one_device_fits``), a clause saying so and what one device cannot hold: the
    model (``one_device_holds_model`` False: not even one sample per micro-step fits), else the
    run's ``one_device_micro_batch`` samples per micro-step (under strong scaling the global
    batch over the accumulation steps, which the baseline runs without accumulating more:
    docs/model.md §7); None where it fits. ``words``: the devices' nouns ('one process' on a CPU
    calibration)."""
    short = [r for r in rows if not r.one_device_fits]
    if not short:
        return None
    one = f"one {words.device}"
    against = (f"speed-up, efficiency and 'Nx {one}' are against the model's hypothetical "
               f"one-{words.device} run")
    r = short[0]
    b = r.one_device_micro_batch
    if b is None or not all(s.one_device_holds_model for s in short):
        return f"{one} cannot hold the model: {against} (docs/model.md §10)"
    batch = ""
    if b * r.accumulation == r.global_batch:  # strong scaling (or one replica): its global batch
        batch = (f", the global batch of {r.global_batch:,} " + (
            "in one step" if r.accumulation == 1 else
            f"over {r.accumulation} accumulation steps"))
    return (f"{one} holds the model but not {b:,} samples per micro-step{batch}: {against} at "
            "that micro-batch, not one that accumulates smaller ones (docs/model.md §7, §10)")


def above_linear_note(rows: list[Prediction], words: Nouns = GPU_NOUNS) -> str | None:
    """Where a row's efficiency is above 100 %, why, at the highest (predict's note, the app's
    headline): the work sharding removes from each device, the optimizer step one device runs
    whole for the whole model (ZeRO over its shard group, ``Prediction.shard_group``; a tp x pp
    split's slice of the parameters), docs/model.md §7; None where no row is above 100 %."""
    over = [r for r in rows if r.efficiency > 1.0005]
    if not over:
        return None
    top = max(over, key=lambda r: r.efficiency)
    zero = top.shard_group is not None and top.shard_group > 1
    split = top.tp * top.pp > 1
    if zero or split:
        share = f"1/{top.shard_group} of " if zero else ""
        whose = f"its tp {top.tp} x pp {top.pp} slice's" if split else "the"
        how = f" (ZeRO shards it over {top.shard_group} ranks)" if zero else ""
        why = (f"each {words.device} updates {share}{whose} optimizer state{how}, a step one "
               f"{words.device} takes for the whole model")
    else:
        why = f"work the one-{words.device} run does whole"
    return (f"efficiency above 100% (up to {top.efficiency:.1%} at {words.count(top.devices)}): "
            f"{why} (docs/model.md §7)")


def data_parallel_ranks(p: Prediction) -> int:
    """The ranks that hold one replica's shard each, dp x cp = devices / (tp x pp): every device
    of a parameter-count workload."""
    return p.devices // replica_devices(p.tp, p.pp)  # dp x tp x pp x cp / (tp x pp)


def hybrid_sharded(p: Prediction) -> bool:
    """Whether the row's ZeRO states are sharded over fewer ranks than its data-parallel group
    (``data_parallel_ranks``): hybrid sharding, HSDP (docs/model.md §16)."""
    return p.shard_group is not None and p.shard_group < data_parallel_ranks(p)


def layout(devices, devices_per_node: int, nouns: Nouns = GPU_NOUNS,
           allocation: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Servers spanned and devices per server for each device count (ranks fill servers in
    order, the last one partly where the count is not whole servers); error where a count
    breaks ``layout.runs_on_count`` for ``allocation`` devices a unit (None: the server;
    ``job_unit``), in ``layout.count_problem``'s words ('3 processes do not fill whole hosts
    of 2' on CPU, '130 GPUs do not fill whole allocation units of 4 GPUs ...')."""
    p = np.asarray(devices, dtype=np.int64)
    if np.any(p < 1):
        raise ScalesimError("device counts must be 1 or more", knobs=("devices",))
    bad = p[~runs_on_count(p, devices_per_node, allocation)]
    if bad.size:
        problem = count_problem(int(bad[0]), devices_per_node, allocation, nouns)
        fix = ("" if allocation not in (None, devices_per_node) else
               f"; use a multiple of {devices_per_node} above {devices_per_node}, or set "
               "--gpus-per-node")
        raise ScalesimError(problem + fix, knobs=problem.knobs)
    per_node = np.minimum(p, devices_per_node)
    return -(-p // per_node), per_node


def job_unit(hw: Hardware, scenario: Scenario) -> tuple[int, int]:
    """(devices of each server the job uses, devices of its allocation unit): the scenario's
    ``devices_per_node`` (--gpus-per-node), else the server's, and ``Hardware.allocation_for``
    of it, the unit whose whole numbers a device count must be (``layout``)."""
    g = scenario.devices_per_node or hw.devices_per_node
    return g, hw.allocation_for(scenario.devices_per_node)


def micro_batch_max() -> int:
    """The largest micro-batch, samples per replica per micro-step: the bounds table's."""
    return int(KNOB_BY_FIELD["micro_batch"].bound.high)


def accumulation_max() -> int:
    """The most micro-steps per optimizer step: the bounds table's."""
    return int(KNOB_BY_FIELD["accumulation"].bound.high)


def global_batch_splits(global_batch, replicas, accumulation) -> np.ndarray:
    """Where ``global_batch`` (samples per optimizer step) splits over ``replicas`` x
    ``accumulation`` micro-steps into whole micro-batches of 1 to ``micro_batch_max`` samples
    (bool, broadcast over the arrays): the rows predict, sweep and the app can run."""
    share = np.asarray(replicas, dtype=np.int64) * np.asarray(accumulation, dtype=np.int64)
    gb = np.asarray(global_batch, dtype=np.int64)
    return (gb % share == 0) & (gb >= share) & (gb // share <= micro_batch_max())


def too_big_micro_batch(global_batch: int, micro_batch: str, over: str,
                        named: Callable[[str], str] | None = None) -> Refusal:
    """The one-line refusal of a global batch whose micro-batch (``micro_batch`` samples, one
    or several: '67,108,864 or 33,554,432'), ``global_batch`` split ``over`` ('8 devices x 1
    accumulation step', '1 and 2 devices x ...'), is past the bounds table's, naming the flags
    that change it (``bounds.KNOBS``; ``named``: a knob's name instead, the app's control)."""
    flag = {f: named(f) if named else KNOB_BY_FIELD[f].flag
            for f in ("devices", "accumulation", "global_batch")}
    return Refusal(f"global batch {global_batch:,} over {over} is a micro-batch of "
                   f"{micro_batch} samples, past the largest of the bounds table "
                   f"({micro_batch_max():,}); raise {flag['devices']} or {flag['accumulation']} (at "
                   f"most {accumulation_max():,}), or lower {flag['global_batch']}",
                   ("global_batch", "accumulation", "devices"), callers_words(named, *flag))


def nearest_splitting_batches(global_batch: int, replicas, accumulation: int) -> list[int]:
    """The global batches nearest ``global_batch`` (below, above; either left out where none)
    that split over every count of ``replicas`` x ``accumulation`` micro-steps into whole
    micro-batches of 1 to ``micro_batch_max`` samples (``global_batch_splits``): the multiples
    of lcm(replicas) x accumulation (in Python's integers: numpy's int64 lcm of many counts
    wraps, to 0 or a negative))."""
    step = math.lcm(*(int(r) for r in np.ravel(replicas))) * accumulation
    below, above = global_batch // step * step, (global_batch // step + 1) * step
    largest = micro_batch_max() * int(np.min(replicas)) * accumulation  # the fewest replicas'
    return [b for b in (below, above) if step <= b <= largest]


def uneven_split_words(global_batch: int, devices, replicas, accumulation: int, nouns: Nouns,
                       split: bool = False) -> Refusal:
    """The one-line refusal of a global batch that does not split evenly over ``replicas`` x
    ``accumulation`` at some of the ``devices`` asked (``replicas``: the devices, or dp where
    ``split``: a model split into tp x pp x cp): every count it fails at, and the nearest
    global batches that split over all of them (``nearest_splitting_batches``)."""
    k, gb = accumulation, global_batch
    bad = np.flatnonzero(gb % (np.asarray(replicas) * k) != 0)
    nearest = nearest_splitting_batches(gb, replicas, k)
    every = "" if len(devices) == 1 else f" at every count asked ({count_list(devices, None)})"
    batches = f": {' or '.join(str(b) for b in nearest)}" if nearest else ""
    if split:
        head = f"global batch {gb} is not divisible by " + ", nor by ".join(
            f"dp {int(replicas[i])} x accumulation {k} ({int(devices[i])} {nouns.devices})"
            for i in bad)
        page = f"{KNOB.global_batch} {gb} is not divisible by " + ", nor by ".join(
            f"{dp_ranks(int(replicas[i]))} x {KNOB.accumulation} {k} ({int(devices[i])} "
            f"{nouns.devices})" for i in bad)
    else:
        over = f"{count_list([int(devices[i]) for i in bad], None)} {nouns.devices} x"
        head = f"global batch {gb} does not split evenly over {over} {k} accumulation steps"
        page = f"{KNOB.global_batch} {gb} does not split evenly over {over} {KNOB.accumulation} {k}"
    rule = "dp x accumulation" if split else f"{nouns.devices} x accumulation"
    # a template (``knob_refusal``): the page names its controls (Global batch, Gradient
    # accumulation) and dp in words, once each; the CLI keeps its notation
    return knob_refusal(f"{page}; pick one divisible by their product{every}{batches}",
                        ("global_batch", "accumulation"),
                        cli=f"{head}; pick a global batch divisible by {rule}{every}{batches}")


def micro_batches(scenario: Scenario, profile: Profile, devices: np.ndarray, dp=None,
                  named: Callable[[str], str] | None = None):
    """Per-replica micro-batch at each device count, and the one-device baseline's. ``dp``: the
    model replicas at each row (the split path: the global batch splits over dp replicas, each
    of tp x pp x cp devices); None: every device is a replica (data parallel). ``named``: a
    knob's name in a refusal's fix (``too_big_micro_batch``; the CLI flag by default)."""
    replicas = devices if dp is None else dp
    k, nouns = scenario.accumulation, hardware_nouns(profile.hardware)  # 'processes' on CPU
    if scenario.global_batch is None:
        b = scenario.micro_batch or profile.workload.micro_batch
        return (np.full(replicas.shape, b, dtype=np.int64),
                np.full(replicas.shape, b, dtype=np.int64))
    share = replicas * k
    bad = scenario.global_batch % share != 0
    if np.any(bad):
        raise ScalesimError(uneven_split_words(scenario.global_batch, devices, replicas, k,
                                               nouns, split=dp is not None),
                            knobs=("global_batch", "accumulation"))
    if scenario.global_batch % k != 0:
        raise ScalesimError(f"global batch {scenario.global_batch} is not divisible by "
                            f"accumulation {k}", knobs=("global_batch", "accumulation"))
    b = scenario.global_batch // share
    over = np.flatnonzero(b > micro_batch_max())
    if over.size:  # every count past it, named: 'over 1 and 2 devices x 1 accumulation step'
        rows = dict(sorted({int(devices[i]): (int(replicas[i]), int(b[i])) for i in over}.items()))
        steps = f"{k} accumulation step{'s' if k > 1 else ''}"
        counts = f"{count_list(rows, None)} {nouns.devices}"
        raise ScalesimError(too_big_micro_batch(
            scenario.global_batch, either(m for _, m in rows.values()),
            f"{counts} x {steps}" if dp is None
            else f"dp {either(r for r, _ in rows.values())} x {steps} ({counts})", named))
    return b, np.full(replicas.shape, scenario.global_batch // k)


# What every text output says, once, where the data stall is not modelled (``input_pipeline_modelled``):
# a template naming the loader-workers knob by its control (``layout.knob_refusal``), so that the
# CLI says '--loader-workers' and the app its control's label (``errors.in_words_of``)
STALL_NOT_MODELLED = knob_refusal(
    "data stall not modelled: no input pipeline measured (calibrate's loader phase measures "
    f"one; {KNOB.loader_workers} then reads it)")


def input_pipeline_modelled(profile: Profile | None) -> bool:
    """Whether ``profile`` gives the data stall a loader supply: an input-pipeline curve
    (calibrate's loader phase, a runs fit or traces that found the loader limiting), which
    ``--loader-workers`` reads. Without one the model's loader is infinitely fast
    (``loader_supply``: inf) and the stall is not modelled: every output says so (null in JSON,
    an empty CSV cell, 'not modelled' in text) rather than print its 0 (docs/model.md §5)."""
    return profile is not None and profile.input_pipeline is not None


def loader_supply(profile: Profile, scenario: Scenario, per_node):
    """Samples/s one loader supplies with ``per_node`` loaders sharing a server's cores, and
    alone in its server (the one-device baseline); infinite without an input-pipeline curve.
    Default workers: the best measured count."""
    if not input_pipeline_modelled(profile):
        return np.inf, np.inf
    pts = profile.input_pipeline.points
    workers = scenario.loader_workers
    if workers is None:
        workers = max(pts, key=lambda pt: pt.samples_per_s).workers
    curve = ([pt.workers for pt in pts], [pt.samples_per_s for pt in pts])
    cores = profile.hardware.cpu_cores_per_node
    return (loader_supply_per_device(workers, per_node, cores, *curve),
            loader_supply_per_device(workers, 1, cores, *curve))


def scenario_inputs(profile: Profile, scenario: Scenario, devices=None):
    """Model inputs for ``scenario`` on ``profile``: (StepInputs, baseline micro-batch)."""
    profile = require_model(profile, Profile, "profile")
    scenario = require_model(scenario, Scenario, "scenario")
    hw, wl = profile.hardware, profile.workload
    if devices is None:
        p = np.asarray(scenario.devices, dtype=np.int64)
    else:
        p = check_values("devices", np.ravel(devices) if isinstance(devices, np.ndarray)
                         else devices, "devices")
    g_max, unit = job_unit(hw, scenario)
    _, per_node = layout(p, g_max, hardware_nouns(hw), unit)
    b, base_b = micro_batches(scenario, profile, p)
    supply, supply_alone = loader_supply(profile, scenario, per_node)

    cv = jitter_cv_of(profile, scenario)
    shard_group = shard_group_of(scenario, p, hardware_nouns(hw))
    slow = np.where(
        (scenario.slow_device is not None) & (p > (scenario.slow_device or 0)),
        scenario.slow_factor, 1.0,
    )
    intra, inter = hw.intra_node, hw.inter_node
    overhead_alone_s, per_sample_alone_s, optimizer_alone_s = profile.compute.alone()
    inputs = StepInputs(
        devices=p,
        devices_per_node=per_node,
        micro_batch=b,
        accumulation=scenario.accumulation,
        overhead_s=overhead_alone_s,
        per_sample_s=per_sample_alone_s,
        colocation_slope=colocation_slope(profile.compute.colocation_slowdown,
                                          profile.compute.colocated_devices),
        optimizer_step_s=optimizer_alone_s,
        per_step_s=profile.compute.per_step_s,
        # DDP's bucket copies at the device's (the layout path's: its record's, the datasheet's,
        # a block calibration's); NaN: none known, at the optimizer sweep's rate (§4)
        memory_bandwidth_GBps=_pick(device_bandwidth_GBps(profile), np.nan),
        fetch_s=profile.compute.fetch_s,
        backward_fraction=wl.backward_fraction,
        bubble_micro_steps=wl.pipeline_bubble_micro_steps,
        params=wl.params,
        wire_bytes_per_param=wl.wire_bytes_per_param,
        intra_latency_s=_pick(scenario.intra_latency_s, intra.latency_s),
        # the whole server's figure; the model gives fewer GPUs of a mesh server their share
        intra_busbw_GBps=_pick(scenario.intra_busbw_GBps, intra.busbw_GBps),
        intra_subset_shares=intra.subset_shares,
        inter_latency_s=_pick(scenario.inter_latency_s, inter.latency_s),
        inter_busbw_GBps=inter_busbw_GBps_of(hw, scenario),
        nvls_busbw_ratio=nvls_busbw_ratio(intra),
        strategy=STRATEGIES[scenario.strategy],
        framework=FRAMEWORKS[scenario.zero_framework],
        grad_sync=GRAD_SYNCS[scenario.grad_sync],
        shard_group=shard_group,
        blocks=wl.layers or 0,
        algorithm=coll.ALGORITHMS[scenario.algorithm],
        overlap=scenario.overlap,
        bucket_bytes=scenario.bucket_mib * MIB_BYTES,
        first_bucket_bytes=scenario.first_bucket_mib * MIB_BYTES,
        loader_samples_per_s=supply,
        loader_alone_samples_per_s=supply_alone,
        jitter_cv=cv,
        device_cv=_pick(scenario.device_speed_cv, hw.device_speed_cv),
        comm_contention=_pick(scenario.comm_compute_contention, hw.comm_compute_contention),
        slow_factor=slow,
        param_bytes_per_param=wl.param_bytes_per_param,
        grad_bytes_per_param=wl.grad_bytes_per_param,
        optimizer_bytes_per_param=wl.optimizer_bytes_per_param,
        reduce_bytes_per_param=wl.stated_reduce_bytes(),
        activation_bytes_per_sample=wl.activation_bytes_per_sample,
        device_memory_bytes=hw.device_memory_bytes,
        memory_margin=scenario.memory_margin,
    )
    return inputs, base_b


def shard_group_of(scenario: Scenario, devices, nouns: Nouns = GPU_NOUNS) -> int:
    """The data-parallel path's shard group (``StepInputs.shard_group``; 0: full sharding): the
    scenario's ``layout.shard_group``, refused in one line where it cannot run at some device
    count (``layout_predict.check_shard_group``: DDP, 1, DeepSpeed, not dividing the devices;
    every device is a data-parallel rank here), docs/model.md §16."""
    from scalesim.layout_predict import check_shard_group, layout_of

    shard_group = layout_of(scenario).shard_group
    check_shard_group(shard_group, devices, devices, STRATEGIES[scenario.strategy],
                      scenario.zero_framework, nouns)
    return shard_group or 0


def slow_device_note(slow_device: int | None, devices, of: str | None = None,
                     nouns: Nouns = GPU_NOUNS) -> str | None:
    """The note for device counts that do not reach rank ``slow_device`` (ranks count from 0:
    ``devices <= slow_device``), which no slow device slows; None when every count does.
    ``of`` names what the counts are (default: 'that row' / 'those rows'); ``nouns`` the
    profile's ('process 3 is not among the 2 processes ...' on CPU)."""
    if slow_device is None:
        return None
    without = [int(d) for d in devices if d <= slow_device]
    if not without:
        return None
    of = of or ("that row" if len(without) == 1 else "those rows")
    return (f"{nouns.device} {slow_device} is not among the {count_list(without)} "
            f"{nouns.devices} of {of}: no slow {nouns.device} there")


def jitter_cv_of(profile: Profile, scenario: Scenario) -> float:
    """Std/mean of one device's micro-step, independent from step to step: the scenario's
    ``straggler_cv``, else the profile's measured jitter, else 0."""
    if scenario.straggler_cv is not None:
        return scenario.straggler_cv
    return profile.jitter.step_time_cv if profile.jitter is not None else 0.0


def nvls_busbw_ratio(intra: LinkLevel) -> float:
    """NVLS all-reduce busbw of the intra-server level over its ring busbw (NaN: no NVLS).
    ``StepInputs`` carries the ratio, so an intra busbw override scales NVLS alike, as NCCL's
    tuner derives both from the same NVLink bandwidth (``bwIntra``, src/graph/tuning.cc)."""
    if intra.allreduce_busbw_GBps is None:
        return float("nan")
    return intra.allreduce_busbw_GBps / intra.busbw_GBps


def inter_nic_share(hw: Hardware, scenario: Scenario) -> float:
    """Share of a whole server's inter-server busbw the job's GPUs of each server reach: 1 on
    whole servers, less where ``devices_per_node`` uses fewer GPUs than the server holds and
    so fewer of its NICs (``presets.partial_server_inter_busbw_GBps``)."""
    whole = hw.inter_node.busbw_GBps
    used = scenario.devices_per_node or hw.devices_per_node
    reached = float(partial_server_inter_busbw_GBps(hw.inter_node, used, hw.devices_per_node))
    return reached / whole if whole > 0 else 1.0


def inter_busbw_GBps_of(hw: Hardware, scenario: Scenario) -> float:
    """Inter-server busbw the job's servers reach, GB/s: the whole-server figure (the scenario's
    override, else the hardware's: what one server sustains over all its NICs, docs/model.md
    §2) times ``inter_nic_share``."""
    return _pick(scenario.inter_busbw_GBps, hw.inter_node.busbw_GBps) * inter_nic_share(hw,
                                                                                       scenario)


def intra_busbw_GBps_of(hw: Hardware, scenario: Scenario, gpus: int) -> float:
    """Intra-server ring busbw that ``gpus`` GPUs of one server reach, GB/s: the whole-server
    figure (the scenario's override, else the hardware's) times its share for that many
    (``subset_links``: a ring over fewer GPUs of a DGX-1's mesh has fewer NVLinks; NVSwitch and
    PCIe keep every GPU's, docs/model.md §18)."""
    from scalesim.model.subset_links import subset_busbw_GBps

    return float(subset_busbw_GBps(_pick(scenario.intra_busbw_GBps, hw.intra_node.busbw_GBps),
                                   gpus, hw.intra_node.subset_shares))


def server_part_words(hw: Hardware, scenario: Scenario) -> str:
    """'1 of 8 GPUs per server' (processes per host for a CPU calibration) where the job uses
    fewer devices of each server than it holds, so reaches fewer of its NICs
    (``inter_nic_share``); '' on whole servers (or more devices than a server holds)."""
    used = scenario.devices_per_node
    if used is None or used >= hw.devices_per_node:
        return ""
    words = hardware_nouns(hw)
    return f"{used} of {hw.devices_per_node} {words.gpus} per {words.server}"


def server_use_words(hw: Hardware, scenario: Scenario,
                     setting: str = "--gpus-per-node") -> str | None:
    """What a job on fewer GPUs of each server than it holds gets, for the command headers:
    '4 of 8 GPUs per server: intra 230, inter 96 GB/s busbw (the links and NICs they reach),
    billed per whole server of 8 GPUs' (the ring over them, ``subset_links``, and
    ``inter_busbw_GBps_of``, GB/s; billing as ``billing.billing_words``); None on whole
    servers. More GPUs than the server holds (a calibration of one GPU per server planned at
    2) are said too: the rows put them all on the one server's links, which the hardware line
    above would not show, the inter-server figure with them: a server of the hardware's count
    over its NICs (a calibration's, what its ranks a server reached), taken unchanged, since
    the NICs more GPUs would reach are not known (docs/model.md §2). ``setting`` names where
    the count was set (the CLI's flag; the app names its control)."""
    used = scenario.devices_per_node
    if used is None or used == hw.devices_per_node:
        return None
    from scalesim.billing import billing_words, job_sizes

    words = hardware_nouns(hw)  # 'processes per host' for a CPU calibration
    if used > hw.devices_per_node:
        return (f"{used} {words.gpus} per {words.server} ({setting}), more than the "
                f"{hw.devices_per_node} of {hw.name}: its {words.link('intra_node')} "
                f"({link_GBps(_pick(scenario.intra_busbw_GBps, hw.intra_node.busbw_GBps))} "
                f"busbw) taken for all {used}, and its {words.link('inter_node')} "
                f"({link_GBps(_pick(scenario.inter_busbw_GBps, hw.inter_node.busbw_GBps))} "
                f"busbw, what a {words.server} of {hw.devices_per_node} reaches over its NICs) "
                f"unchanged: the NICs {used} would reach are not known")

    intra = intra_busbw_GBps_of(hw, scenario, used)
    # billed as the cost columns bill them (``training_time.resolve_goal``)
    sizes = job_sizes(scenario.instance_sizes, hw.instance_sizes, hw.devices_per_node, used,
                      hw.allocation_devices)
    billing = billing_words(used, sizes, hw.device_name, words, hw.devices_per_node)
    return (f"{server_part_words(hw, scenario)}: intra {sig3(intra)}, inter "
            f"{link_GBps(inter_busbw_GBps_of(hw, scenario))} busbw (the links and NICs they "
            f"reach), {billing}")


def cores_shared_note(profile: Profile, scenario: Scenario) -> str | None:
    """Where a CPU calibration's processes per host (``--gpus-per-node``, else the profile's)
    exceed those it ran per host (``Hardware.devices_per_node``, timed together:
    ``ComputeCurve.colocated_devices``) or the host's cores (``Hardware.cpu_cores_per_node``),
    what the rows' compute rests on: the co-location slowdown extrapolated linearly from the
    processes timed together (docs/model.md §1), while g processes of one or more threads each
    on c < g cores time-share them, so each computes at least g / c times slower than alone,
    which the rows do not model; None otherwise (GPUs, whose host cores do not run the compute)."""
    hw, curve = profile.hardware, profile.compute
    words = hardware_nouns(hw)
    used = scenario.devices_per_node or hw.devices_per_node
    cores, timed = hw.cpu_cores_per_node, curve.colocated_devices
    if not words.cpu or (used <= max(hw.devices_per_node, timed) and used <= cores):
        return None
    factor = float(colocation_factor(used, colocation_slope(curve.colocation_slowdown, timed)))
    said = (f"{used} {words.devices} per {words.server}: their compute extrapolates the "
            f"co-location slowdown of the {words.count(timed)} timed together linearly "
            f"({factor:.2f}x one alone, docs/model.md §1)" if timed > 1 else
            f"{used} {words.devices} per {words.server}: no co-location slowdown was measured "
            f"(one {words.device} timed alone), so their compute is one alone's")
    if used <= cores:
        return said
    return (f"{said}, but on the {words.server}'s {cores} cores they time-share them: each "
            f"computes at least {used}/{cores} = {used / cores:.2f}x slower than alone (every "
            f"{words.device} keeps at least one core busy), which the rows do not model: "
            f"calibrate with {used} {words.devices} per {words.server} or use at most {cores}")


def _pick(override, default):
    return default if override is None else override


def within_measured_memory(profile: Profile, fits, micro_batch) -> np.ndarray:
    """``fits`` (the memory model's, per row) and each row's ``micro_batch`` (samples per
    micro-step on one device) under the smallest one the profile's calibration saw run out of
    memory (``ComputeCurve.oom_micro_batch``); ``fits`` as is where it saw none. The rule
    (``memory.under_measured_ceiling``) of predict's data-parallel rows, their one-device
    baseline and sweep's fits column; the layout path's rows take it through
    ``LayoutInputs.oom_micro_batch``."""
    from scalesim.model.memory import under_measured_ceiling

    return under_measured_ceiling(fits, micro_batch, profile.compute.oom_micro_batch)


def _split_rows(profile: Profile, scenario: Scenario):
    """The scenario's rows through ``evaluate_layouts`` (``scalesim.layout_predict``)."""
    from scalesim import layout_predict as lp

    split = lp.layout_of(scenario)
    p = np.asarray(scenario.devices, dtype=np.int64)
    g_max, unit = job_unit(profile.hardware, scenario)
    nouns = hardware_nouns(profile.hardware)
    layout(p, g_max, nouns, unit)
    if why := tp_server_refusal(split.tp, g_max, nouns, profile.hardware.devices_per_node,
                                **shape_heads(profile.workload.transformer)):
        raise ScalesimError(why)  # at every count, before the counts tp x pp divides
    dp = lp.split_devices(p, split.tp, split.pp, nouns, split.cp, unit)
    b, base_b = micro_batches(scenario, profile, p, dp)
    k = np.full(p.shape, scenario.accumulation, dtype=np.int64)
    schedule = split.schedule_of()
    ok = lp.check_rows(profile, dp, split.tp, split.pp, b, dp * b * k, SCHEDULES[schedule],
                       split.virtual_stages, g_max, split.cp, unit, split.sequence_parallel)
    if not np.all(ok):
        i = int(np.flatnonzero(~ok)[0])
        why = lp.first_problem(profile, dp[i], split.tp, split.pp, 0, b[i], dp[i] * b[i] * k[i],
                               split, schedule, g_max, split.cp, unit)
        raise ScalesimError(within(why, f"layout at {nouns.count(int(p[i]))}: {why}"))
    for unused, rule in unused_settings(split.tp, split.pp, split.schedule, split.virtual_stages,
                                        split.sequence_parallel, split.tp_overlap,
                                        split.p2p_overlap).values():
        if unused:  # a setting its layout does not run (the pipeline's: a layout rule above)
            raise ScalesimError(rule)
    rows = lp.evaluate_rows(profile, scenario, p, b, k, base_b)
    return rows, base_b, rows.one_device_holds_model  # the model at one sample per micro-step


def predict(profile: Profile, scenario: Scenario | None = None) -> list[Prediction]:
    """One Prediction per device count of ``scenario`` (default: Scenario()).

    A workload with a transformer shape predicts through ``evaluate_layouts`` with the
    scenario's layout (``scalesim.layout_predict``); a parameter count, through the
    data-parallel step model. A measured profile of a parameter count is split, where the
    scenario asks it, as the transformer its curve timed (``layout_predict.split_profile``).
    A list with any count that cannot run is refused in the line the CLI, sweep and the app
    give where none runs (``layout_predict.every_count_runs``, ``counts_that_run``'s rules)."""
    from scalesim.layout_predict import (
        every_count_runs,
        layout_of,
        split_profile,
        splittable_shape,
        uses_layouts,
    )
    from scalesim.pipeline_stages import stage_fields

    scenario = Scenario() if scenario is None else scenario
    profile = require_model(profile, Profile, "profile")
    scenario = require_model(scenario, Scenario, "scenario")
    every_count_runs(profile, scenario)
    profile = split_profile(profile, scenario)
    split = None
    shard = layout_of(scenario).shard_group
    if uses_layouts(profile, scenario):
        split, base_b, holds = _split_rows(profile, scenario)
        r = split.result
        result = SimpleNamespace(
            nodes=split.nodes, global_batch=split.global_batch, step_time_s=r.step_time_s,
            compute_s=r.compute_s, exposed_comm_s=r.tp_comm_s + r.cp_comm_s + r.p2p_s
            + r.dp_exposed_s, data_stall_s=r.stall_s, straggler_s=r.straggler_s,
            comm_total_s=None, comm_bytes=None, samples_per_s=r.samples_per_s,
            memory_bytes=r.memory_bytes, bubble_s=r.bubble_s)
        inputs = SimpleNamespace(devices=split.devices, devices_per_node=split.devices_per_node,
                                 micro_batch=split.micro_batch)
        speedup, efficiency, fits = split.speedup, split.efficiency, r.fits
        one_fits = split.one_device_fits
    else:
        inputs, base_b = scenario_inputs(profile, scenario)
        result, speedup, efficiency, one = evaluate_scaling(inputs, base_b, with_baseline=True)
        one_fits = np.broadcast_to(within_measured_memory(profile, one.fits, base_b),
                                   np.shape(speedup))
        holds = one_fits
        if not np.all(one_fits):  # the baseline's micro-batch, or the model? (one sample)
            holds = within_measured_memory(profile, evaluate_scaling(
                inputs, np.ones_like(base_b), with_baseline=True)[3].fits, 1)
        fits = within_measured_memory(profile, result.fits, inputs.micro_batch)
    goal = resolve_goal(profile, scenario)
    b_crit, e_min = goal.critical_batch, goal.min_samples
    train, price = goal.train_samples, goal.price_per_device_hour
    devices = np.asarray(inputs.devices)
    modelled = input_pipeline_modelled(profile)
    shape = splittable_shape(profile) if split is not None else None
    asked = layout_of(scenario)
    stages = stage_fields(None if shape is None else shape.layers, asked.pp, asked.virtual_stages)
    rows = []
    for i, p in enumerate(devices):
        steps = ttq = ttt = cost = None
        gb, step_s = result.global_batch[i], float(result.step_time_s[i])
        if b_crit is not None and e_min is not None:  # whole optimizer steps (§9)
            steps = float(whole_steps(samples_to_quality(gb, b_crit, e_min), gb))
            ttq = steps * step_s
        hours_basis = ttq if ttq is not None else None
        if train is not None:
            ttt = float(run_time_s(train, gb, step_s))
            hours_basis = ttt
        if price is not None and hours_basis is not None:
            cost = float(hours_basis / 3600.0 * goal.usd_per_hour(int(p)))
        dp = int(p) if split is None else int(split.dp[i])  # data parallel: every device
        cp = 1 if split is None else int(split.cp[i])  # the ZeRO states shard over dp x cp
        rows.append(Prediction(
            devices=int(p),
            nodes=int(result.nodes[i]),
            devices_per_node=int(np.asarray(inputs.devices_per_node)[i]),
            micro_batch=int(np.asarray(inputs.micro_batch)[i]),
            accumulation=scenario.accumulation,
            global_batch=int(round(result.global_batch[i])),
            step_time_s=float(result.step_time_s[i]),
            compute_s=float(result.compute_s[i]),
            exposed_comm_s=float(result.exposed_comm_s[i]),
            data_stall_s=float(result.data_stall_s[i]) if modelled else None,
            straggler_s=float(result.straggler_s[i]),
            comm_total_s=None if result.comm_total_s is None else float(result.comm_total_s[i]),
            comm_bytes=None if result.comm_bytes is None else float(result.comm_bytes[i]),
            samples_per_s=float(result.samples_per_s[i]),
            speedup=float(speedup[i]),
            efficiency=float(efficiency[i]),
            memory_bytes=float(result.memory_bytes[i]),
            fits=bool(fits[i]),
            one_device_fits=bool(one_fits[i]),
            one_device_micro_batch=int(np.broadcast_to(base_b, devices.shape)[i]),
            one_device_holds_model=bool(np.broadcast_to(holds, devices.shape)[i]),
            steps_to_quality=steps,
            time_to_quality_s=ttq,
            time_to_train_s=ttt,
            cost_usd=cost,
            billed_devices=int(goal.billed_devices(int(p))),
            shard_group=None if scenario.strategy == "ddp" else min(shard or dp * cp, dp * cp),
            bubble_s=float(np.broadcast_to(result.bubble_s, result.step_time_s.shape)[i]),
            **({} if split is None else {**_split_fields(split, i),
                                           "precision": scenario.precision}),
            **stages,
        ))
    return rows


def _split_fields(split, i: int) -> dict:
    r = split.result
    return {"dp": int(split.dp[i]), "tp": int(split.tp[i]), "pp": int(split.pp[i]),
            "cp": int(split.cp[i]),
            "tp_comm_s": float(r.tp_comm_s[i]), "cp_comm_s": float(r.cp_comm_s[i]),
            "pipeline_comm_s": float(r.p2p_s[i]), "tokens_per_s": float(r.tokens_per_s[i]),
            "mfu": float(r.mfu[i]) if split.peak_known else None}
