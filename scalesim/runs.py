"""Measured runs: one row per training run at some device count, read from CSV or JSON.

A row has ``devices``, ``nodes`` and ``samples_per_s`` or ``step_time_s``; optionally
``per_device_batch``, ``global_batch``, ``accumulation``, ``data_wait_s`` (time per step waiting
on the input), ``comm_s`` (communication per step *not hidden* by compute), ``rank_step_times_s``
(each rank's step time, ``;``-separated in CSV, a list in JSON) and ``steps_to_target``
(optimizer steps the run needed to reach a fixed quality target, for large-batch effects) and
``device`` (what ran them: ``CPU: <model>``, as ``scalesim calibrate`` names a CPU calibration's
device, or ``cpu``, makes the report say processes and hosts; ``device_nouns``) and
``gpus_per_node`` (the devices one of the runs' servers holds, where they used fewer of each:
``diagnose --gpus-per-node``'s value, the same in every row; ``on_servers_of``).

Runs of a job that splits its model give ``tp``, ``pp`` and ``cp`` (tensor, pipeline and context
parallel degrees, 1 when absent), the same in every row: a model replica is ``tp * pp * cp``
devices and the data-parallel degree is ``devices / (tp * pp * cp)``. There ``per_device_batch``
is the micro-batch of one replica (Megatron's ``--micro-batch-size``, torchtitan's
``local_batch_size``) and ``global_batch = per_device_batch * replicas * accumulation``;
``replica_runs`` gives the runs as data-parallel runs of replicas, which the fit reads
(docs/diagnose.md "Runs that split the model").

Throughput and step time are tied by the samples per step: ``samples_per_s = global_batch /
step_time_s``. When no batch is given either, the runs are taken as weak scaling with one
"unit" of work per device per step, so ``step_time_s`` stands for the time per unit
(``devices / samples_per_s``); speed-up and efficiency do not depend on the unit. A batch is
given in every row or in none, and the timed columns (``data_wait_s``, ``comm_s``,
``rank_step_times_s``, real seconds) need ``step_time_s`` or a batch to be compared with.

Rows are in any order. Rows of one configuration (devices, nodes, per-device batch,
accumulation) are repeated measurements and become one run of their medians (``aggregate``), so
what follows grows with the configurations, not the rows; one device count with two
configurations is an error. At most MAX_ROWS rows are read, and ``thin`` bounds the runs a
diagnosis fits to MAX_FIT_RUNS.

Speed-up is against the first (smallest) run: ``speedup = p0 * X / X0`` (``X`` throughput),
assuming the first run itself scaled perfectly, and ``efficiency = speedup / p``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from scalesim.bounds import BOOL_IS_NO_NUMBER, bounded, holds_bool, items_bounded
from scalesim.device_nouns import (
    CPU_DEVICE_PREFIX,
    Nouns,
    is_cpu_device,
    measured_nouns,
    nouns_for,
    rack_nouns,
    rack_of,
    replica_device_name,
)
from scalesim.errors import KNOB, ScalesimError, as_literal, excerpt, require_path, require_text
from scalesim.figures import count, number, sig3
from scalesim.jsonio import parse_json_text, validation_message
from scalesim.layout import Schedule, knob_refusal
from scalesim.runs_units import UNIT_FACTOR, check_units

REQUIRED = ("devices", "nodes")
COLUMNS = ("devices", "nodes", "samples_per_s", "step_time_s", "per_device_batch", "global_batch",
           "accumulation", "data_wait_s", "comm_s", "rank_step_times_s", "steps_to_target",
           "device", "tp", "pp", "cp", "schedule", "virtual_stages", "gpus_per_node")
MODEL_SPLIT = ("tp", "pp", "cp")  # the degrees that split the model: a replica is their product
# a runs file's schedule names (lower case, letters and digits) that name a layout schedule
SCHEDULE_ALIASES = {"interleaved1f1b": "interleaved", "zbh1": "zb"}
TIMED = ("data_wait_s", "comm_s", "rank_step_times_s")  # real seconds, not per unit of work
# the measured columns the diagnosis reads only where every run gives them (``Runs.optional``)
MEASURED_PARTS = ("data_wait_s", "comm_s", "steps_to_target")
# A time measured beside the run's step (a median over steps) may exceed it by measurement
# noise, not more: a rank's step time, or the data wait and exposed communication together
RANK_TIME_SLACK = 1.1
# Longest CSV cell read, characters: a rank_step_times_s list of ~300k ranks. (csv's own default,
# 128 KiB, is already passed by 16k ranks of "0.1234567;".)
MAX_CSV_CELL_CHARS = 4 << 20
MAX_ROWS = 1_000_000  # rows read (about 5 s per 200k on one core); repeats are aggregated
MAX_FIT_RUNS = 1000  # distinct runs (after aggregation) the diagnosis fits; more are thinned
MAX_DEVICE_CHARS = 200  # longest device name read ('CPU: AMD EPYC 9654 96-Core Processor')
# the fitted profile's device where the runs name none, or a GPU (its words: devices in servers)
MEASURED_DEVICE = "measured"


class RunRow(BaseModel):
    """One measured run. Times are seconds per optimizer step."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    devices: int = bounded("devices")
    nodes: int = bounded("nodes")
    samples_per_s: float | None = bounded("samples_per_s", None)
    step_time_s: float | None = bounded("positive_duration_s", None)
    per_device_batch: int | None = bounded("micro_batch", None)
    global_batch: int | None = bounded("global_batch", None)
    accumulation: int = bounded("accumulation", 1)
    data_wait_s: float | None = bounded("duration_s", None)
    comm_s: float | None = bounded("duration_s", None)
    rank_step_times_s: list[items_bounded("positive_duration_s")] | None = None  # type: ignore[valid-type]
    steps_to_target: float | None = bounded("steps_to_target", None)
    device: str | None = None  # what ran it: 'CPU: AMD EPYC' (or 'cpu') for CPU processes
    tp: int = bounded("tp_degree", 1)  # tensor-parallel degree (the model split: module docstring)
    pp: int = bounded("pp_degree", 1)  # pipeline stages
    cp: int = bounded("cp_degree", 1)  # context-parallel degree
    # the pipeline's schedule (pp > 1; None: 1f1b, or interleaved with virtual_stages > 1) and
    # its model chunks per rank: they set the bubble a replica pays (``pipeline_bubble``)
    schedule: Schedule | None = None
    virtual_stages: int = bounded("virtual_stages", 1)
    # the devices one of the runs' servers holds (--gpus-per-node; None: not given)
    gpus_per_node: int | None = bounded("devices_per_node", None)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool(cls, value):
        """A JSON true/false is no number (pydantic would read true as 1: a step of 1 s)."""
        if holds_bool(value):  # no field here takes true/false
            raise ValueError(BOOL_IS_NO_NUMBER)
        return value

    @field_validator("device")
    @classmethod
    def _device(cls, value):
        if value is not None:
            value = value.strip()
            if len(value) > MAX_DEVICE_CHARS:
                raise ValueError(f"device: a name of at most {MAX_DEVICE_CHARS} characters")
        return value or None

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule_case(cls, value):
        """Any case and punctuation, and torchtitan's / torch.distributed.pipelining's names
        ('Interleaved1F1B', 'ScheduleGPipe', 'ZB-H1'): the layout's schedule values."""
        if not isinstance(value, str):
            return value
        name = re.sub(r"[^a-z0-9]", "", value.lower()).removeprefix("schedule")
        return SCHEDULE_ALIASES.get(name, name) or None

    @field_validator("rank_step_times_s", mode="before")
    @classmethod
    def _split(cls, value):
        if isinstance(value, str):
            parts = [p.strip() for p in value.split(";") if p.strip()]
            return parts or None
        return value

    @model_validator(mode="after")
    def _check(self) -> RunRow:
        if self.samples_per_s is None and self.step_time_s is None:
            raise ValueError("give samples_per_s or step_time_s")
        if self.nodes > self.devices:
            raise ValueError(f"{self.nodes} nodes for {self.devices} devices")
        if self.devices % self.nodes:
            raise ValueError(f"{self.devices} devices do not split evenly over {self.nodes} nodes")
        if self.gpus_per_node is not None and self.devices // self.nodes > self.gpus_per_node:
            per = self.devices // self.nodes
            raise ValueError(f"gpus_per_node {self.gpus_per_node}, but its "
                             f"{count(self.devices, 'device')} on {count(self.nodes, 'node')} "
                             f"put {per} in each; give at least {per}")
        if self.pp == 1 and (self.schedule not in (None, "none") or self.virtual_stages != 1):
            raise ValueError("schedule and virtual_stages describe a pipeline: they need pp > 1")
        if self.pp > 1 and self.schedule == "none":
            raise ValueError(f"pp {self.pp} needs a pipeline schedule (gpipe, 1f1b, interleaved, "
                             "zb)")
        if self.schedule == "interleaved" and self.virtual_stages < 2:
            raise ValueError("the interleaved schedule needs virtual_stages >= 2")
        if self.virtual_stages > 1 and self.schedule not in (None, "interleaved"):
            raise ValueError(f"virtual_stages {self.virtual_stages} needs the interleaved "
                             f"schedule, not {self.schedule}")
        if self.devices % self.replica_devices:
            raise ValueError(f"{self.devices} devices do not split into model replicas of tp "
                             f"{self.tp} x pp {self.pp} x cp {self.cp} = {self.replica_devices} "
                             "devices")
        per = "per_device_batch x devices" if self.replica_devices == 1 else \
            "per_device_batch (per replica) x replicas"
        if self.per_device_batch is not None and self.global_batch is not None and (
            self.global_batch != self.per_device_batch * self.replicas * self.accumulation
        ):
            product = self.per_device_batch * self.replicas * self.accumulation
            raise ValueError(f"global_batch {self.global_batch} != {per} x accumulation ("
                             f"{self.per_device_batch} x {self.replicas} x {self.accumulation} = "
                             f"{product})")
        if self.samples_per_s is not None and self.step_time_s is not None:
            b = self.global_batch or (self.per_device_batch and
                                      self.per_device_batch * self.replicas * self.accumulation)
            if b and abs(b / self.step_time_s / self.samples_per_s - 1.0) > 0.05:
                raise ValueError(f"samples_per_s {self.samples_per_s:g} disagrees with global batch "
                                 f"{b} / step_time_s {self.step_time_s:g}; give one of them")
        return self

    @property
    def replica_devices(self) -> int:
        """Devices of one model replica: tp x pp x cp (1 for data parallelism alone)."""
        return self.tp * self.pp * self.cp

    @property
    def replicas(self) -> int:
        """Model replicas: the data-parallel degree."""
        return self.devices // self.replica_devices

    @property
    def pipeline_schedule(self) -> str | None:
        """The schedule the pipeline runs, as given or by default (1f1b; interleaved where
        ``virtual_stages`` > 1); None without a pipeline (pp 1)."""
        if self.pp == 1:
            return None
        return self.schedule or ("interleaved" if self.virtual_stages > 1 else "1f1b")

    @property
    def pipeline_bubble(self) -> float:
        """Micro-step times a replica idles in fill and drain each optimizer step: (pp - 1)/v
        for 1F1B and interleaved, GPipe's pp - 1, ZB-H1's third (Narayanan et al. 2021 §2.2;
        ``pipeline_schedule.bubble_microbatches``, docs/model.md §15); 0 without a pipeline."""
        from scalesim.layout import SCHEDULES
        from scalesim.model.pipeline_schedule import bubble_microbatches

        if self.pp == 1:
            return 0.0
        return float(bubble_microbatches(SCHEDULES[self.pipeline_schedule], self.pp,
                                         self.virtual_stages))


# columns whose empty cell (or JSON null) means their default
DEFAULTED = frozenset(n for n, f in RunRow.model_fields.items()
                      if not f.is_required() and f.default is not None)


@dataclass(frozen=True)
class Runs:
    """Validated runs, one per device count, sorted by devices, and derived per-run arrays."""

    rows: list[RunRow]
    source: str
    notes: tuple[str, ...]
    # set by ``replica_runs``: the split ('tp 8 x pp 2 x cp 1') whose replicas the rows count
    replica_split: str | None = None
    # set by ``replica_runs``: the fill and drain of the replicas' pipeline, in micro-step times
    # a step (``RunRow.pipeline_bubble``); the rows' own pp is 1 by then
    bubble_micro_steps: float = 0.0
    # set by ``replica_runs``: the servers whose NICs the replicas one server holds (as the fit
    # places them) exchange over, at the largest run: their stages' servers (``Hardware.
    # nic_servers_per_node``); 1 for runs of devices
    nic_servers_per_node: int = 1
    # set by ``replica_runs``: the replicas the job rents at a time, whole servers of its own
    # (lcm(replica devices, devices a server) / replica devices: tp 2 x pp 2 on servers of 8,
    # 2); 1 for runs of devices
    replicas_per_rented_server: int = 1
    # set by ``on_servers_of``: the devices one of the runs' servers holds (``--gpus-per-node``
    # or the runs file's ``gpus_per_node``), where the runs used fewer of each; None: a server
    # is the most any run put in one node
    server_devices: int | None = None
    # the runs' GPU as --gpu names it (with --workload), for their nouns: a GB200 NVL72's
    # server is a rack (``nouns``); set as the file is read (``load_runs``' ``gpu``: the CLI
    # parses --gpu first, so the reading's refusals say it) and by ``runs_diagnosis.diagnose_runs``
    gpu: str | None = None

    @property
    def nouns(self) -> Nouns:
        """The words for the fitted devices (``nouns_for``: GPUs, processes or replicas), their
        server a rack where the runs' GPU fills it with several compute trays (``rack_of``:
        ``gpu`` GB200 on servers of 72)."""
        return rack_nouns(nouns_for(self.device_name), rack_of(self.gpu, self.devices_per_node))

    @property
    def measured_nouns(self) -> Nouns:
        """``nouns``' words for the devices themselves (a replica's GPUs: ``measured_nouns``)."""
        return rack_nouns(measured_nouns(self.device_name),
                          rack_of(self.gpu, self.devices_per_node))

    @property
    def devices(self) -> np.ndarray:
        return np.array([r.devices for r in self.rows], dtype=np.int64)

    @property
    def nodes(self) -> np.ndarray:
        return np.array([r.nodes for r in self.rows], dtype=np.int64)

    @property
    def device_name(self) -> str:
        """The fitted profile's device: a CPU calibration's name ('CPU: AMD EPYC'; 'cpu' becomes
        'CPU: cpu') where the rows' ``device`` is a CPU, else 'measured' (``MEASURED_DEVICE``);
        for ``replica_runs``, one model replica of those ('model replica (tp 8 x pp 1 x cp 1) of
        measured', ``device_nouns.replica_device_name``)."""
        name = self.device_column
        if not is_cpu_device(name):
            name = CPU_DEVICE_PREFIX + name if name.lower() == "cpu" else MEASURED_DEVICE
        if self.replica_split is not None:  # one model replica is the fit's device
            return replica_device_name(self.replica_split, name)
        return name

    @property
    def device_column(self) -> str:
        """The one name the rows' ``device`` column gives ('' where none, or several)."""
        names = {r.device for r in self.rows if r.device is not None}
        return names.pop() if len(names) == 1 else ""

    @property
    def devices_per_node(self) -> int:
        """Devices in one full server: ``server_devices`` where given, else the most any run put
        in one node (``used_per_node``)."""
        return self.server_devices or self.used_per_node

    @property
    def used_per_node(self) -> int:
        """The most devices any run put in one node."""
        return int(max(r.devices // r.nodes for r in self.rows))

    @property
    def model_split(self) -> dict[str, int]:
        """The runs' tp, pp and cp (one for all rows: ``runs_from_records`` checks)."""
        return {name: getattr(self.rows[0], name) for name in MODEL_SPLIT}

    @property
    def replica_devices(self) -> int:
        """Devices of one model replica (1: data parallelism alone)."""
        return self.rows[0].replica_devices

    @property
    def replicas(self) -> np.ndarray:
        """Model replicas (the data-parallel degree) of each run."""
        return self.devices // self.replica_devices

    @property
    def batch_known(self) -> bool:
        return all(r.per_device_batch is not None or r.global_batch is not None for r in self.rows)

    @property
    def steps_timed(self) -> bool:
        """Whether ``step_time_s`` is each run's step in seconds: a batch is known, or every run
        gives its step time (from samples_per_s alone, without a batch, it is the seconds of a
        unit of work, ``samples_per_step``), so a cost paid once a step has its place in it."""
        return self.batch_known or all(r.step_time_s is not None for r in self.rows)

    @property
    def micro_batch(self) -> np.ndarray:
        """Samples per device (per model replica where the runs split the model) per micro-step
        (1 unit when no batch is given)."""
        out = []
        for r in self.rows:
            if r.per_device_batch is not None:
                out.append(float(r.per_device_batch))
            elif r.global_batch is not None:
                out.append(r.global_batch / (r.replicas * r.accumulation))
            else:
                out.append(1.0)
        return np.array(out)

    @property
    def accumulation(self) -> np.ndarray:
        return np.array([r.accumulation for r in self.rows], dtype=float)

    @property
    def samples_per_step(self) -> np.ndarray:
        """Global samples per optimizer step."""
        return self.replicas * self.accumulation * self.micro_batch

    @property
    def step_time_s(self) -> np.ndarray:
        return np.array([r.step_time_s if r.step_time_s is not None
                         else sps / r.samples_per_s
                         for r, sps in zip(self.rows, self.samples_per_step, strict=True)])

    @property
    def samples_per_s(self) -> np.ndarray:
        return self.samples_per_step / self.step_time_s

    @property
    def strong_scaling(self) -> bool:
        """True when the per-device batch shrinks as devices grow (fixed global batch)."""
        b = self.micro_batch * self.accumulation
        return bool(self.batch_known and b[-1] < b[0])

    def optional(self, name: str) -> np.ndarray | None:
        """Column ``name`` as floats, or None unless every row has it."""
        values = [getattr(r, name) for r in self.rows]
        if any(v is None for v in values):
            return None
        return np.array(values, dtype=float)


def replica_runs(runs: Runs) -> Runs:
    """``runs`` of a job that splits its model (tp x pp x cp > 1) as data-parallel runs of model
    replicas, the data-parallel exchange being what grows as they scale: each row's devices
    become its replicas (dp), its nodes the servers one data-parallel group spans under
    Megatron / torchtitan placement (``layout.group_span``: tp innermost, then cp, then dp,
    pp outermost), and the split's tensor, context and pipeline traffic is part of a replica's
    compute. Unchanged where the runs do not split the model. Per-device batches are already
    per replica (module docstring); rank step times stay per device."""
    if runs.replica_devices == 1:
        return runs
    from scalesim.layout import group_span, replica_servers

    split = runs.model_split
    rows = []
    for r in runs.rows:
        _, nodes = group_span(r.replicas, split["tp"] * split["cp"], r.devices // r.nodes)
        rows.append(r.model_copy(update={"devices": r.replicas, "nodes": int(nodes),
                                         "tp": 1, "pp": 1, "cp": 1, "schedule": None,
                                         "virtual_stages": 1}))
    words = _split_words(tuple(split.values()))
    last = runs.rows[-1]
    g = last.devices // last.nodes
    per_node, _ = group_span(last.replicas, split["tp"] * split["cp"], g)
    servers = replica_servers(split["tp"], split["cp"], split["pp"], last.replicas,
                              int(per_node), g)
    m = runs.replica_devices
    return Runs(rows, runs.source, runs.notes, replica_split=words,
                bubble_micro_steps=runs.rows[0].pipeline_bubble, nic_servers_per_node=servers,
                replicas_per_rented_server=math.lcm(m, runs.devices_per_node) // m)


def on_servers_of(runs: Runs, server_devices: int, setting: str = KNOB.devices_per_node) -> Runs:
    """``runs`` on servers of ``server_devices`` devices each (``--gpus-per-node``, or the runs
    file's ``gpus_per_node``: ``setting`` names where it was given): each run used ``devices /
    nodes`` of them, so the fitted profile's server holds ``server_devices`` and the run's NIC
    share is the model's of a partial server (``predict.inter_nic_share``). ScalesimError (one
    line) where a run put more devices in one node, the runs split the model (their replicas'
    servers are placed from the runs' own nodes, ``replica_runs``), or the runs file already
    gives another value (``Runs.server_devices``: both named)."""
    from scalesim.bounds import check_number

    check_number("devices_per_node", server_devices, setting.format_map(
        {"devices_per_node": "--gpus-per-node"}))
    said = f"{setting} {server_devices}"

    def refused(line: str) -> ScalesimError:
        """One line naming the setting: by its flag in the CLI, by its control on the Diagnose
        page (a knob template, ``layout.knob_refusal``), as the runs file names it there."""
        return ScalesimError(knob_refusal(line, ("devices_per_node",)))

    if runs.server_devices is not None and runs.server_devices != server_devices:
        raise refused(f"{said}, but {as_literal(runs.source)} gives gpus_per_node "
                      f"{runs.server_devices}; give one, or the same in both")
    words = runs.nouns
    most = runs.used_per_node
    if server_devices < most:
        row = next(r for r in runs.rows if r.devices // r.nodes == most)
        raise refused(f"{said}: the run on {words.count(row.devices)} over "
                      f"{words.count(row.nodes, 'server')} put {most} on each; give at "
                      f"least {most}")
    if runs.replica_devices > 1:
        raise refused(f"{said}: not for runs that split the "
                      f"model ({_split_words(tuple(runs.model_split.values()))}): their "
                      "replicas are placed on the servers the runs name; drop it")
    return replace(runs, server_devices=int(server_devices))


def partial_server_note(runs: Runs) -> str:
    """'runs used 1 GPU per server; give --gpus-per-node N if your servers have more' where no
    server size is given (``server_devices``) and every run across servers used one device of
    each: the fitted server then holds one, so a named network's whole-server bandwidth is
    given to that one device, which reaches only its NIC share; '' otherwise."""
    if runs.server_devices is not None or runs.used_per_node != 1 or not np.any(runs.nodes > 1):
        return ""
    words = runs.nouns
    return knob_refusal(
        f"runs used 1 {words.gpu} per {words.server}; give {KNOB.devices_per_node} N if your "
        f"{words.servers} have more: the fitted {words.server} holds 1, so a faster network "
        f"is given all of its NICs, and extrapolations stay at 1 {words.gpu} per "
        f"{words.server}")


def thin(runs: Runs, max_runs: int | None = None) -> Runs:
    """At most ``max_runs`` (default MAX_FIT_RUNS) of ``runs``, evenly spaced in device-count
    order, keeping the first, the last and the two either side of the server boundary; the
    fit costs about 1 ms of CPU per run, so this bounds diagnose's time. Unchanged when small."""
    max_runs = max_runs or MAX_FIT_RUNS
    n = len(runs.rows)
    if n <= max_runs:
        return runs
    keep = set(np.linspace(0, n - 1, max_runs - 2).round().astype(int).tolist())
    single = np.flatnonzero(runs.nodes == 1)
    if single.size:
        keep |= {int(single[-1]), min(int(single[-1]) + 1, n - 1)}
    index = sorted(keep)
    note = (f"{n} distinct runs: the report and the fit use {len(index)} of them, evenly spaced "
            "by device count (the first, the last and the server boundary kept)")
    return replace(runs, rows=[runs.rows[i] for i in index], notes=(*runs.notes, note))


@dataclass(frozen=True)
class Scaling:
    devices: np.ndarray
    samples_per_s: np.ndarray
    speedup: np.ndarray
    efficiency: np.ndarray


def scaling(runs: Runs) -> Scaling:
    """Speed-up and efficiency against the first run (see the module docstring)."""
    x = runs.samples_per_s
    p = runs.devices.astype(float)
    speedup = p[0] * x / x[0]
    return Scaling(runs.devices, x, speedup, speedup / p)


def _check_both_rates(rows, source: str) -> None:
    """Without a batch the runs are weak scaling in units of work, their step times read from
    ``step_time_s``; rows that also give ``samples_per_s`` imply a batch, ``samples_per_s x
    step_time_s`` samples per step, which must be the same per device (per model replica) and
    micro-step in every such row (within 5 %), else the two columns contradict that reading:
    refused."""
    both = [(i, r, r.samples_per_s * r.step_time_s / (r.replicas * r.accumulation))
            for i, r in enumerate(rows, start=1)
            if r.samples_per_s is not None and r.step_time_s is not None]
    if len(both) < 2:
        return
    first = both[0]
    worst = max(both, key=lambda b: abs(b[2] / first[2] - 1.0))
    if abs(worst[2] / first[2] - 1.0) > 0.05:
        per = "device" if rows[0].replica_devices == 1 else "model replica"
        raise ScalesimError(
            f"{source}: samples_per_s x step_time_s gives {first[2]:.4g} samples per {per} a "
            f"micro-step in run {first[0]} but {worst[2]:.4g} in run {worst[0]}; give the batch "
            "(per_device_batch or global_batch) or only one of the two columns")


def _cell(value: str):
    value = value.strip()
    return None if value == "" else value


@contextlib.contextmanager
def _csv_cell_limit(chars: int):
    """csv.field_size_limit is process-wide: raise it for one read, then put it back."""
    previous = csv.field_size_limit(chars)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _is_comment(line: str) -> bool:
    """A line that starts with '#' (after blanks): a note, as pandas' ``comment='#'`` reads."""
    return line.lstrip().startswith("#")


def _csv_lines(text: str) -> tuple[int, object, str | None]:
    """(lines before the header, the lines from the header on, a skipped comment line that
    names the required columns: a header commented out, or None): blank and '#' comment lines
    before the header are skipped, a comment line after it is read as a blank line (which csv
    skips), so csv's line numbers plus the first count the file's lines."""
    lines = io.StringIO(text)
    skipped, commented = 0, None
    for line in lines:
        if line.strip() and not _is_comment(line):
            return skipped, itertools.chain([line], ("\n" if _is_comment(rest) else rest
                                                     for rest in lines)), commented
        names = [n.strip().lower() for n in line.lstrip().lstrip("#").split(",")]
        if all(c in names for c in REQUIRED):
            commented = line.strip()
        skipped += 1
    return skipped, iter(()), commented


def parse_csv_text(text: str, source: str) -> list[dict]:
    """The rows of a runs CSV as dicts of lower-case column names ('DEVICES' reads 'devices');
    blank and '#' comment lines skipped (``_csv_lines``)."""
    skipped, lines, commented = _csv_lines(text)
    reader = csv.DictReader(lines)
    try:
        with _csv_cell_limit(MAX_CSV_CELL_CHARS):
            return _csv_rows(reader, source, skipped, commented)
    except csv.Error as exc:
        line = skipped + reader.line_num + 1  # the record being read when it failed
        if str(exc).startswith("field larger"):
            raise ScalesimError(f"{source}: line {line} has a cell over {MAX_CSV_CELL_CHARS} "
                                "characters; not a runs file") from None
        raise ScalesimError(f"{source}: line {line}: malformed CSV ({exc})") from None


def _header_text(header: list[str], names: int = 12, chars: int = 40) -> str:
    """A header's column names for a message: the first ``names``, each at most ``chars``
    characters, control characters escaped (``errors.printable``): a binary or 4 MiB header
    line is not echoed whole to the terminal."""
    shown = [excerpt(h, chars) for h in header[:names]]
    more = f", ... ({len(header)} columns)" if len(header) > names else ""
    return ", ".join(shown) + more or "nothing"


# what a header of one column split by another character was saved with, and how to save it
_SEPARATORS = {";": ("semicolons (as Excel saves CSV where the decimal mark is a comma)",
                     "sep=';', decimal=','"),
               "\t": ("tabs", "sep='\\t'")}


def _other_separator(header: list[str]) -> str | None:
    """Why a header of one column that holds the required names split by ';' or a tab
    ('devices;nodes;samples_per_s', a European Excel export) is not read, and how to save it;
    None for any other header."""
    if len(header) != 1:
        return None
    for sep, (words, read) in _SEPARATORS.items():
        names = [h.strip() for h in header[0].split(sep)]
        if len(names) > 1 and all(c in names for c in REQUIRED):
            return (f"the values are separated by {words}; save the file with commas between "
                    f"values and a point as the decimal mark (e.g. pandas: read_csv(path, {read})"
                    ".to_csv(new_path, index=False))")
    return None


def unknown_columns_note(names) -> str | None:
    """'ignored column(s): gpu_util, comm_time_s (comm_s?)': the columns of a runs file that
    diagnose does not read, each near the name of a column the file lacks with that name (a
    typo would otherwise drop a measured part in silence; 'notes' beside a 'nodes' column is
    none), with the columns it reads; None where there are none."""
    import difflib

    unknown = sorted(set(names) - set(COLUMNS))
    if not unknown:
        return None
    absent = [c for c in COLUMNS if c not in set(names)]  # a column the file has is no typo's
    said = []
    for name in unknown:
        near = difflib.get_close_matches(name, absent, n=1, cutoff=0.68)
        said.append(excerpt(name, 40) + (f" ({near[0]}?)" if near else ""))
    return (f"ignored column(s): {', '.join(said)}; a runs file's columns are "
            f"{', '.join(COLUMNS)} (docs/diagnose.md)")


def _csv_rows(reader: csv.DictReader, source: str, skipped: int = 0,
              commented: str | None = None) -> list[dict]:
    """The rows of ``reader`` (its column names stripped and in lower case); ``skipped``: the
    file's lines before the reader's first, for the line numbers of messages; ``commented``: a
    comment line before them that names the required columns (``_csv_lines``)."""
    if commented is not None and (reader.fieldnames is None or not any(
            h.strip().lower() in REQUIRED for h in reader.fieldnames)):
        raise ScalesimError(f"{source}: the header line is a # comment ('{excerpt(commented, 60)}'"
                            "); remove its '#' (lines starting with # are skipped)")
    if reader.fieldnames is None:
        what = "no line but blank and # comment lines" if skipped else "empty file"
        raise ScalesimError(f"{source}: {what}; expected a header line with devices,nodes,"
                            "samples_per_s (or step_time_s)")
    header = [h.strip().lower() for h in reader.fieldnames]
    twice = sorted(h for h, n in Counter(header).items() if h and n > 1)  # linear: 100k columns
    if twice:  # csv.DictReader would keep the last column of each name, silently
        raise ScalesimError(f"{source}: column(s) {', '.join(excerpt(h, 40) for h in twice)} "
                            "appear more than once in the header; keep one of each")
    missing = [c for c in REQUIRED if c not in header]
    if "samples_per_s" not in header and "step_time_s" not in header:
        missing.append("samples_per_s or step_time_s")
    if missing and any(h.startswith(("clocks.", "clocks_", "temperature.gpu")) for h in header):
        raise ScalesimError(knob_refusal(
            f"{as_literal(source)}: an nvidia-smi log, not a runs file; give it with {KNOB.smi} "
            f"(scalesim diagnose --smi {as_literal(source)}, or beside runs or traces)"))
    if missing and (other := _other_separator(header)):
        raise ScalesimError(f"{source}: {other}")
    if missing:
        raise ScalesimError(f"{source}: missing column(s) {', '.join(missing)}; name them in "
                            "the first line that is not a # comment, e.g. devices,nodes,"
                            f"step_time_s (docs/diagnose.md); the header has "
                            f"{_header_text(header)}")
    rows = []
    for raw in reader:
        if None in raw:
            raise ScalesimError(f"{source}: line {skipped + reader.line_num} has more cells "
                                "than the header")
        cleaned = {k.strip().lower(): _cell(v or "") for k, v in raw.items() if k is not None}
        if any(v is not None for v in cleaned.values()):
            rows.append(cleaned)
    return rows


def parse_json_data(data, source: str) -> list[dict]:
    """The run objects of a JSON runs file (a list, or ``{"runs": [...]}``), each key stripped
    and in lower case, as a CSV header's (``_lower_keys``)."""
    if isinstance(data, dict) and "traceEvents" in data:
        raise ScalesimError(knob_refusal(
            f"{as_literal(source)}: this is a profiler trace, not a runs file; give it with "
            f"{KNOB.trace} (scalesim diagnose --trace {as_literal(source)})"))
    if isinstance(data, dict) and any(k.strip().lower() == "runs" for k in data):
        data = _lower_keys(data, "its top-level object", source)["runs"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ScalesimError(f"{source}: expected a JSON list of run objects (or {{\"runs\": "
                            "[...]}) with devices, nodes and samples_per_s or step_time_s")
    return [_lower_keys(run, f"run {i}", source) for i, run in enumerate(data, start=1)]


def _lower_keys(block: dict, where: str, source: str) -> dict:
    """``block`` with each key stripped and in lower case ('DEVICES' is devices, as in a CSV
    header); ScalesimError (one line) where two keys differ only in case or spaces, naming both
    in the file's order and which to keep: "run 2 gives both 'devices' and 'DEVICES', one key
    (keys are read in any case); keep 'devices' and remove the other"."""
    out, said = {}, {}
    for key, value in block.items():
        name = key.strip().lower()
        if name in out:
            both = [key, said[name]] if key == name else [said[name], key]
            keep = (f"keep '{excerpt(name, 40)}' and remove the other" if both[0] == name
                    else f"keep one of them, written '{excerpt(name, 40)}'")
            raise ScalesimError(f"{source}: {where} gives both '{excerpt(both[0], 40)}' and "
                                f"'{excerpt(both[1], 40)}', one key (keys are read in any "
                                f"case); {keep}")
        out[name], said[name] = value, key
    return out


def runs_from_records(records: list[dict], source: str, gpu: str | None = None) -> Runs:
    """Validate raw rows (from CSV or JSON) into Runs; every problem is one clear line, in the
    words of the runs' ``gpu`` where named (``Runs.gpu``: a GB200 NVL72's server is a rack)."""
    source = require_text(source, "source")
    gpu = None if gpu is None else require_text(gpu, "gpu")
    if not isinstance(records, list | tuple) or not all(isinstance(r, dict) for r in records):
        raise ScalesimError(f"{source}: expected a list of run records (dicts)")
    if len(records) < 2:
        raise ScalesimError(f"{source}: {len(records)} run(s); need runs at two or more device "
                            "counts to measure scaling")
    if len(records) > MAX_ROWS:
        raise ScalesimError(f"{source}: {len(records):,} runs, more than the {MAX_ROWS:,} "
                            "diagnose reads; aggregate repeated measurements first")
    rows = []
    for i, rec in enumerate(records, start=1):
        missing = [c for c in REQUIRED if rec.get(c) is None]
        if missing:
            raise ScalesimError(f"{source}: run {i} lacks {', '.join(missing)}")
        # an empty cell of a column with a default (accumulation, tp, pp, cp) takes the default
        rec = {k: v for k, v in rec.items() if v is not None or k not in DEFAULTED}
        try:
            rows.append(RunRow.model_validate(rec))
        except ValidationError as exc:
            raise ScalesimError(validation_message(exc, f"{source}: run {i}", RunRow)) from None
    for r in rows:
        if r.rank_step_times_s and len(r.rank_step_times_s) != r.devices:
            raise ScalesimError(f"{source}: the run on {r.devices} devices lists "
                                f"{len(r.rank_step_times_s)} rank step times; give one per rank")
    named = [(i, r.device) for i, r in enumerate(rows, start=1) if r.device is not None]
    other = next(((i, d) for i, d in named if d != named[0][1]), None)
    if other is not None:
        raise ScalesimError(f"{source}: run {named[0][0]} ran on '{excerpt(named[0][1])}', run "
                            f"{other[0]} on '{excerpt(other[1])}'; one device per runs file")
    server = _one_server_size(rows, source)
    split = [tuple(getattr(r, n) for n in MODEL_SPLIT) for r in rows]
    if any(s != split[0] for s in split):
        i = next(i for i, s in enumerate(split) if s != split[0])
        raise ScalesimError(
            f"{source}: run 1 splits the model as {_split_words(split[0])}, run {i + 1} as "
            f"{_split_words(split[i])}; diagnose compares runs of one model split scaled over "
            "data parallelism: give one split per runs file")
    # as each row runs it: an empty cell is the default schedule, the same as naming it
    pipelines = [(r.pipeline_schedule, r.virtual_stages) for r in rows]
    if any(s != pipelines[0] for s in pipelines):
        i = next(i for i, s in enumerate(pipelines) if s != pipelines[0])
        raise ScalesimError(
            f"{source}: run 1 runs its pipeline as schedule {pipelines[0][0] or '(none)'}, "
            f"virtual_stages {pipelines[0][1]}, run {i + 1} as {pipelines[i][0] or '(none)'}"
            f", {pipelines[i][1]}; give one schedule per runs file")
    with_batch = [r.per_device_batch is not None or r.global_batch is not None for r in rows]
    if any(with_batch) and not all(with_batch):
        raise ScalesimError(f"{source}: run {with_batch.index(False) + 1} has no batch; give "
                            "per_device_batch or global_batch in every row or in none")
    if not any(with_batch):
        _check_both_rates(rows, source)
        for i, r in enumerate(rows, start=1):
            timed = [c for c in TIMED if getattr(r, c) is not None]
            if timed and r.step_time_s is None:
                raise ScalesimError(
                    f"{source}: run {i} gives {', '.join(timed)} in seconds but only "
                    "samples_per_s and no batch, so its step time is unknown; add step_time_s "
                    "or a per_device_batch / global_batch column")
    runs_step_s = Runs(rows, source, ()).step_time_s
    for i, (r, t) in enumerate(zip(rows, runs_step_s, strict=True), start=1):
        for name in ("data_wait_s", "comm_s"):
            part = getattr(r, name)
            if part is not None and part > t:
                raise ScalesimError(f"{source}: run {i} has {name} {part:g} s, more than its "
                                    f"step time {t:.4g} s; both are seconds per optimizer step")
        if r.data_wait_s is not None and r.comm_s is not None \
                and r.data_wait_s + r.comm_s > RANK_TIME_SLACK * t:
            # the step holds both as parts of its own (docs/model.md §7: compute + exposed
            # communication + straggler wait + data stall), so together they fit in it
            raise ScalesimError(
                f"{source}: run {i} has data_wait_s {r.data_wait_s:g} s and comm_s "
                f"{r.comm_s:g} s, together {r.data_wait_s + r.comm_s:.4g} s, more than its "
                f"step time {t:.4g} s; each is a part of the step not spent computing, so "
                "correct the one that counts time twice (exposed communication is what no "
                "computation hides, not the collectives' whole time)")
        if r.rank_step_times_s:
            _check_slowest_rank(max(r.rank_step_times_s), t, f"{source}: run {i}")
    notes = []
    if unknown := unknown_columns_note(set().union(*records)):
        notes.append(unknown)
    if not any(with_batch):
        per = "device" if rows[0].replica_devices == 1 else "model replica"
        notes.append("no per_device_batch or global_batch: runs taken as weak scaling (same work "
                     f"per {per}); step times are per unit of work")
    groups = aggregate(rows, source, gpu, server)
    if len(groups) < 2:
        raise ScalesimError(f"{source}: all {len(rows)} runs are on {count(groups[0].devices, 'device')}; "
                            "need runs at two or more device counts to measure scaling")
    if len(groups) < len(rows):
        notes.append(f"{len(rows)} rows aggregated into {len(groups)} runs: the median of every "
                     "measured column per (devices, nodes, batch, accumulation)")
    runs = _one_device_exchanges_nothing(Runs(groups, source, tuple(notes), gpu=gpu))
    _check_measured_in_every_run(runs)
    check_units(runs)
    return runs if server is None else on_servers_of(runs, server, as_literal(f"{source}: gpus_per_node"))


def _one_device_exchanges_nothing(runs: Runs) -> Runs:
    """``runs`` with a one-device run's empty ``comm_s`` read as 0 where other runs give theirs
    (one device exchanges nothing: no column to fill in by hand), a note saying so."""
    rows = runs.rows
    if all(r.comm_s is None for r in rows) or all(r.comm_s is not None for r in rows):
        return runs
    filled = [r.model_copy(update={"comm_s": 0.0})
              if r.comm_s is None and r.devices == 1 else r for r in rows]
    if filled == rows:
        return runs
    words = runs.nouns
    return replace(runs, rows=filled, notes=(*runs.notes, (
        f"comm_s of the run on {words.count(1)} read as 0: one {words.device} exchanges nothing")))


def _check_measured_in_every_run(runs: Runs) -> None:
    """ScalesimError (one line) where a measured column is given for some of the aggregated runs
    only: the diagnosis reads ``MEASURED_PARTS`` where every run gives them (``Runs.optional``)
    and rank step times where every run of two or more ranks does (``fit_runs``: a 1-device
    run's one rank is its step), so a column missing in one run was dropped in silence for all."""
    for name in (*MEASURED_PARTS, "rank_step_times_s"):
        rows = [r for r in runs.rows if name != "rank_step_times_s" or r.devices > 1]
        given = [getattr(r, name) is not None for r in rows]
        if any(given) and not all(given):
            words = runs.nouns
            lacking = rows[given.index(False)].devices
            every = ("every row" if name != "rank_step_times_s" else
                     f"every run of two or more {words.devices}")
            none = " (0 where a run had none)" if name in ("data_wait_s", "comm_s") else ""
            raise ScalesimError(
                f"{runs.source}: the run on {words.count(lacking)} gives no {name}, other runs "
                f"do; give {name} in {every} or in none{none}: a measured column is read only "
                "where every run gives it")


def _check_slowest_rank(slowest: float, step: float, where: str) -> None:
    """ScalesimError (one line) where a run's slowest rank step time, s, is not its step time
    ``step``, s, within noise: a synchronous step waits for its slowest rank and ends with it,
    so that rank may exceed the step by ``RANK_TIME_SLACK`` (timed beside it) and fall below it
    by less than ``UNIT_FACTOR`` (past it, the ranks are in other units than the step)."""
    if slowest > RANK_TIME_SLACK * step:
        raise ScalesimError(f"{where} lists a rank step time of {slowest:g} s, "
                            f"{slowest / step:.3g}x its step time {step:.4g} s; the job's step "
                            "waits for its slowest rank, so correct the rank times or the "
                            "step time")
    if slowest * UNIT_FACTOR <= step:
        raise ScalesimError(f"{where} lists rank step times of at most {slowest:g} s, 1/"
                            f"{sig3(step / slowest)} of its step time {step:.4g} s; the job's step "
                            "ends with its slowest rank, so the rank times are likely in other "
                            "units than the step: write both in seconds per optimizer step")


def _one_server_size(rows: list[RunRow], source: str) -> int | None:
    """The runs file's ``gpus_per_node``, one value in every row (as ``device``, one per file),
    or None where no row gives it; ScalesimError (one line) where a row leaves it out or gives
    another."""
    given = [r.gpus_per_node for r in rows]
    if all(g is None for g in given):
        return None
    if None in given:
        raise ScalesimError(f"{source}: run {given.index(None) + 1} has no gpus_per_node; give "
                            "it in every row or in none (the devices one server holds)")
    other = next((i for i, g in enumerate(given) if g != given[0]), None)
    if other is not None:
        raise ScalesimError(f"{source}: run 1 gives gpus_per_node {given[0]}, run {other + 1} "
                            f"{given[other]}; one server size per runs file")
    return given[0]


def _split_words(split: tuple[int, ...]) -> str:
    """'tp 8 x pp 2 x cp 1' of a (tp, pp, cp) tuple."""
    return " x ".join(f"{n} {v}" for n, v in zip(MODEL_SPLIT, split, strict=True))


def _group_key(row: RunRow) -> tuple:
    """Rows measuring one configuration: devices, nodes, per-device batch and accumulation."""
    if row.per_device_batch is not None:
        micro = float(row.per_device_batch)
    elif row.global_batch is not None:
        micro = row.global_batch / (row.replicas * row.accumulation)
    else:
        micro = None
    return row.devices, row.nodes, micro, row.accumulation


def _median(values: list) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.median(present)) if present else None


def aggregate(rows: list[RunRow], source: str, gpu: str | None = None,
              server_devices: int | None = None) -> list[RunRow]:
    """One run per configuration, sorted by devices: repeated measurements of a configuration
    become their median (``step_time_s`` over the rows that give it, else ``samples_per_s``;
    ``data_wait_s``, ``comm_s``, ``steps_to_target`` over the rows that give them; rank step
    times rank by rank over the rows that list them). Two configurations on one device count
    (other nodes or batch) are an error: the report compares one run per device count.
    The refusals' words follow the runs' ``gpu`` and ``server_devices`` (``Runs.nouns``)."""
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(_group_key(row), []).append(i)
    keys = sorted(groups)
    for a, b in zip(keys, keys[1:], strict=False):
        if a[0] == b[0]:
            first, second = groups[a][0] + 1, groups[b][0] + 1
            raise ScalesimError(
                f"{source}: runs {first} and {second} are both on {a[0]} devices but differ in "
                "nodes, batch or accumulation; give one configuration per device count")
    out = []
    for key in keys:
        members = [rows[i] for i in groups[key]]
        if len(members) == 1:
            out.append(members[0])
            continue
        _check_repeats_agree(Runs(members, source, (), server_devices=server_devices, gpu=gpu),
                             groups[key])
        step = _median([r.step_time_s for r in members])
        update = {
            "step_time_s": step,
            "samples_per_s": None if step is not None else _median([r.samples_per_s
                                                                    for r in members]),
            "data_wait_s": _median([r.data_wait_s for r in members]),
            "comm_s": _median([r.comm_s for r in members]),
            "steps_to_target": _median([r.steps_to_target for r in members]),
        }
        ranks = [r.rank_step_times_s for r in members if r.rank_step_times_s]
        update["rank_step_times_s"] = (np.median(np.array(ranks), axis=0).tolist() if ranks
                                       else None)
        # Every member was validated; their medians need no second check.
        out.append(members[0].model_copy(update=update))
    return out


def _check_repeats_agree(runs: Runs, rows: list[int]) -> None:
    """ScalesimError (one line) where two repeated measurements of one configuration (rows
    ``rows``, 0-based) have step times ``UNIT_FACTOR`` or more apart: repeats differ by noise,
    so one is in other units (ms among s), and the median of two is their mean, neither run.
    ``runs``: the repeats (rows ``rows``), with the runs' GPU and server size for their words."""
    members, source = runs.rows, runs.source
    step = runs.step_time_s  # s, from step_time_s or samples_per_s
    fast, slow = int(np.argmin(step)), int(np.argmax(step))
    if step[slow] < UNIT_FACTOR * step[fast]:
        return
    first, second = sorted((fast, slow))
    words = runs.nouns
    raise ScalesimError(
        f"{source}: runs {rows[first] + 1} and {rows[second] + 1} measure one configuration "
        f"({words.count(members[0].devices)} on {words.count(members[0].nodes, 'server')}) at "
        f"{_timing_given(members[first])} and {_timing_given(members[second])}, "
        f"{sig3(step[slow] / step[fast])}x apart in step time; repeated measurements differ by "
        "noise, so one is likely in other units than the other: correct it or remove it")


def _timing_given(row: RunRow) -> str:
    """'step_time_s 0.11' or 'samples_per_s 1,900': the row's timing as its file gives it."""
    if row.step_time_s is not None:
        return f"step_time_s {number(row.step_time_s)}"
    return f"samples_per_s {number(row.samples_per_s)}"


def load_runs(path: str | os.PathLike[str], gpu: str | None = None) -> Runs:
    """Read runs from a ``.csv`` or ``.json`` file, its refusals in ``gpu``'s words
    (``runs_from_records``)."""
    from scalesim.jsonio import read_text

    path = require_path(path, "path")
    gzipped = False  # probed on a regular file only: a pipe (<(cat runs.csv)) is read once
    if os.path.isfile(path):
        try:
            with open(path, "rb") as probe:
                gzipped = probe.read(2) == b"\x1f\x8b"
        except OSError:
            pass  # read_text says why it cannot be read
    if gzipped:
        raise ScalesimError(f"{Path(path)}: a gzip file, as torch.profiler saves traces "
                            f"(.json.gz); read a trace with scalesim diagnose --trace {Path(path)}; "
                            "a runs file is CSV or JSON text")
    return parse_runs_text(read_text(path), str(Path(path)), gpu)


def _json_scalar(text: str, source: str) -> bool:
    """Whether a ``.json`` file holds one JSON value that is no list or object ('null', '"x"',
    '5'), which was read as a CSV header ("the header has null"); a CSV named .json stays CSV."""
    if not source.lower().endswith(".json"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parse_runs_text(text: str, source: str, gpu: str | None = None) -> Runs:
    """Runs from file contents; JSON if it starts with ``[`` or ``{`` (or is a ``.json`` file of
    one JSON value), CSV otherwise. ``gpu``: the runs' GPU as --gpu names it (None: not named),
    for the refusals' words (``runs_from_records``)."""
    text, source = require_text(text, "text"), require_text(source, "source")
    text = text.removeprefix("\ufeff")  # Excel's "CSV UTF-8" starts with a byte-order mark
    stripped = text.lstrip()
    if not stripped:  # neither format: say both (a .json file was told of a CSV header alone)
        raise ScalesimError(f"{source}: empty file; a runs file is CSV with a header line "
                            "devices,nodes,samples_per_s (or step_time_s), or a JSON list of "
                            "such runs (docs/diagnose.md)")
    if stripped.startswith(("[", "{")) or _json_scalar(stripped, source):
        data = parse_json_text(text, source)
        return runs_from_records(parse_json_data(data, source), source, gpu)
    return runs_from_records(parse_csv_text(text, source), source, gpu)
