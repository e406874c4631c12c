"""Fit the step model's free parameters to measured runs, and extrapolate with an uncertainty band.

Free parameters (each fitted only when the runs can show it, else fixed and said so):

- ``per_sample_s`` and ``overhead_s``: the compute curve ``t = overhead_s + per_sample_s * b``
  (the overhead only when the runs use two or more per-device batches);
- ``intra_transfer_s`` / ``inter_transfer_s``: seconds to move the whole gradient once at a link
  level's bus bandwidth, ``S / busbw`` (``S`` gradient bytes). With ``--params`` the bandwidth
  ``busbw = S / transfer`` is reported in GB/s; without, a nominal ``S`` of 1 GB sets only the
  bucket layout, and transfer times are what is fitted. The runs' exchange (``RunsExchange``:
  DDP, or ZeRO-1/2/3 under FSDP or DeepSpeed) decides what the model sends at that bandwidth:
  the transfer time stays the link's figure, an all-reduce of the gradient (docs/diagnose.md);
- ``overlap``: share ``phi`` of the bucketed all-reduce that overlaps backward; the step is the
  linear blend ``phi * step(overlap on) + (1 - phi) * step(overlap off)`` of the model's two cases;
- ``jitter_cv``: std/mean of a micro-step (the straggler term), unless ``rank_step_times_s`` is
  measured: then each run's straggler delay is used as is (the model's slow-device delay): one
  slow device's time less the median of the other ranks, else ``max - median`` of its rank
  times (``runs_slow_rank.straggler_delays``);
- ``node_loader_samples_per_s``: the input supply of one server, shared by its devices
  (``supply per device = node supply / devices per node``), which caps throughput per server.

The fit is bounded least squares (``scipy.optimize.least_squares``, dogbox) on
``log(model step / measured step)`` for every run, plus, where measured, ``(model - measured) /
measured step`` for exposed communication (``comm_s``) and data wait (``data_wait_s``). Weak
priors (weight 0.01 each) pull ``phi`` towards 1, ``jitter_cv`` towards 0 and the loader supply
towards "not limiting", so parameters the runs cannot separate settle on the ordinary case.
The parameters with no prior of their own (compute, transfer times) get a tie-break prior,
``TIE_WEIGHT`` (1e-3) per unit of log towards their start values (``_setup``: compute per sample
the fastest run's step per sample, transfer times 0.2 and 0.5 of the median step): every
direction of the cost then has a curvature, so the problem has one optimum where the runs leave
a flat valley (two runs paced by the input supply: no residual moves with compute or transfer,
and scipy releases stopped at different points of it, data stall 63 % or 138 %). It moves a
parameter the runs show by ~TIE_WEIGHT^2 / (their curvature) of its distance in log, nothing
at the noise of measured runs. The solver is dogbox (it lands on the bounds where ``phi`` and
``jitter_cv`` settle, where trust-region reflective crawled) to ``FIT_TOL`` 1e-12 from two
starts, the lower cost kept; where that leaves the runs' residuals above ``RESTART_RMS`` (1 %), also
from the best of 16 spread points (a local minimum left behind, ``FitProblem.best_solution``).
Parameters no run's residual moves with at the fit
(``FitResult.not_shown``) are held at their start value by the tie-break alone: a note says so,
and the bands vary them over the range the runs allow (``held_ranges``: draws across it, and the
prediction at both its ends held, ``held_ends``). The problem itself is ``fit_problem`` (``FitProblem.cost``).
The Jacobian is forward differences at scipy's '2-point' steps (``_forward_steps``), all its
columns in one broadcast model call.

Uncertainty: ``cov = s^2 (J^T J)^+`` at the solution (``J`` the Jacobian of the residuals in the
fitted coordinates, log for positive parameters; parameters held at a bound are left out),
``s^2`` the residual variance over the degrees of freedom, floored at 2 % (timing noise) and
taken as 4.4 % (or the runs' rms residual, where larger) when there are no degrees of freedom.
The extrapolation band is described in
``extrapolate``: draws from ``N(x, cov)`` kept only where the measured runs cannot rule them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR
from scalesim.bounds import QUANTITIES, check_number, clip
from scalesim.device_nouns import nouns_for
from scalesim.errors import ScalesimError, require_model
from scalesim.figures import GIB_BYTES, sig3
from scalesim.layout import DEFAULT_RECOMPUTE_STYLE
from scalesim.model import collectives as coll
from scalesim.model.memory import STRATEGIES, ddp_bucket_copy_bytes_per_param
from scalesim.model.overlap import OVERLAPPED_SHARE
from scalesim.model.sharding import FRAMEWORKS, GRAD_SYNCS
from scalesim.model.step import StepInputs, StepResult, evaluate
from scalesim.model.stragglers import expected_max_normal
from scalesim.quantiles import CHI2_95_ONE_DOF, chi2_quantile
from scalesim.runs import Runs
from scalesim.runs_slow_rank import straggler_delays

if TYPE_CHECKING:
    from scalesim.runs_model import RunsModel

NOMINAL_GRADIENT_BYTES = 1e9  # bucket layout only, when --params is not given
# Link latency is not fitted: runs exchange one gradient size, so step times cannot separate a
# per-step latency from bandwidth, and the fitted transfer time absorbs both. Fixed absolute
# latencies would be wrong whenever step times are relative (no per-device batch given) or the
# gradient size is nominal (no --params), so they are 0.
INTRA_LATENCY_S = 0.0
INTER_LATENCY_S = 0.0
PRIOR_WEIGHT = 0.01
# The tie-break prior of the parameters with no prior of their own (compute, transfer times): a
# pull of TIE_WEIGHT per unit of log towards the start value. It decides where the runs do not (a
# flat direction of the cost); elsewhere it moves a parameter by TIE_WEIGHT^2 / (TIE_WEIGHT^2 + c)
# of its distance in log, c the runs' curvature along it: little unless the runs' standard error
# on it is beyond ~s / TIE_WEIGHT (s the noise, 2-4.4 %: +-2000 % and more).
TIE_WEIGHT = 1e-3
FIT_TOL = 1e-12  # least_squares' ftol, xtol and gtol: stop at the optimum, not near it
MAX_NFEV = 400  # evaluations per start: most fits take under 150; a kink of the model (a `max`) can
# hold the solver to the end, where the cost is within ~1e-5 of its least (docs/performance.md)
SHOWN_SLOPE = 1e-9  # a data residual moving less than this per unit of x: the runs do not show it
LOADER_PRIOR_SCALE = 5.0  # the loader cap must earn its place: 0.05 per decade-ish of cap
NOISE_FLOOR = 0.02
# With no degrees of freedom left the runs cannot show their noise: the band takes the model's,
# the normal per-run error whose median absolute value is the validation's median error
# (scalesim.accuracy; a normal's median absolute value is 0.6745 sigma): 0.030 / 0.6745 = 4.4 %.
NOISE_NO_DOF = DATA_PARALLEL_MEDIAN_ERROR / 0.6745
# Bytes per parameter ZeRO's all-gathers send, fitted from DDP runs on GPUs whose workload is
# not named: 16-bit parameters (bf16/fp16 mixed precision, as the fitted workload's memory counts
# them: the Workload's 2-byte weights and gradients), whatever DDP all-reduced (fp32 under
# autocast: 4). CPU processes gather what they reduced (``ddp_gathered_bytes``).
DDP_GATHERED_BYTES = 2.0
UNCONSTRAINED_INTER_RANGE = (1.0, 20.0)  # inter transfer / intra transfer when never measured
Z95 = 1.96  # two-sided 95 % normal quantile (extrapolation and remedy-gain bands)
BAND_SAMPLES = 400  # parameter draws for the extrapolation band
# Restart: where the two starts leave the runs' residuals above RESTART_RMS (root mean square of
# the data residuals, ~log step ratio), the fit may have stopped in a local minimum (a `max` of
# the model: compute, input supply or exchange pacing a run). It then screens RESTART_POINTS
# Latin-hypercube points of the bounds with SCREEN_NFEV evaluations each and solves to the
# optimum the RESTART_KEEP best of those already below the two starts' cost, keeping the lowest.
# On 225 synthetic fits (model-made runs, seven parameters drawn at random) two starts missed the
# true optimum 10 times, the restart 2-3 (within 4 % of its cost, residuals under 0.5 %); on noisy
# runs it finds nothing better and costs the screening, ~0.2-0.4 s (benchmarks/fit_restart.py;
# before session 52 solved the starts one after another, now in lockstep: ``solve_all``).
RESTART_RMS = 0.01
RESTART_POINTS = 16
SCREEN_NFEV = 20
RESTART_KEEP = 2


@dataclass(frozen=True)
class RunsExchange:
    """How the runs exchanged gradients (and ZeRO's states) over their data-parallel ranks: the
    ``Scenario`` names ``strategy`` (ddp, zero1-3), ``zero_framework`` (fsdp, deepspeed) and
    ``grad_sync`` (every-micro-step, once-per-step: FSDP's ``no_sync``), docs/model.md §4;
    ``wire_bytes_per_param``: bytes per gradient element on the wire (1 where the parameters are
    unknown: the nominal gradient is counted in bytes); ``blocks``: FSDP-wrapped blocks (the
    runs' transformer layers; 0: estimated from the parameters, as ``predict`` does);
    ``shard_group``: hybrid sharding's ranks that shard the ZeRO states (FSDP HYBRID_SHARD,
    torchtitan's data_parallel_shard_degree; 0: all the data-parallel ranks), docs/model.md §16:
    a run on fewer ranks than it shards over all of them."""

    strategy: str = "ddp"
    zero_framework: str = "fsdp"
    grad_sync: str = "every-micro-step"
    wire_bytes_per_param: float = 1.0
    blocks: int = 0
    shard_group: int = 0
    # bytes per parameter of the gradients' reduction where stated: the nominal gradient's (1,
    # the wire's: no fp32 main grads added to bytes counted as parameters, docs/model.md §4);
    # None: the framework's default (memory.reduce_bytes_per_param_of)
    reduce_bytes_per_param: float | None = None
    # bytes per parameter ZeRO's all-gathers send, where the runs gathered none (DDP: their
    # measured exchange is the gradients' reduction, which under torch.autocast is fp32): the
    # parameters' dtype, the runs' workload's wire_bytes_per_param (16-bit: 2); None: not named
    # (ddp_gathered_bytes, docs/model.md §4 "Diagnose's fitted workload")
    gathered_bytes_per_param: float | None = None
    # the runs' GPU's datasheet memory bandwidth, GB/s, where known (diagnose --workload --gpu):
    # PyTorch DDP's bucket copies (memory.ddp_bucket_copies_s) are then charged to each
    # multi-device run's compute, as predict charges them on the fitted profile, whose hardware
    # carries it; None: not known, and a fit of runs that paid them reads them as exchange
    # (docs/model.md §4 "Their copies, in time")
    memory_bandwidth_GBps: float | None = None

    def __post_init__(self):
        from scalesim.schemas import grad_sync_deepspeed_error, grad_sync_refused

        for name, known in (("strategy", STRATEGIES), ("zero_framework", FRAMEWORKS),
                            ("grad_sync", GRAD_SYNCS)):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in known:
                raise ScalesimError(f"{name} {value!r}: expected one of {', '.join(known)}")
        if grad_sync_refused(self.zero_framework, self.grad_sync):
            raise ScalesimError(grad_sync_deepspeed_error())
        check_number("wire_bytes_per_param", self.wire_bytes_per_param, "wire_bytes_per_param")
        check_number("wire_bytes_per_param", self.gathered_bytes_per_param,
                     "gathered_bytes_per_param", optional=True)
        check_number("memory_bandwidth_GBps", self.memory_bandwidth_GBps,
                     "memory_bandwidth_GBps", optional=True)
        for name in ("blocks", "shard_group"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                raise ScalesimError(f"{name} {value!r}: expected a whole number, 0 or more")
        if self.shard_group:
            from scalesim.bounds import QUANTITIES
            from scalesim.layout import shard_group_refusal

            why = (QUANTITIES["shard_group"].problem(self.shard_group)
                   or shard_group_refusal(self.shard_group, self.strategy, self.zero_framework))
            if why:
                raise ScalesimError(why)

    def step_fields(self) -> dict:
        """Its ``StepInputs`` fields but for the parameters (codes, as ``predict`` sets them)."""
        return {"strategy": STRATEGIES[self.strategy], "framework": FRAMEWORKS[self.zero_framework],
                "grad_sync": GRAD_SYNCS[self.grad_sync], "blocks": self.blocks,
                "wire_bytes_per_param": self.wire_bytes_per_param,
                "reduce_bytes_per_param": (np.nan if self.reduce_bytes_per_param is None
                                           else self.reduce_bytes_per_param),
                "shard_group": self.shard_group}

    @property
    def sharded(self) -> bool:
        return self.strategy != "ddp"

    def names(self) -> dict[str, str]:
        """Its scenario names (``Scenario`` fields; the shard group is the layout's)."""
        return {"strategy": self.strategy, "zero_framework": self.zero_framework,
                "grad_sync": self.grad_sync}

    def described(self) -> dict:
        """The reports' ``details.exchange``: its names, and its shard group where it has one."""
        return {**self.names(), **({"shard_group": self.shard_group} if self.shard_group else {})}

    def run_problem(self, devices: int) -> str:
        """Why the shard group cannot run over ``devices`` data-parallel ranks ('' where it can:
        no shard group, at least as many ranks as it, or a divisor of them)."""
        from scalesim.layout import shard_group_problem

        return shard_group_problem(self.shard_group or None, int(devices))

    def label(self, aside: str = "") -> str:
        """'zero3 (FSDP FULL_SHARD)', 'ddp (PyTorch DDP)': the strategy and how it ran; with
        ``aside``, 'zero3 (FSDP FULL_SHARD; DeepSpeed stage 3 alike)'."""
        from scalesim.model.zero_exchange import framework_label

        how = framework_label(self.strategy, self.zero_framework, self.grad_sync,
                              hybrid=bool(self.shard_group))
        if self.shard_group:
            how += f", shard group {self.shard_group}"
        return f"{self.strategy} ({how}{'; ' + aside if aside else ''})"


DDP_EXCHANGE = RunsExchange()


@dataclass(frozen=True)
class Layout:
    """Per-row layout of runs (measured or extrapolated)."""

    devices: np.ndarray
    nodes: np.ndarray
    micro_batch: np.ndarray
    accumulation: np.ndarray
    straggler_delay_s: np.ndarray  # measured delay, s (``runs_slow_rank``; 0 when unknown)
    # micro-step times of pipeline fill and drain a step, where a device is a pipelined model
    # replica (``Runs.bubble_micro_steps``); 0: none
    bubble_micro_steps: float = 0.0
    # a fetch before each micro-step's forward of each run, s, beside the fitted overhead
    # (``StepInputs.fetch_s``): its data wait read as a fixed cost of each fetch
    # (``runs_data_wait.fetch_layout``); 0: none
    fetch_s: np.ndarray | float = 0.0

    @property
    def devices_per_node(self) -> np.ndarray:
        return self.devices // self.nodes


@dataclass
class FitResult:
    values: dict[str, float]  # every parameter, fitted or fixed
    fitted: list[str]  # names of the fitted ones, in x order
    x: np.ndarray
    cov: np.ndarray  # covariance of x (fitted coordinates)
    noise_rel: float  # s: relative noise of one run's throughput
    residuals_rel: np.ndarray  # model / measured step time - 1, per run
    breakdown: StepResult  # the model at the measured runs
    gradient_bytes: float
    params_known: bool
    devices_per_node: int
    multi_node_measured: bool
    rank_times_measured: bool
    layout: Layout  # the measured runs' layout the fit was made on (``FitProblem.layout``)
    exchange: RunsExchange = DDP_EXCHANGE  # how the runs exchanged (``FitProblem.exchange``)
    lower: np.ndarray = field(default_factory=lambda: np.empty(0))  # bounds of x
    upper: np.ndarray = field(default_factory=lambda: np.empty(0))
    at_bound: list[str] = field(default_factory=list)  # fitted but held at a bound
    not_shown: list[str] = field(default_factory=list)  # no run moves with it: held at its start
    notes: list[str] = field(default_factory=list)
    # of the transfer times in not_shown, the longest the runs allow with the other parts as
    # fitted (``held_upper_bounds``), s: a slower link misfits them; absent where none does
    held_at_most_s: dict[str, float] = field(default_factory=dict)
    # of each parameter in not_shown, the range of it the runs allow, the other parts as fitted
    # (``held_ranges``: its 95 % profile-likelihood interval), (low, high) in fitted coordinates
    held_range_x: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def rmse_rel(self) -> float:
        return float(np.sqrt(np.mean(self.residuals_rel**2)))

    def busbw_GBps(self, level: str) -> float:
        return self.gradient_bytes / self.values[f"{level}_transfer_s"] / coll.GB

    def stderr(self, name: str) -> float | None:
        """Standard error of a fitted parameter in its fitted coordinate: relative (log) for the
        positive ones, absolute for ``overlap`` and ``jitter_cv``; None where not estimated."""
        if name not in self.fitted or name in self.at_bound or name in self.not_shown:
            return None
        i = self.fitted.index(name)
        return float(np.sqrt(max(self.cov[i, i], 0.0)))


_LOG = {"per_sample_s", "overhead_s", "intra_transfer_s", "inter_transfer_s", "node_loader_samples_per_s"}
# Parameters with no prior of their own, held by the tie-break prior where the runs cannot show
# them; in the words of the fit's note.
TIED_WORDS = {
    "per_sample_s": "compute per sample",
    "overhead_s": "fixed cost per micro-step",
    "intra_transfer_s": "intra-server gradient transfer",
    "inter_transfer_s": "inter-server gradient transfer",
}


def measured_layout(runs: Runs) -> Layout:
    return Layout(runs.devices, runs.nodes, runs.micro_batch, runs.accumulation,
                  straggler_delays(runs), runs.bubble_micro_steps)


def step_inputs(values: dict[str, float], layout: Layout, gradient_bytes: float, overlap: bool,
                exchange: RunsExchange = DDP_EXCHANGE) -> StepInputs:
    """The model's inputs for ``layout`` with parameter ``values``, exchanging ``gradient_bytes``
    as ``exchange`` says."""
    g = layout.devices_per_node
    # the passes a slow device slows: the fetch before forward, the same on every device, aside
    micro = values["overhead_s"] + values["per_sample_s"] * layout.micro_batch
    slow = 1.0 + layout.straggler_delay_s / (layout.accumulation * micro)
    return StepInputs(
        devices=layout.devices,
        devices_per_node=g,
        micro_batch=layout.micro_batch,
        accumulation=layout.accumulation,
        overhead_s=values["overhead_s"],
        fetch_s=layout.fetch_s,  # before forward, outside the passes the exchange hides behind
        per_sample_s=values["per_sample_s"],
        optimizer_step_s=0.0,
        memory_bandwidth_GBps=(np.nan if exchange.memory_bandwidth_GBps is None
                               else exchange.memory_bandwidth_GBps),  # DDP's copies, where known
        backward_fraction=2.0 / 3.0,
        bubble_micro_steps=layout.bubble_micro_steps,
        params=gradient_bytes / exchange.wire_bytes_per_param,
        **exchange.step_fields(),
        intra_latency_s=INTRA_LATENCY_S,
        intra_busbw_GBps=gradient_bytes / values["intra_transfer_s"] / coll.GB,
        inter_latency_s=INTER_LATENCY_S,
        inter_busbw_GBps=gradient_bytes / values["inter_transfer_s"] / coll.GB,
        overlap=overlap,
        loader_samples_per_s=values["node_loader_samples_per_s"] / g,
        jitter_cv=values["jitter_cv"],
        slow_factor=slow,
    )


def ddp_copy_bytes(fit: FitResult) -> np.ndarray:
    """Bytes PyTorch DDP's bucket copies read and write in each measured run's step
    (``memory.ddp_bucket_copy_bytes_per_param`` of the fit's parameters; 0 on one device and
    for an exchange that makes none), whether or not the fit could price them."""
    x = step_inputs(fit.values, fit.layout, fit.gradient_bytes, True, fit.exchange)
    return ddp_bucket_copy_bytes_per_param(x.strategy, x.framework, x.grad_bytes_per_param,
                                           x.reduce_bytes_per_param,
                                           ranks=x.devices) * np.asarray(x.params, dtype=float)


def ddp_copies_s(fit: FitResult) -> np.ndarray:
    """PyTorch DDP's bucket copies in each measured run's step as the fit charged them to its
    compute, s (``ddp_copy_bytes`` at ``RunsExchange.memory_bandwidth_GBps``, as
    ``memory.ddp_bucket_copies_s`` prices them); 0 where that bandwidth is not known (the fit
    then reads them as exchange)."""
    if fit.exchange.memory_bandwidth_GBps is None:
        return np.zeros(len(fit.layout.devices))
    return ddp_copy_bytes(fit) / (fit.exchange.memory_bandwidth_GBps * 1e9)


def blended(values: dict[str, float], layout: Layout, gradient_bytes: float,
            exchange: RunsExchange = DDP_EXCHANGE) -> StepResult:
    """The model with a share ``overlap`` of overlapped communication (linear blend); both
    cases in one broadcast call (a leading axis: overlap on, off)."""
    rows = np.shape(layout.devices + values["per_sample_s"])
    overlap = np.array([True, False]).reshape((2,) + (1,) * len(rows))
    result = evaluate(step_inputs(values, layout, gradient_bytes, overlap, exchange))
    shape = np.broadcast_shapes(overlap.shape, rows)

    def both(name):  # a field on the (overlap, rows) axes: one that no overlap changes has none
        field = np.asarray(getattr(result, name))
        return field if field.shape == shape else np.broadcast_to(field, shape)

    phi = values["overlap"]
    mixed = {}
    for name in ("step_time_s", "compute_s", "bubble_s", "exposed_comm_s", "straggler_s",
                 "data_stall_s", "comm_total_s"):
        on, off = both(name)
        mixed[name] = phi * on + (1.0 - phi) * off
    mixed["samples_per_s"] = both("global_batch")[0] / mixed["step_time_s"]
    return StepResult(
        comm_bytes=both("comm_bytes")[0],
        nodes=both("nodes")[0],
        global_batch=both("global_batch")[0],
        memory_bytes=both("memory_bytes")[0],
        fits=both("fits")[0],
        **mixed,
    )


def _setup(runs: Runs):
    """Initial values, bounds and which parameters are free, from what the runs can show."""
    step = runs.step_time_s
    work = runs.micro_batch * runs.accumulation
    node_thr = runs.samples_per_s / runs.nodes
    med = float(np.median(step))
    g_rows = runs.devices // runs.nodes
    slots = runs.micro_batch * (runs.accumulation + runs.bubble_micro_steps)  # a pipeline's too
    init = {
        "per_sample_s": float(np.min(step / slots)),
        "overhead_s": 0.0,
        "intra_transfer_s": 0.2 * med,
        "inter_transfer_s": 0.5 * med,
        "overlap": 0.7,
        "jitter_cv": 0.02,
        "node_loader_samples_per_s": 1e3 * float(np.max(node_thr)),
    }
    bounds = {
        "per_sample_s": (init["per_sample_s"] * 1e-3, init["per_sample_s"] * 10.0),
        "overhead_s": (med * 1e-9, float(np.max(step)) * 10.0),
        "intra_transfer_s": (med * 1e-6, float(np.max(step)) * 100.0),
        "inter_transfer_s": (med * 1e-6, float(np.max(step)) * 100.0),
        "overlap": (0.0, 1.0),
        "jitter_cv": (0.0, 0.5),
        "node_loader_samples_per_s": (0.05 * float(np.min(node_thr)), init["node_loader_samples_per_s"]),
    }
    free = ["per_sample_s"]
    notes = []
    words = runs.nouns
    if np.unique(work).size >= 2:
        free.append("overhead_s")
        init["overhead_s"] = 0.1 * float(np.min(step)) / float(np.max(runs.accumulation))
    else:
        notes.append(
            f"one per-{words.device} batch only: fixed overhead per micro-step not "
            "separable from per-sample time (taken as 0)"
        )
    if np.any(g_rows > 1):
        free.append("intra_transfer_s")
    if np.any(runs.nodes > 1):
        free.append("inter_transfer_s")
    else:
        notes.append(f"no run crosses {words.servers}: the {words.link('inter_node')} is not measured")
    if np.any(runs.devices > 1):
        free.append("overlap")
    rank_times = all(r.rank_step_times_s for r in runs.rows if r.devices > 1)
    if not rank_times and np.sum(runs.devices > 1) >= 2:
        free.append("jitter_cv")
    else:
        init["jitter_cv"] = 0.0
    free.append("node_loader_samples_per_s")
    init["node_loader_samples_per_s"] = bounds["node_loader_samples_per_s"][1] / np.e
    return init, bounds, free, notes, rank_times


def _busiest_node_supply(runs: Runs, wait) -> float:
    """Per-server supply that would just pace the run with the most data wait (or throughput)."""
    i = (
        int(np.argmax(wait / runs.step_time_s))
        if wait is not None and np.any(wait > 0)
        else int(np.argmax(runs.samples_per_s / runs.nodes))
    )
    return float(runs.samples_per_s[i] / runs.nodes[i])


def _to_x(name: str, value: float) -> float:
    return float(np.log(value)) if name in _LOG else float(value)


def from_fitted_x(name: str, x: float) -> float:
    """A fitted coordinate ``x`` of parameter ``name`` as its value (the times and the loader
    rate are fitted in log)."""
    return float(np.exp(x)) if name in _LOG else float(x)


DIFF_STEP = 1e-4  # relative forward-difference step of the fit's Jacobian


def _forward_steps(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Forward-difference steps: ``DIFF_STEP * |x|`` signed as ``x`` (sqrt(eps) * max(1, |x|)
    where that rounds away), reversed where it would leave the bounds, else the distance to the
    farther bound (scipy.optimize's approx_derivative rules for '2-point' with ``rel_step``)."""
    sign = np.where(x >= 0, 1.0, -1.0)
    step = DIFF_STEP * sign * np.abs(x)
    step = np.where(
        (x + step) - x == 0, np.sqrt(np.finfo(float).eps) * sign * np.maximum(1.0, np.abs(x)), step
    )
    below, above = x - lo, hi - x
    outside = (x + step < lo) | (x + step > hi)
    fits = np.abs(step) <= np.maximum(below, above)
    step = np.where(outside & fits, -step, step)
    return np.where(fits, step, np.where(above >= below, above, -below))


@dataclass(frozen=True)
class FitProblem:
    """The regularised least-squares problem ``fit_runs`` solves: minimise ``cost(x) =
    0.5 * sum(residuals(x)^2)`` over ``lower <= x <= upper`` (``x`` the free parameters in fitted
    coordinates, log for positive ones), from each of ``starts``; with what it was built from,
    so ``fit_runs`` reads them off it rather than building them again."""

    free: list[str]
    init: dict[str, float]  # every parameter's start (and, fixed ones, held) value
    reference: np.ndarray  # the tie-break prior's centre of each free parameter (x coordinates)
    lower: np.ndarray
    upper: np.ndarray
    starts: list[np.ndarray]
    n_data: int  # the first n_data residuals are the runs' own; the rest are priors
    residual_rows: Callable[[np.ndarray], np.ndarray]  # (m, free) -> (m, residuals)
    layout: Layout  # the measured runs' layout (``measured_layout``), built once
    gradient_bytes: float  # params * wire bytes per param, nominal without params
    exchange: RunsExchange  # how the runs exchanged, with their wire bytes per element
    rank_times_measured: bool  # whether the runs carry per-rank step times
    notes: list[str]  # what the setup says of the runs (fit_runs adds the fit's own)

    def values_of(self, x) -> dict:
        """Parameters of each row of ``x`` (shape (m, free)): (m, 1) arrays, or floats for one x."""
        rows = np.ndim(x) == 2
        vals = {k: np.full((len(x), 1), v) for k, v in self.init.items()} if rows else dict(self.init)
        for j, name in enumerate(self.free):
            if rows:
                vals[name] = np.exp(x[:, j : j + 1]) if name in _LOG else x[:, j : j + 1]
            else:
                vals[name] = from_fitted_x(name, x[j])
        if "inter_transfer_s" not in self.free:
            vals["inter_transfer_s"] = vals["intra_transfer_s"]
        return vals

    def residuals(self, x: np.ndarray, rows: Callable | None = None) -> np.ndarray:
        """The residuals at ``x``, through ``rows`` (default ``residual_rows``)."""
        rows = self.residual_rows if rows is None else rows
        return rows(np.asarray(x, dtype=float)[None, :])[0]

    def cost(self, x: np.ndarray) -> float:
        """What the fit minimises: half the sum of squared residuals (data and priors)."""
        return 0.5 * float(np.sum(self.residuals(x) ** 2))

    def jacobian(self, x: np.ndarray, rows: Callable | None = None) -> np.ndarray:
        """Forward differences as least_squares' '2-point' with ``diff_step`` takes them (same
        steps, turned back at a bound), its columns evaluated in one broadcast call (through
        ``rows``, default ``residual_rows``)."""
        step = _forward_steps(x, self.lower, self.upper)
        stack = np.repeat(x[None, :], len(x) + 1, axis=0)
        stack[np.arange(1, len(x) + 1), np.arange(len(x))] += step
        f = (self.residual_rows if rows is None else rows)(stack)
        return ((f[1:] - f[0]) / ((x + step) - x)[:, None]).T

    def data_rms(self, fun: np.ndarray) -> float:
        """Root mean square of the runs' own residuals in ``fun`` (priors left out)."""
        return float(np.sqrt(np.mean(np.asarray(fun)[: self.n_data] ** 2)))

    def spread_starts(self, m: int = RESTART_POINTS) -> np.ndarray:
        """``m`` Latin-hypercube points of the bounds, shape (m, free): each parameter's range cut
        in ``m`` equal slices, one point at the centre of each, the slices paired at random with
        a fixed seed (the same fit every time)."""
        rng = np.random.default_rng(0)
        cells = np.stack([(rng.permutation(m) + 0.5) / m for _ in self.free], axis=1)
        return self.lower + cells * (self.upper - self.lower)

    def solve(self, x0: np.ndarray, max_nfev: int = MAX_NFEV, rows: Callable | None = None):
        """``least_squares`` from ``x0`` to the tolerances of an optimum, not of a stall
        (``max_nfev`` evaluations at most), evaluating through ``rows`` (default
        ``residual_rows``; ``solve_all``'s batched one)."""
        from scipy.optimize import least_squares

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return least_squares(
                lambda x: self.residuals(x, rows),
                x0,
                jac=lambda x: self.jacobian(x, rows),
                bounds=(self.lower, self.upper),
                method="dogbox",
                x_scale=1.0,
                ftol=FIT_TOL,
                xtol=FIT_TOL,
                gtol=FIT_TOL,
                max_nfev=max_nfev,
            )

    def best_solution(self):
        """The lowest-cost solution from ``starts``; where it leaves the runs' residuals above
        ``RESTART_RMS``, also from the ``RESTART_KEEP`` best of ``spread_starts`` whose cost
        after ``SCREEN_NFEV`` evaluations is already below it (a local minimum of the two starts
        is left behind)."""
        sol = min(self.solve_all(self.starts), key=lambda s: s.cost)
        if not np.all(np.isfinite(sol.fun)) or self.data_rms(sol.fun) <= RESTART_RMS:
            return sol
        screened = self.solve_all(self.spread_starts(RESTART_POINTS), SCREEN_NFEV)
        screened = [s for s in screened if np.isfinite(s.cost) and s.cost < sol.cost]
        best = sorted(screened, key=lambda s: s.cost)[:RESTART_KEEP]
        for trial in self.solve_all([s.x for s in best]):
            if trial.cost < sol.cost:
                sol = trial
        return sol

    def solve_all(self, starts, max_nfev: int = MAX_NFEV) -> list:
        """``solve`` from each of ``starts``, in order, their evaluations batched into one
        broadcast call a round (``lockstep.solve_in_lockstep``: the same solutions)."""
        from scalesim.lockstep import solve_in_lockstep

        return solve_in_lockstep(lambda x0, rows: self.solve(x0, max_nfev, rows),
                                 self.residual_rows, starts)


# The fitted parameter that gives each part of the step the runs may leave unmeasured, and the
# end of its bounds (0 low, 1 high) where that part is none: the input supply not limiting, no
# jitter. ``fit_without`` refits the runs with the part held there.
PART_PARAMETER = {"data": ("node_loader_samples_per_s", 1), "straggler": ("jitter_cv", 0)}


def fit_problem(runs: Runs, params: float | None = None, wire_bytes_per_param: float = 4.0,
                exchange: RunsExchange = DDP_EXCHANGE, without: str | None = None,
                nominal_gradient_bytes: float = NOMINAL_GRADIENT_BYTES,
                layout: Layout | None = None,
                held: dict[str, float] | None = None) -> FitProblem:
    """The problem ``fit_runs`` solves for ``runs`` (with its notes, whether rank times are
    measured, the measured layout, the gradient bytes: ``params * wire_bytes_per_param``,
    ``nominal_gradient_bytes`` without, and how they were exchanged: ``exchange``). ``without``
    (a ``PART_PARAMETER`` key): that part's parameter is held where the part is none, not
    fitted. ``layout``: the runs' ``measured_layout`` where a fit of the same runs built it.
    ``held``: parameters held at these values (their units), not fitted (a profile-likelihood
    scan's refit, ``runs_link_valley``)."""
    runs = require_model(runs, Runs, "runs")
    check_number("params", params, "params", optional=True)
    check_number("wire_bytes_per_param", wire_bytes_per_param, "wire_bytes_per_param")
    gradient_bytes = params * wire_bytes_per_param if params else nominal_gradient_bytes
    exchange = require_model(exchange, RunsExchange, "exchange")
    # DDP's wire carries its gradients alone: the runs' stated wire bytes are its all-reduce's,
    # not the default framework's fp32 (memory.reduce_bytes_per_param_of); a sharded exchange's
    # reduction where it states one (a workload's reduce_bytes_per_param), else the framework's
    stated = (wire_bytes_per_param if exchange.strategy == "ddp"
              else exchange.reduce_bytes_per_param)
    exchange = replace(exchange, wire_bytes_per_param=wire_bytes_per_param if params else 1.0,
                       reduce_bytes_per_param=stated if params else 1.0)
    init, bounds, free, notes, rank_times = _setup(runs)
    if without is not None:
        name, end = PART_PARAMETER[without]
        free = [n for n in free if n != name]
        init[name] = bounds[name][end]
    for name, value in (held or {}).items():
        free = [n for n in free if n != name]
        init[name] = float(value)
    layout = measured_layout(runs) if layout is None else layout
    measured_step = runs.step_time_s
    comm = runs.optional("comm_s")
    wait = runs.optional("data_wait_s")
    top = bounds["node_loader_samples_per_s"][1]
    reference = np.array([_to_x(n, init[n]) for n in free])
    tied = np.array([n in TIED_WORDS for n in free])
    n_data = len(measured_step) * (1 + (comm is not None) + (wait is not None))

    def residual_rows(x):
        """Residuals of each parameter vector (row of ``x``), shape (m, residuals): the model
        broadcasts, so one call evaluates every row (the Jacobian's columns together)."""
        vals = problem.values_of(x)
        res = blended(vals, layout, gradient_bytes, exchange)
        parts = [np.log(res.step_time_s / measured_step)]
        if comm is not None:
            parts.append((res.exposed_comm_s - comm) / measured_step)
        if wait is not None:
            parts.append((res.data_stall_s - wait) / measured_step)
        prior = []
        if "overlap" in free:
            prior.append(vals["overlap"] - 1.0)
        if "jitter_cv" in free:
            prior.append(vals["jitter_cv"] / 0.1)
        prior.append(
            LOADER_PRIOR_SCALE * (np.log(top) - np.log(vals["node_loader_samples_per_s"])) / np.log(1e3)
        )
        parts.append(PRIOR_WEIGHT * np.concatenate(prior, axis=1))
        if np.any(tied):
            parts.append(TIE_WEIGHT * (x[:, tied] - reference[tied]))
        return np.concatenate(parts, axis=1)

    lo = np.array([_to_x(n, bounds[n][0]) if n in _LOG else bounds[n][0] for n in free])
    hi = np.array([_to_x(n, bounds[n][1]) if n in _LOG else bounds[n][1] for n in free])
    # Two starts: input supply not limiting, and limiting at the busiest server's throughput
    # (a flat region of the loader term has no gradient to climb out of).
    starts = []
    for supply in (init["node_loader_samples_per_s"], _busiest_node_supply(runs, wait)):
        start = dict(init, node_loader_samples_per_s=supply)
        x0 = np.array([_to_x(n, start[n]) for n in free])
        starts.append(np.clip(x0, lo + 1e-6 * (hi - lo), hi - 1e-6 * (hi - lo)))
    problem = FitProblem(
        free=free,
        init=init,
        reference=reference,
        lower=lo,
        upper=hi,
        starts=starts,
        n_data=n_data,
        residual_rows=residual_rows,
        layout=layout,
        gradient_bytes=gradient_bytes,
        exchange=exchange,
        rank_times_measured=rank_times,
        notes=notes,
    )
    return problem


def _not_shown(problem: FitProblem, jac: np.ndarray, inside: np.ndarray) -> list[str]:
    """Free parameters no run's residual moves with at the fit (a zero data column of the
    Jacobian): the tie-break prior alone holds them, at their start values."""
    data = np.abs(jac[: problem.n_data])
    return [
        n
        for j, n in enumerate(problem.free)
        if n in TIED_WORDS and inside[j] and float(np.max(data[:, j], initial=0.0)) <= SHOWN_SLOPE
    ]


def fit_runs(runs: Runs, params: float | None = None, wire_bytes_per_param: float = 4.0,
             exchange: RunsExchange = DDP_EXCHANGE, without: str | None = None,
             nominal_gradient_bytes: float = NOMINAL_GRADIENT_BYTES,
             layout: Layout | None = None) -> FitResult:
    """Fit the model to ``runs``, which exchanged as ``exchange`` says (default DDP); ``params``
    (gradient elements) turns transfer times into GB/s. ``without``: a part of the step held at
    none (``PART_PARAMETER``; ``fit_without``'s rival fit), None for the fit itself.
    ``nominal_gradient_bytes``: the gradient's size, bytes, where ``params`` is None (the
    buckets it is exchanged in; ``runs_gradient_size`` tries several). ``layout``: the runs'
    ``measured_layout`` where another fit of them built it."""
    problem = fit_problem(runs, params, wire_bytes_per_param, exchange, without,
                          nominal_gradient_bytes, layout)
    free, notes, gradient_bytes = problem.free, list(problem.notes), problem.gradient_bytes
    sol = problem.best_solution()
    if not np.all(np.isfinite(sol.fun)):
        raise ScalesimError(
            "the model could not be fitted to these runs (non-finite residuals); "
            "check the step times and batch sizes"
        )
    measured_step = runs.step_time_s
    values = problem.values_of(sol.x)
    result = blended(values, problem.layout, gradient_bytes, problem.exchange)
    rel = result.step_time_s / measured_step - 1.0
    n_data = problem.n_data
    dof = n_data - len(free)
    data_res = sol.fun[:n_data]
    if dof >= 1:
        noise = max(float(np.sqrt(np.sum(data_res**2) / dof)), NOISE_FLOOR)
    else:
        # the runs' own misfit is a floor on their noise: a fit that could not follow them
        # (69.6 % rms over five runs, session-24 audit) claims no 4.4 % band
        misfit = float(np.sqrt(np.mean(data_res**2))) if n_data else 0.0
        noise = max(NOISE_NO_DOF, misfit)
        notes.append(
            f"{n_data} measurements for {len(free)} free parameters: no degrees of "
            f"freedom left, the band assumes {noise:.0%} noise per run"
            + (" (the fit's rms residual)" if misfit > NOISE_NO_DOF else "")
        )
    # Parameters held at a bound, or by the tie-break prior alone, are not estimated: the delta
    # method leaves them out.
    at_bound = [n for n, a in zip(free, sol.active_mask, strict=True) if a != 0]
    inside = np.array([a == 0 for a in sol.active_mask])
    not_shown = _not_shown(problem, sol.jac, inside)
    estimated = inside & np.array([n not in not_shown for n in free])
    cov = np.zeros((len(free), len(free)))
    if np.any(estimated):
        jac = sol.jac[:, estimated]
        cov[np.ix_(estimated, estimated)] = noise**2 * np.linalg.pinv(jac.T @ jac)
    result = FitResult(
        values=values,
        fitted=free,
        x=sol.x,
        cov=cov,
        noise_rel=noise,
        residuals_rel=rel,
        breakdown=result,
        gradient_bytes=gradient_bytes,
        params_known=params is not None,
        devices_per_node=runs.devices_per_node,
        multi_node_measured=bool(np.any(runs.nodes > 1)),
        rank_times_measured=problem.rank_times_measured,
        layout=problem.layout,
        exchange=problem.exchange,
        lower=problem.lower,
        upper=problem.upper,
        at_bound=at_bound,
        not_shown=not_shown,
        notes=notes,
    )
    if not_shown:
        bounds = held_upper_bounds(result, runs)
        held = ", ".join(
            f"{TIED_WORDS[n]} {sig3(values[n] * 1e3)} ms"
            + (f" (the runs bound it only: at most {sig3(bounds[n] * 1e3)} ms with the other "
               "parts as fitted; a slower link misfits them beyond their noise)"
               if n in bounds else "")
            for n in not_shown)
        notes.append(
            f"not shown by the runs (no run's step time moves with it at the fit: another "
            f"part paces every run), so held at its start value: {held}"
        )
        result = replace(result, held_at_most_s=bounds)
    if not_shown:
        result = replace(result, held_range_x=held_ranges(result, runs))
    return result


# What a held transfer time is scanned up by, from the fit, for the longest the runs allow
HELD_SCAN_FACTORS = np.array([1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1000.0])


def held_upper_bounds(fit: FitResult, runs: Runs) -> dict[str, float]:
    """For each link's gradient transfer time that the runs do not show at the fit
    (``not_shown``: a forward difference there moves no run; at a kink of the model, where the
    exchange just hides behind compute, the runs still rule out a slower link), the first
    scanned value (the fit's times ``HELD_SCAN_FACTORS``, within its bound) whose misfit leaves
    the 95 % likelihood-ratio region of one parameter (``chi2 - chi2_fit > chi2_0.95(1)``),
    the other parameters as fitted, s; absent where none does (the runs show no bound)."""
    limit = float(_chi2_on_runs(fit, runs, fit.x[None, :])[0]) + CHI2_95_ONE_DOF
    out = {}
    for name in fit.not_shown:
        if not name.endswith("_transfer_s"):
            continue
        j = fit.fitted.index(name)
        rows = np.repeat(fit.x[None, :], len(HELD_SCAN_FACTORS), axis=0)
        rows[:, j] = np.minimum(fit.x[j] + np.log(HELD_SCAN_FACTORS), fit.upper[j])
        over = np.flatnonzero(_chi2_on_runs(fit, runs, rows) > limit)
        if over.size:
            out[name] = float(np.exp(rows[over[0], j]))
    return out


HELD_BISECTIONS = 30  # halvings of the last scanned step where the runs' region ends (held_ranges)


def held_ranges(fit: FitResult, runs: Runs) -> dict[str, tuple[float, float]]:
    """For each parameter the runs do not show at the fit (``not_shown``), the range of it they
    allow, the other parameters as fitted: its 95 % profile-likelihood interval, where the
    misfit stays within ``chi2_0.95(1)`` of the fit's (as ``held_upper_bounds``), (low, high) in
    fitted coordinates. Scanned from the fit down and up by ``HELD_SCAN_FACTORS`` to the fit's
    bounds; where a scanned value leaves the region, its end is bisected between that value and
    the last one inside (``HELD_BISECTIONS``); where none does, the range runs to the bound.
    The fit's own value is inside by construction (it holds the least misfit)."""
    limit = float(_chi2_on_runs(fit, runs, fit.x[None, :])[0]) + CHI2_95_ONE_DOF

    def inside(j, values):
        rows = np.repeat(fit.x[None, :], len(values), axis=0)
        rows[:, j] = values
        return _chi2_on_runs(fit, runs, rows) <= limit

    out = {}
    for name in fit.not_shown:
        j = fit.fitted.index(name)
        ends = []
        for sign, bound in ((-1.0, fit.lower[j]), (1.0, fit.upper[j])):
            scan = np.append(fit.x[j] + sign * np.log(HELD_SCAN_FACTORS), bound)
            scan = np.minimum(scan, bound) if sign > 0 else np.maximum(scan, bound)
            ok = inside(j, scan)
            if ok.all():
                ends.append(float(bound))
                continue
            first = int(np.flatnonzero(~ok)[0])
            good, bad = (float(scan[first - 1]) if first else float(fit.x[j])), float(scan[first])
            for _ in range(HELD_BISECTIONS):
                mid = 0.5 * (good + bad)
                if inside(j, np.array([mid]))[0]:
                    good = mid
                else:
                    bad = mid
            ends.append(good)
        out[name] = (ends[0], ends[1])
    return out


def held_ends(fit: FitResult) -> np.ndarray:
    """The fit with each parameter it holds (``held_range_x``) at either end of the range the
    runs allow, the others as fitted: rows of fitted coordinates (two per held parameter, none
    where nothing is held). A prediction's band over the parameters the runs allow holds its
    value at each (``runs_diagnosis.set_gain_bands``, ``extrapolate``): the runs leave a held
    parameter anywhere in its range, so no share of draws decides that they rule out an end."""
    rows = []
    for name, ends in fit.held_range_x.items():
        j = fit.fitted.index(name)
        for end in ends:
            row = fit.x.copy()
            row[j] = end
            rows.append(row)
    return np.array(rows).reshape(len(rows), len(fit.x))


@dataclass(frozen=True)
class Extrapolated:
    devices: int
    nodes: int
    samples_per_s: float
    low: float  # 95 % band on throughput
    high: float
    efficiency: float  # against the first measured run, as in runs.scaling
    constrained: bool  # False where the inter-server link was never measured
    # what the row rests on that no run measured ('' where nothing): the intra-server link
    # where no run put two devices in one server (``intra_assumed``)
    assumed: str = ""


def unfilled_servers(devices, g: int):
    """Whether ``devices`` (numpy, broadcasts) leave a server of ``g`` part-filled: above ``g``
    a count must be a multiple of it (the extrapolation's placement, ``extrapolation_layout``)."""
    p = np.asarray(devices)
    return p % np.minimum(p, g) != 0


def extrapolation_layout(runs: Runs, devices: list[int], g: int) -> Layout:
    p = np.asarray(devices, dtype=np.int64)
    words = runs.nouns
    if np.any(p < 1):
        raise ScalesimError(
            f"cannot extrapolate to {int(p[p < 1][0])} {words.devices}; "
            f"{words.device} counts must be 1 or more"
        )
    per_node = np.minimum(p, g)
    if np.any(unfilled := unfilled_servers(p, g)):
        bad = int(p[unfilled][0])
        raise ScalesimError(f"{bad} {words.devices} do not fill whole {words.servers} of {g}")
    k = np.full(p.shape, float(runs.accumulation[-1]))
    if splits_by_accumulation(runs):  # fewer micro-steps of the same micro-batch, down to one
        k = np.maximum(runs.samples_per_step[-1] / (p * runs.micro_batch[-1]), 1.0)
    b = runs.samples_per_step[-1] / (p * k) if runs.strong_scaling else np.full(p.shape, runs.micro_batch[-1])
    delays = np.zeros(p.shape)
    last_delay = straggler_delays(runs)[-1]
    delays[:] = last_delay
    return Layout(p, p // per_node, b, k, delays, runs.bubble_micro_steps)


def splits_by_accumulation(runs: Runs) -> bool:
    """Whether strong-scaling ``runs`` kept their per-device micro-batch and ran fewer
    micro-steps as they grew (Megatron-LM's and DeepLearningExamples' BERT recipes), so an
    extrapolation does the same: its micro-steps fall to one before its micro-batch shrinks.
    Otherwise it keeps the last run's micro-steps and divides the global batch among them (a
    micro-batch of a quarter sample, had the runs of a pipeline gone on; docs/diagnose.md)."""
    return bool(runs.strong_scaling and len(runs.rows) > 1
                and np.allclose(runs.micro_batch, runs.micro_batch[-1], rtol=1e-9)
                and np.ptp(runs.accumulation) > 0)


def default_extrapolation_devices(runs: Runs) -> list[int]:
    """2x, 4x, 8x the largest run; on servers of ``Runs.server_devices`` (--gpus-per-node), each
    above one server rounded up to whole servers of it (the extrapolation fills its servers)."""
    last, g = int(runs.devices[-1]), runs.devices_per_node
    counts = [last * 2, last * 4, last * 8]
    if runs.server_devices is not None:
        counts = [p if p <= g else -(-p // g) * g for p in counts]
    return sorted(set(counts))


def _values_rows(fit: FitResult, x: np.ndarray, inter_ratio, intra_ratio=None) -> dict:
    """Parameter dict with one row per parameter vector in ``x`` (shape (n, 1) arrays); where
    the intra-server link was never measured (``intra_assumed``) and ``intra_ratio`` is given,
    its transfer is the inter-server one over that ratio (the fit's held value otherwise)."""
    vals = {k: np.full((x.shape[0], 1), v) for k, v in fit.values.items()}
    for j, name in enumerate(fit.fitted):
        vals[name] = np.exp(x[:, j : j + 1]) if name in _LOG else x[:, j : j + 1]
    if "inter_transfer_s" not in fit.fitted:
        vals["inter_transfer_s"] = vals["intra_transfer_s"] * inter_ratio
    elif intra_ratio is not None and intra_assumed(fit):
        vals["intra_transfer_s"] = vals["inter_transfer_s"] / intra_ratio
    return vals


def intra_assumed(fit: FitResult) -> bool:
    """Whether the intra-server link is assumed, not measured: no run put two devices in one
    server (so it is not fitted) while runs crossed servers (the inter-server one is)."""
    return "intra_transfer_s" not in fit.fitted and "inter_transfer_s" in fit.fitted


def _chi2_on_runs(fit: FitResult, runs: Runs, x: np.ndarray) -> np.ndarray:
    """Sum of squared data residuals over s^2 for each parameter vector (row of ``x``)."""
    vals = _values_rows(fit, x, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        res = blended(vals, fit.layout, fit.gradient_bytes, fit.exchange)
        step = runs.step_time_s
        total = np.sum(np.log(res.step_time_s / step) ** 2, axis=1)
        comm, wait = runs.optional("comm_s"), runs.optional("data_wait_s")
        if comm is not None:
            total += np.sum(((res.exposed_comm_s - comm) / step) ** 2, axis=1)
        if wait is not None:
            total += np.sum(((res.data_stall_s - wait) / step) ** 2, axis=1)
    return np.where(np.isfinite(total), total, np.inf) / fit.noise_rel**2


def region_width(fit: FitResult) -> float:
    """How far above the fit's chi2 a parameter vector's may be and the runs still not rule it
    out: ``chi2_0.95(k)``, ``k`` the parameters estimated (at least 1), the likelihood-ratio
    region every band of a runs diagnosis draws from (``plausible_draws``)."""
    return chi2_quantile(0.95, max(len(fit.fitted) - len(fit.at_bound), 1))


def misfit_at_noise(fit: FitResult, runs: Runs, noise_rel: float) -> float:
    """``fit``'s chi2 on ``runs`` (``_chi2_on_runs``) at a noise of ``noise_rel`` instead of its
    own, so fits under other fixed settings (another gradient size) compare on one scale."""
    return float(_chi2_on_runs(fit, runs, fit.x[None, :])[0]) * (fit.noise_rel / noise_rel) ** 2


def plausible_limit(fit: FitResult, runs: Runs) -> float:
    """The chi2 on ``runs`` (``_chi2_on_runs``) a parameter vector the runs cannot rule out may
    reach: the fit's own plus ``region_width``."""
    return float(_chi2_on_runs(fit, runs, fit.x[None, :])[0]) + region_width(fit)


@dataclass(frozen=True)
class Rival:
    """The runs refitted with one part of the step held at none (``fit_without``)."""

    part: str  # a ``PART_PARAMETER`` key
    fit: FitResult  # the refit; its residuals and breakdown are the runs' under it
    chi2_excess: float  # its chi2 on the runs over the fit's, at the fit's noise (dimensionless)
    region: float  # ``region_width`` of the fit: at or under it the runs cannot rule it out

    @property
    def plausible(self) -> bool:
        return self.chi2_excess <= self.region


def fit_without(fit: FitResult, runs: Runs, part: str, params: float | None = None,
                wire_bytes_per_param: float = 4.0,
                exchange: RunsExchange = DDP_EXCHANGE) -> Rival | None:
    """The runs fitted again with ``part`` (``PART_PARAMETER``) held at none, the other
    parameters free (the same problem, priors and restarts as ``fit_runs``), and how far its
    misfit is above ``fit``'s on the runs: where it is inside the region every band draws from,
    the runs cannot say the part is there. None where ``fit`` does not fit that part's
    parameter (the runs measure it, or cannot show it)."""
    name, _ = PART_PARAMETER[part]
    if name not in fit.fitted:
        return None
    other = fit_runs(runs, params, wire_bytes_per_param, exchange, without=part)
    x = np.array([_to_x(n, other.values[n]) for n in fit.fitted])[None, :]
    excess = float(_chi2_on_runs(fit, runs, x)[0] - _chi2_on_runs(fit, runs, fit.x[None, :])[0])
    return Rival(part, other, excess, region_width(fit))


def plausible_draws(
    fit: FitResult, runs: Runs, samples: int = BAND_SAMPLES, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Parameter vectors the measured runs cannot rule out, the fit's own first (rows of fitted
    coordinates), and for each the inter/intra transfer ratio to use where the inter-server link
    was never measured (shape (n, 1)).

    Draws from the fit's normal approximation ``N(x, cov)``, clipped to the fit's bounds, kept when
    their misfit on the runs stays inside the 95 % likelihood-ratio region (``chi2(draw) -
    chi2(fit) <= chi2_0.95(k)``, ``k`` parameters estimated), in rounds of ``samples`` until at
    least half that many are kept (at most 5 rounds). A parameter the fit holds (``not_shown``:
    ``cov`` has nothing of it) is drawn uniformly, in fitted coordinates (log for a time), over
    the range the runs allow it (``held_ranges``), not held at its start value. The ratio is
    drawn log-uniformly over
    ``UNCONSTRAINED_INTER_RANGE`` (the fit's own row: its geometric mean). ``rng``: the draws'
    generator (None: seeded 0, so a report is the same every time)."""
    rng = np.random.default_rng(0) if rng is None else rng
    lo_r, hi_r = UNCONSTRAINED_INTER_RANGE
    limit = plausible_limit(fit, runs)
    kept_x, kept_r = [fit.x[None, :]], [np.array([[np.sqrt(lo_r * hi_r)]])]
    for _ in range(5):  # up to 5 rounds of draws until enough are kept
        draws = np.clip(
            rng.multivariate_normal(fit.x, fit.cov, size=samples, method="eigh"), fit.lower, fit.upper
        )
        for name, (low, high) in fit.held_range_x.items():  # anywhere the runs allow it
            draws[:, fit.fitted.index(name)] = rng.uniform(low, high, size=samples)
        ok = _chi2_on_runs(fit, runs, draws) <= limit
        kept_x.append(draws[ok])
        kept_r.append(np.exp(rng.uniform(np.log(lo_r), np.log(hi_r), size=(int(ok.sum()), 1))))
        if sum(len(a) for a in kept_x) >= samples // 2:
            break
    return np.concatenate(kept_x), np.concatenate(kept_r)


def drawn_fit(fit: FitResult, x: np.ndarray) -> FitResult:
    """``fit`` with its fitted parameters set to ``x`` (one row of ``plausible_draws``, fitted
    coordinates) and its breakdown at the measured runs re-evaluated; the fixed parameters, the
    covariance and the noise stay the fit's; an inter-server transfer the runs never measured
    is the intra-server one, as in the fit (``FitProblem.values_of``). For what a prediction
    from the fit (a remedy's gain) would be under parameters the runs cannot rule out."""
    return drawn_fits(fit, np.asarray(x, dtype=float)[None, :])[0]


def drawn_fits(fit: FitResult, xs: np.ndarray) -> list[FitResult]:
    """``drawn_fit`` of each row of ``xs`` (shape (m, fitted)), their breakdowns in one
    broadcast call of the model (a leading axis of draws, each row its own figures)."""
    values = []
    for x in xs:
        one = dict(fit.values)
        for j, name in enumerate(fit.fitted):
            one[name] = from_fitted_x(name, x[j])
        if "inter_transfer_s" not in fit.fitted:
            one["inter_transfer_s"] = one["intra_transfer_s"]
        values.append(one)
    if not values:
        return []
    rows = {k: np.array([[one[k]] for one in values]) for k in values[0]}  # (m, 1) each
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        both = blended(rows, fit.layout, fit.gradient_bytes, fit.exchange)
    return [replace(fit, values=one, x=np.asarray(x, dtype=float),
                    breakdown=StepResult(**{f: getattr(both, f)[i]
                                            for f in StepResult.__dataclass_fields__}))
            for i, (one, x) in enumerate(zip(values, xs, strict=True))]


def extrapolate(
    fit: FitResult, runs: Runs, devices: list[int] | None = None, samples: int = BAND_SAMPLES
) -> list[Extrapolated]:
    """Predicted throughput with a 95 % band at ``devices`` (default 2x, 4x, 8x the largest run).

    The band comes from the parameter vectors the runs cannot rule out (``plausible_draws``):
    each is run through the model at ``devices`` with one run's noise ``s * z`` added, and the
    band is the 2.5 and 97.5 percentiles of their log throughput, widened to hold the fit's own
    prediction and, where the fit holds a parameter the runs do not show, the prediction at each
    end of the range they allow it (``held_ends``). Where the inter-server link was
    never measured its transfer time is drawn log-uniformly between 1x and 20x the intra-server one.
    Where the intra-server link was never measured (``intra_assumed``: runs on one device of
    each server), a row with two or more devices a server rests on it: its band is widened to
    hold the prediction with the intra-server transfer at either end of the same range, 1x to
    1/20 of the inter-server one (the draws' own, each end with the fit's other parameters), and
    the row says so (``Extrapolated.assumed``); the centre stays the fit's, with the held value.
    """
    devices = devices or default_extrapolation_devices(runs)
    layout = extrapolation_layout(runs, devices, fit.devices_per_node)
    base = runs.samples_per_s[0] / runs.devices[0]
    unconstrained = (not fit.multi_node_measured) & (layout.nodes > 1)
    rng = np.random.default_rng(0)

    def log_x(x, inter_ratio):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            vals = _values_rows(fit, x, inter_ratio)
            return np.log(blended(vals, layout, fit.gradient_bytes, fit.exchange).samples_per_s)

    lo_r, hi_r = UNCONSTRAINED_INTER_RANGE
    centre = log_x(fit.x[None, :], float(np.sqrt(lo_r * hi_r)))[0]
    x_all, r_all = plausible_draws(fit, runs, samples, rng)
    sim = log_x(x_all, r_all) + fit.noise_rel * rng.standard_normal((len(x_all), 1))
    low, high = np.nanpercentile(sim, 2.5, axis=0), np.nanpercentile(sim, 97.5, axis=0)
    low, high = np.minimum(low, centre), np.maximum(high, centre)
    ends = held_ends(fit)
    if len(ends):  # the band holds each end of a held parameter's range (``held_ends``)
        at_ends = log_x(ends, float(np.sqrt(lo_r * hi_r)))
        low, high = np.minimum(low, np.nanmin(at_ends, axis=0)), np.maximum(high, np.nanmax(at_ends, axis=0))
    assumed = np.zeros(layout.devices.shape, dtype=bool)
    said = ""
    if intra_assumed(fit):  # the rows of two or more a server: intra anywhere in the range
        assumed = layout.devices_per_node > 1
        words = runs.nouns
        said = (f"{words.link('intra_node')} assumed: no run put two {words.gpus} in one "
                f"{words.server}")
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            at_ends = np.log(blended(_values_rows(fit, np.repeat(fit.x[None, :], 2, axis=0), 1.0,
                                                  np.array([[lo_r], [hi_r]])),
                                     layout, fit.gradient_bytes, fit.exchange).samples_per_s)
        low = np.where(assumed, np.minimum(low, np.nanmin(at_ends, axis=0)), low)
        high = np.where(assumed, np.maximum(high, np.nanmax(at_ends, axis=0)), high)
    out = []
    for i, p in enumerate(layout.devices):
        x = float(np.exp(centre[i]))
        out.append(
            Extrapolated(
                int(p),
                int(layout.nodes[i]),
                x,
                float(np.exp(low[i])),
                float(np.exp(high[i])),
                x / (base * int(p)),
                not bool(unconstrained[i]),
                said if assumed[i] else "",
            )
        )
    return out


def rented_replicas(size: int, g: int) -> list[int] | None:
    """A fitted profile of model replicas' instance shape (``Hardware.instance_sizes``): the
    ``size`` replicas of one of the job's servers (``Runs.replicas_per_rented_server``) where
    they are fewer than the fit's server of ``g`` and divide it; else None (whole servers). A
    fitted "server" is the data-parallel ranks one server holds, pp of the job's servers under
    a pipeline (tp 2 x pp 2 on 8-GPU servers: 4 replicas, 16 GPUs), so whole fitted servers had
    billed 2 replicas (the runs' own 8 GPUs on one server) as 4."""
    return [size] if 1 < size < g and g % size == 0 else None


def ddp_gathered_bytes(exchange: RunsExchange, device_name: str, reduced: float) -> float:
    """Bytes per parameter the workload fitted to DDP runs gathers under ZeRO (its
    ``wire_bytes_per_param``; ``reduced``: the runs' measured bytes a gradient, its reduction):
    the named workload's (``exchange.gathered_bytes_per_param``); else on GPUs 16-bit
    (``DDP_GATHERED_BYTES``), on CPU processes (no mixed precision assumed: PyTorch DDP reduces
    ``param.grad`` in the parameters' own dtype) ``reduced`` (docs/model.md §4)."""
    if exchange.gathered_bytes_per_param is not None:
        return float(exchange.gathered_bytes_per_param)
    return float(reduced) if nouns_for(device_name).cpu else DDP_GATHERED_BYTES


# the source of every part of a profile fitted to measured runs (``fitted_profile``)
RUNS_SOURCE = "fitted to measured runs"


def fitted_profile(
    fit: FitResult,
    runs: Runs,
    name: str = "fitted to runs",
    critical_batch_size: float | None = None,
    slow_rank: int | None = None,
    model: RunsModel | None = None,
    recompute_style: str = DEFAULT_RECOMPUTE_STYLE,
):
    """A Profile and Scenario that describe the largest run with the fitted parameters.

    ``(profile, scenario, devices)`` for ``scalesim.remedies.rank_remedies``. Device memory is
    unknown, so it is set high enough that every remedy fits (the report says so); the input
    pipeline is a one-point loader curve giving the fitted per-device supply at that run.
    With ``model`` (the runs' transformer shape and GPU) the workload carries the shape and
    its parameter count, and the hardware the GPU's datasheet peak, memory bandwidth and memory,
    so predictions go through the layout model (docs/model.md §22). With
    ``slow_rank`` (the runs' consistently slowest rank; None: no one device stands out) the
    measured spread is that device's delay, and the rank sets the pipeline stage it slows under a
    split layout.
    ``recompute_style``: the runs' framework's full / selective recompute (``ScenarioLayout.recompute_style``,
    for the layouts the remedies try; the runs themselves are data parallel).
    """
    from scalesim.schemas import (
        ComputeCurve,
        Fingerprint,
        Hardware,
        Jitter,
        LinkLevel,
        LoaderCurve,
        LoaderPoint,
        Profile,
        Scenario,
        ScenarioLayout,
        Workload,
    )

    v = fit.values
    last = runs.rows[-1]
    g = fit.devices_per_node
    g_last = last.devices // last.nodes
    supply_per_device = clip("samples_per_s", v["node_loader_samples_per_s"] / g_last)
    # the supply any run waited on caps every prediction of the profile, the remedies' beyond
    # the largest run too (not only where the largest run waits: runs that stall at 8 devices
    # and not at 16 on two servers' supply still cap a remedy at that supply)
    limiting = float(np.max(fit.breakdown.data_stall_s)) > 0.0
    device = {"device_name": runs.device_name, "device_memory_bytes": 1e15,
              # the bandwidth the fit priced DDP's bucket copies at (the runs' device column's
              # GPU), so the remedies' predictions charge them as the fit did (§4)
              "memory_bandwidth_GBps": fit.exchange.memory_bandwidth_GBps}
    if model is not None:
        device = {
            "device_name": model.gpu,
            "device_memory_bytes": model.memory_bytes or 1e15,
            "peak_tflops": model.peak_tflops,
            "memory_bandwidth_GBps": model.memory_bandwidth_GBps,
        }
    hw = Hardware(
        name="your cluster (fitted)",
        devices_per_node=g,
        **device,
        cpu_cores_per_node=g,
        nic_servers_per_node=runs.nic_servers_per_node,  # a node of replicas: their servers
        instance_sizes=rented_replicas(runs.replicas_per_rented_server, g),
        comm_compute_contention=0.0,  # as fitted: phi absorbs any slowdown beside collectives
        device_speed_cv=0.0,  # as fitted: jitter_cv and a slow device absorb the devices' spread
        intra_node=LinkLevel(
            kind="fitted",
            busbw_GBps=clip("busbw_GBps", fit.busbw_GBps("intra")),
            latency_s=INTRA_LATENCY_S,
            source=RUNS_SOURCE,
        ),
        inter_node=LinkLevel(
            kind="fitted",
            busbw_GBps=clip("busbw_GBps", fit.busbw_GBps("inter")),
            latency_s=INTER_LATENCY_S,
            source=RUNS_SOURCE,
        ),
    )
    # the runs' parameters and wire bytes where known and within bounds (ZeRO's block count and
    # element buckets read them); else params within their bounds: a byte each up to 1e15 of
    # them, then more bytes each; under a byte in all (--params 1 --wire-bytes 0.001), one
    # parameter of that many bytes
    wire = fit.exchange.wire_bytes_per_param
    if not (fit.params_known and QUANTITIES["params"].problem(fit.gradient_bytes / wire) is None):
        wire = (
            max(1.0, fit.gradient_bytes / QUANTITIES["params"].high)
            if fit.gradient_bytes >= 1.0
            else fit.gradient_bytes
        )
    shape = {"params": fit.gradient_bytes / wire, "wire_bytes_per_param": wire}
    # DDP runs' measured bytes are their gradients' reduction (fit_problem), so their workload
    # states them as it (the DDP all-reduce charges them) and gathers its parameters, which
    # ZeRO's all-gathers send, in the parameters' dtype (RunsExchange.gathered_bytes, §4)
    ddp = fit.exchange.strategy == "ddp"
    stated = fit.exchange.reduce_bytes_per_param  # a sharded exchange's stated reduction
    if wire != fit.exchange.wire_bytes_per_param or not fit.params_known:
        # bytes counted as parameters (nominal): reduced as gathered, no fp32 main grads (§4)
        shape["reduce_bytes_per_param"] = wire
    elif ddp:
        shape.update(reduce_bytes_per_param=wire,
                     wire_bytes_per_param=ddp_gathered_bytes(fit.exchange, runs.device_name, wire))
    elif stated is not None:
        shape["reduce_bytes_per_param"] = stated
    if model is not None:  # the shape's parameters, each sending the runs' bytes per gradient
        shape = {
            "params": model.params,
            "wire_bytes_per_param": fit.gradient_bytes / model.params,
            "transformer": model.shape,
        }
        if ddp:
            measured = shape["wire_bytes_per_param"]
            shape.update(reduce_bytes_per_param=measured, wire_bytes_per_param=ddp_gathered_bytes(
                fit.exchange, runs.device_name, measured))
        elif stated is not None and fit.params_known:
            shape["reduce_bytes_per_param"] = stated
    wl = Workload(
        name="your workload",
        **shape,
        micro_batch=max(int(round(runs.micro_batch[-1])), 1),
        critical_batch_size=critical_batch_size,
        pipeline_bubble_micro_steps=runs.bubble_micro_steps,  # a replica's pipeline, if any
    )
    # the largest run's fixed fetch cost (``Layout.fetch_s``): a fetch before each forward
    fetch = float(np.broadcast_to(fit.layout.fetch_s, len(runs.rows))[-1])
    compute = ComputeCurve(
        overhead_s=clip("duration_s", v["overhead_s"]),
        fetch_s=clip("duration_s", fetch),
        per_sample_s=clip("positive_duration_s", v["per_sample_s"]),
        measured=True,
        source=RUNS_SOURCE,
    )
    loader = (
        LoaderCurve(
            points=[LoaderPoint(workers=1, samples_per_s=supply_per_device)],
            measured=True,
            source=RUNS_SOURCE,
        )
        if limiting
        else None
    )
    delay = float(fit.layout.straggler_delay_s[-1])
    # the passes the straggler's spread is over (the fetch, the same on every device, aside)
    micro = v["overhead_s"] + v["per_sample_s"] * runs.micro_batch[-1]
    k = runs.accumulation[-1]
    cv = v["jitter_cv"]
    slow_factor = 1.0
    if slow_rank is not None:  # measured spread is one device's delay
        slow_factor = 1.0 + delay / (k * micro)
    elif delay > 0:  # spread of all devices: sigma * e_N = delay, sigma = cv * micro * sqrt(k)
        e_n = float(expected_max_normal(last.devices))
        cv = delay / (e_n * micro * np.sqrt(k)) if e_n > 0 else cv
    memory_note = f"{runs.nouns.memory} unknown: every remedy is assumed to fit"
    if model is not None and model.memory_bytes is not None:
        memory_note = f"device memory of {model.gpu}: {model.memory_bytes / GIB_BYTES:.4g} GiB"
    profile = Profile(
        name=name,
        fingerprint=Fingerprint(device_count=last.devices, nodes=last.nodes),
        hardware=hw,
        workload=wl,
        compute=compute,
        input_pipeline=loader,
        jitter=Jitter(step_time_cv=clip("cv", cv)),
        notes=[memory_note],
    )
    if runs.strong_scaling:
        batch = {"global_batch": int(round(runs.samples_per_step[-1]))}
    else:
        batch = {"micro_batch": max(int(round(runs.micro_batch[-1])), 1)}
    scenario = Scenario(
        devices=[last.devices],
        # the largest run as it ran: g_last of each server of g (``Runs.devices_per_node``: the
        # most a run put in one, or --gpus-per-node), its NIC share and intra-server links the
        # model's of a partial server where g_last < g (8 on 1 server, then 16 on 4: 4 of 8)
        devices_per_node=g_last,
        **fit.exchange.names(),
        accumulation=last.accumulation,
        overlap=v["overlap"] >= OVERLAPPED_SHARE,
        slow_device=slow_rank if slow_factor > 1.0 + 1e-6 else None,
        slow_factor=clip("slow_factor", slow_factor),
        critical_batch_size=critical_batch_size,
        **batch,
    )
    split = {"recompute_style": recompute_style} if recompute_style != DEFAULT_RECOMPUTE_STYLE else {}
    if fit.exchange.shard_group and fit.exchange.shard_group < last.devices:  # hybrid at that run
        split["shard_group"] = fit.exchange.shard_group
    if split:
        scenario = scenario.model_copy(update={"layout": ScenarioLayout(**split)})
    return profile, scenario, last.devices
