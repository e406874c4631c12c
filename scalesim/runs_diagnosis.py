"""Diagnose measured runs: a table of device counts and throughputs (with any measured columns:
exposed communication, data wait, straggler wait, steps to a quality target). The model is fitted
to the runs (``scalesim.fit_runs``), the lost efficiency split into its parts, the cause named
(``scalesim.diagnosis.CAUSES``) and the remedies ranked with their gain bands. docs/diagnose.md.
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from scalesim.bounds import bound
from scalesim.device_nouns import (
    GPU_NOUNS,
    Nouns,
    hardware_nouns,
)
from scalesim.diagnosis import (
    GOOD_EFFICIENCY,
    OTHER_CAUSE_SHARE,
    RATIO_PINNED_FACTOR,
    Finding,
    Remedy,
    Report,
    band_factor,
    finding,
    first_remedy,
    least_decisive_gain,
    model_remedies,
    pinned,
    shown_gain,
)
from scalesim.errors import KNOB, ScalesimError, as_literal, joined, require_model
from scalesim.figures import (
    GIB_BYTES,
    bytes_text,
    gib,
    link_GBps,
    milliseconds,
    rate,
    series,
    sig3,
    throughput,
    whole,
    whole_percent,
)
from scalesim.fit_runs import NOMINAL_GRADIENT_BYTES, TIED_WORDS, Z95, from_fitted_x
from scalesim.knee import MIN_EFFICIENCY_DROP, find_knee
from scalesim.layout import (
    DEFAULT_RECOMPUTE_STYLE,
    SCHEDULE_SHORT,
    early_stop_of,
    knob_refusal,
    op_sac_of,
    replica_servers,
)
from scalesim.layout_change import ARROW_FIELD, arrowed_said, retitled
from scalesim.lockstep import map_in_lockstep
from scalesim.remedies import DIAGNOSIS_VERDICTS, SIZE_DEPENDENT, gain_verdict
from scalesim.runs_data_wait import (
    fetch_layout,
    fetch_of_largest,
    fixed_fetch_runs,
    read_runs_wait,
)
from scalesim.runs_link_valley import link_valley, valley_caveat
from scalesim.runs_shares import (
    MODELLED,
    parts_in_step_s,
    raw_over_step,
    share_sources,
)
from scalesim.runs_slow_rank import one_slow_rank, slowest_ranks
from scalesim.trace_data_wait import (
    FIXED,
    FIXED_FETCH_TITLE,
    as_read,
    fixed_fetch_remedy,
    loader_within_wait,
)

# Inter-server link: the drop where the runs cross to several servers is worth naming
# (knee.MIN_EFFICIENCY_DROP, the model's median error), efficiency held inside one server
# (IN_SERVER_HELD_EFFICIENCY or more) and the crossing loses BOUNDARY_DOMINANCE times the points of
# any step inside a server. These two are settings (docs/diagnose.md), not measured: three
# quarters of ideal is where scaling inside a server still counts as working, and twice the
# largest in-server drop says the crossing is where the curve bends, not one more step of a
# steady decline.
IN_SERVER_HELD_EFFICIENCY = 0.75
BOUNDARY_DOMINANCE = 2.0


# Remedy-gain bands (``set_gain_bands``): the remedies are predicted again from the first
# REMEDY_BAND_DRAWS parameter vectors the runs cannot rule out (``fit_runs.plausible_draws``),
# LAYOUT_BAND_DRAWS where the runs' transformer is given (the layout model: ~44 ms a draw
# against ~8 ms, docs/performance.md).
REMEDY_BAND_DRAWS = 100
LAYOUT_BAND_DRAWS = 30
# A band reaches a loss (``band_caveat``) below -0.5 %, what the report prints as -1 %, and
# starts at no gain below +0.5 %, what it prints as +0 % (both cautioned); a band
# narrower than BAND_NARROW (it prints as one figure) leaves nothing for a one-parameter caution.
BAND_LOSS = 0.005
BAND_NARROW = 0.005


def set_gain_bands(remedies: list[Remedy], drawn: list[list[Remedy]],
                   ends: list[list[Remedy]] | None = None) -> None:
    """Give each applicable remedy the 95 % band of its shown gain (``shown_gain``) over
    ``drawn``: the same remedies predicted from parameter vectors the runs cannot rule out
    (``fit_runs.plausible_draws``), matched by key. The band is their 2.5 and 97.5 percentiles,
    widened to hold the fit's own gain and the gain from each of ``ends``: the remedies at
    either end of the range the runs allow a parameter the fit holds (``fit_runs.held_ends``),
    which no share of draws rules out; none where no draw was predicted or the remedy cannot
    run (verdict "not runnable": it does not fit in memory). A draw where the
    remedy does not apply gains nothing from it (0): the overlap already on, no data stall, no
    slow device, an exchange too small to split for, under those parameters."""
    for r in remedies:
        if not r.applicable or r.verdict == "not runnable" or not drawn:
            continue  # a change that cannot run has no gain to band
        def gains(sets, key=r.key):
            return [next((shown_gain(d) if d.applicable else 0.0 for d in one if d.key == key),
                         0.0) for one in sets]

        held = [shown_gain(r), *gains(ends or [])]
        band = np.percentile(gains(drawn), [2.5, 97.5])
        # a rounding speck (-2e-16 where nothing changes) is no loss: printed '-0.0', cautioned
        low, high = np.where(np.abs(band) < 1e-9, 0.0, band)
        r.gain_low = float(min(low, *held))
        r.gain_high = float(max(high, *held))


def ranked_position(remedies: list[Remedy], new: Remedy) -> int:
    """Where ``new`` goes in ``remedies`` (ranked by verdict, then by shown gain, as
    ``remedies.rank_remedies`` ranks them): before the first that ranks below it."""
    def rank(r):
        return DIAGNOSIS_VERDICTS.index(r.verdict), -shown_gain(r)

    return next((i for i, r in enumerate(remedies) if rank(r) > rank(new)), len(remedies))


def bends_at_boundary(efficiency, last_single: int) -> bool:
    """Whether the efficiency curve (0..1 per run, in device order) bends where the runs cross
    from one server (run ``last_single``, the last on one server) to several: the crossing drop
    is at least ``MIN_EFFICIENCY_DROP`` and ``BOUNDARY_DOMINANCE`` times any drop inside a
    server, and efficiency held (``IN_SERVER_HELD_EFFICIENCY``) inside the server."""
    eff = np.asarray(efficiency, dtype=float)
    drops = -np.diff(eff)
    in_server = float(np.max(drops[:last_single])) if last_single > 0 else 0.0
    crossing = float(drops[last_single])
    return bool(crossing >= MIN_EFFICIENCY_DROP and crossing >= BOUNDARY_DOMINANCE * in_server
                and eff[last_single] >= IN_SERVER_HELD_EFFICIENCY)


ABSOLUTE_SE = ("overlap", "jitter_cv")  # fitted parameters whose standard error is absolute


WIDE_BAND_FACTOR = 100.0  # a band wider than this either way is said so, not printed to its ends


# What a first remedy's gain rests on, by remedy key: the fitted parameter (the link level's
# transfer time for a faster link: across servers where the largest run crosses them) and what
# measures it. The caveat is said where the runs do not pin that parameter (``pinned``).
CAVEAT_MEASURES = {
    "overlap": "a profiler trace of one step measures the overlap (scalesim diagnose --trace)",
    "interconnect": ("an all-reduce measured over that link pins it (nccl-tests all_reduce_perf, "
                     "read by scalesim calibrate --from-nccl-tests)"),
    "loader": ("a data_wait_s column in the runs file, or a profiler trace, measures the input "
               "supply"),
}


def remedy_caveat(fit, remedy, multi_server: bool, words: Nouns = GPU_NOUNS) -> str:
    """What a remedy's gain rests on that the runs do not pin ('' where nothing, or where it
    does not apply): the fitted parameter with its 95 % band, and what would measure it
    (``CAVEAT_MEASURES``)."""
    if remedy is None or remedy.key not in CAVEAT_MEASURES or not remedy.applicable:
        return ""
    if remedy.verdict == "not runnable":  # no gain to qualify: it does not fit
        return ""
    if remedy.gain_low is not None and remedy.gain_high - remedy.gain_low < BAND_NARROW:
        return ""  # whatever that parameter is, the runs pin this remedy's gain
    name = {"overlap": "overlap", "loader": "node_loader_samples_per_s",
            "interconnect": "inter_transfer_s" if multi_server else "intra_transfer_s"}[remedy.key]
    se = fit.stderr(name) if name in fit.fitted else None
    if se is None or pinned(se, absolute=name in ABSOLUTE_SE):  # None: fixed, or held at a bound
        return ""
    value = fit.values[name]
    if name == "overlap":
        what = (f"a fitted overlap of {value:.0%} (95%: {max(value - Z95 * se, 0.0):.0%}-"
                f"{min(value + Z95 * se, 1.0):.0%})")
        tail = "if the exchange already overlaps backward in full there is nothing to gain; "
    else:
        spread = band_factor(se)
        loader = name == "node_loader_samples_per_s"
        unit = throughput if loader else (lambda v: f"{sig3(v * 1e3)} ms")
        band = (f"95%: {unit(value / spread)}-{unit(value * spread)}" if spread <= WIDE_BAND_FACTOR
                else f"its 95% band over {WIDE_BAND_FACTOR:g}x either way")
        if loader:
            what = f"a fitted input supply of {rate(value, 'samples')} per {words.server} ({band})"
        else:
            where = f"across {words.servers}" if multi_server else f"inside a {words.server}"
            what = f"a fitted gradient transfer {where} of {unit(value)} ({band})"
        tail = ""
    return (f"its gain rests on {what} that these runs do not pin: {tail}"
            f"{CAVEAT_MEASURES[remedy.key]}")


def band_caveat(remedy: Remedy) -> str:
    """'' unless ``remedy`` is a remedy (it helps) whose 95 % band reaches a loss, or starts at
    no gain: a low end that prints as +0 % at the whole percent the first remedy's line and the
    app show (under ``BAND_LOSS`` either way), which read as a sure gain uncautioned; then that
    the runs do not show it helps, or that it may gain nothing. For remedies whose gain rests on
    several fitted parameters at once (a bigger batch, accumulation, sharding, the smaller
    batch), which ``remedy_caveat`` cannot name one of."""
    if not remedy.helps or remedy.gain_low is None or remedy.gain_low >= BAND_LOSS:
        return ""
    narrow = "runs at more device counts or batches, or with less noise, narrow it"
    if remedy.gain_low >= -BAND_LOSS:  # -0.5 % itself prints as -0 %
        little = "nothing" if remedy.gain_low <= 0.0 else "next to nothing"
        return (f"its 95% band over the parameters these runs allow starts at "
                f"{remedy.gain_low:+.1%}: it may gain {little}; {narrow}")
    return (f"its 95% band over the parameters these runs allow reaches {remedy.gain_low:+.0%}: "
            f"they do not show that it helps; {narrow}")


def _log_ratio_stderr(fit, upper: str, lower: str) -> float | None:
    """Standard error of log(upper / lower) of two fitted positive parameters (their covariance
    in log coordinates); None where either is not estimated."""
    if fit.stderr(upper) is None or fit.stderr(lower) is None:
        return None
    i, j = fit.fitted.index(upper), fit.fitted.index(lower)
    var = fit.cov[i, i] + fit.cov[j, j] - 2.0 * fit.cov[i, j]
    return float(np.sqrt(max(var, 0.0)))


def link_ratio_words(fit, words, inter_ms: str) -> str:
    """The fitted inter-server link against the intra-server one: the ratio with its 95 % band
    where the runs pin it (``RATIO_PINNED_FACTOR``), else both transfer times and why no ratio."""
    ratio = fit.values["inter_transfer_s"] / fit.values["intra_transfer_s"]
    spread = _log_ratio_stderr(fit, "inter_transfer_s", "intra_transfer_s")
    if spread is not None and pinned(spread):
        low, high = ratio * np.exp(-Z95 * spread), ratio * np.exp(Z95 * spread)
        return (f"fitted {words.link('inter_node')} {ratio:.1f}x slower than intra-{words.server} "
                f"(95%: {low:.1f}-{high:.1f}x; gradient transfer {inter_ms})")
    return (f"fitted gradient transfer across {words.servers} {inter_ms}, inside a {words.server} "
            f"{milliseconds(fit.values['intra_transfer_s'])}: these runs do not pin the ratio of the two "
            f"(95% band wider than {RATIO_PINNED_FACTOR:g}x either way)")


def _large_batch(runs, critical_batch: float | None, speedup_ratio: float,
                 words: Nouns = GPU_NOUNS) -> tuple[float, list[str]] | None:
    """Share of the speed-up kept after large-batch effects (r), with evidence, or None."""
    steps = runs.optional("steps_to_target")
    if steps is not None:
        samples = steps * runs.samples_per_step
        r = float(samples[0] / samples[-1])
        ttq = steps * runs.step_time_s
        return r, [
            arrowed_said(
                f"throughput speed-up {speedup_ratio:.2f}x from {whole(runs.devices[0])} to "
                f"{words.count(int(runs.devices[-1]))}, but time to target only "
                f"{ttq[0] / ttq[-1]:.2f}x (",
                f"{steps[0]:.0f}{ARROW_FIELD}{steps[-1]:.0f} steps at global batch "
                f"{runs.samples_per_step[0]:.0f}{ARROW_FIELD}{runs.samples_per_step[-1]:.0f}", ")"),
            f"samples needed to reach the target grew {samples[-1] / samples[0]:.2f}x",
        ]
    if critical_batch is not None and runs.batch_known:
        b0, b1 = runs.samples_per_step[0], runs.samples_per_step[-1]
        r = float((1.0 + b0 / critical_batch) / (1.0 + b1 / critical_batch))
        return r, [
            arrowed_said("global batch ", f"{b0:.0f}{ARROW_FIELD}{b1:.0f}",
                         f" against a critical batch size of {critical_batch:g}: samples to "
                         f"quality grow {1.0 / r:.2f}x (McCandlish et al. 2018)"),
        ]
    return None


def _critical_batch_from_steps(runs) -> float | None:
    """B_noise from steps to target at two or more global batches: fit ``S = S_min + S_min*B_noise/B``."""
    steps = runs.optional("steps_to_target")
    if steps is None or not runs.batch_known or np.unique(runs.samples_per_step).size < 2:
        return None
    design = np.stack([np.ones_like(steps), 1.0 / runs.samples_per_step], axis=1)
    (s_min, c), *_ = np.linalg.lstsq(design, steps, rcond=None)
    if s_min <= 0 or c <= 0:
        return None
    return float(c / s_min)


SMALLER_BATCH_FACTORS = (2, 4, 8, 16)  # the global batches the smaller-batch remedy tries: 1/f


def smaller_batch_remedy(profile, scenario, devices: int, b_noise: float,
                         factors: tuple[int, ...] = SMALLER_BATCH_FACTORS,
                         ) -> tuple[Remedy, int] | None:
    """(remedy, f): the smaller global batch 1/f (of ``factors``) with the best predicted time to
    quality among those that fit in device memory (the best of all, "not runnable", where none
    does), judged as ``remedies.rank_remedies`` judges a change; None where no smaller batch can
    be predicted."""
    from scalesim.errors import ScalesimError
    from scalesim.predict import predict

    def one(scn):
        return predict(profile, scn.model_copy(update={"devices": [devices]}))[0]

    now = one(scenario)
    best = None
    for f in factors:
        if scenario.global_batch is None:
            b = now.micro_batch // f
            if b < 1:
                break
            scn = scenario.model_copy(update={"micro_batch": b})
        else:
            scn = scenario.model_copy(update={"global_batch": scenario.global_batch // f})
        try:
            after = one(scn)
        except ScalesimError:
            break
        ratio = ((1.0 + b_noise / now.global_batch) * now.step_time_s
                 / ((1.0 + b_noise / after.global_batch) * after.step_time_s))
        if best is None or (after.fits, ratio) > (best[1].fits, best[0]):  # fitting ones first
            best = (ratio, after, f)
    if best is None:
        return None
    ratio, after, factor = best
    throughput = float(after.samples_per_s / now.samples_per_s - 1.0)
    note = f"gain in time to quality (McCandlish et al. 2018); throughput {throughput:+.1%}"
    words = hardware_nouns(profile.hardware)
    memory = words.memory
    verdict = gain_verdict(float(ratio - 1.0))
    if not after.fits:
        verdict, note = "not runnable", f"does not fit in {memory}; {note}"
    elif not now.fits:
        verdict, note = "remedy", f"makes it fit in {memory}; {note}"
    # "towards" only where the smaller batch is nearer B_noise (from above it)
    where = ("towards" if after.global_batch >= b_noise
             else "further below" if now.global_batch <= b_noise else "past")
    title = arrowed_said("Shrink the global batch ",
                         f"{now.global_batch}{ARROW_FIELD}{after.global_batch}",
                         f" (per-{words.device} {after.micro_batch}) {where} B_noise {b_noise:.0f}")
    return Remedy("smaller_batch", title, throughput, True, note, verdict=verdict,
                  objective_gain=float(ratio - 1.0), measure="quality"), factor


def replica_of_rank(rank: int, split: dict[str, int], replicas: int) -> int:
    """The model replica (data-parallel rank) of device ``rank`` in a job split as ``split``
    (tp, pp, cp) over ``replicas``: Megatron / torchtitan order, tp innermost, then cp, then
    dp, pp outermost (``layout.strides``)."""
    return (rank // (split["tp"] * split["cp"])) % replicas


def _rank_pattern(runs, words: Nouns = GPU_NOUNS) -> tuple[int | None, float, list[str]]:
    """(consistently slowest rank or None, its worst slowdown factor, evidence lines)."""
    slowest = slowest_ranks(runs)
    lines = [f"{words.count(runs.rows[s.row].devices)}: rank {s.rank} slowest, "
             f"{s.time_s / s.others_median_s:.2f}x the median of the others; spread max-median "
             f"{milliseconds(s.time_s - s.all_median_s)}" for s in slowest]
    if not slowest:
        return None, 1.0, lines
    return one_slow_rank(runs), max(s.time_s / s.others_median_s for s in slowest), lines


def _implausible_links(fit, params: float | None, words: Nouns = GPU_NOUNS) -> list[str]:
    """A note per fitted link whose gradient rate (``params`` x wire bytes / fitted transfer
    time) is below the floor of a link's bus bandwidth (``busbw_GBps``: 1 MB/s), where the
    model holds it: the parameters given are then not the count (340 for 340e6), or the transfer
    is latency, not bandwidth (a tiny model); either way its network remedies start there."""
    if not fit.params_known:
        return []
    floor = bound("busbw_GBps").low
    levels = ["intra", "inter"] if fit.multi_node_measured else ["intra"]
    slow = [f"{level}-{words.server} {link_GBps(fit.busbw_GBps(level))}" for level in levels
            if fit.busbw_GBps(level) < floor]
    if not slow:
        return []
    return [knob_refusal(  # the input by its control: the CLI's flag, the page's label
        f"{KNOB.params} {params:g}: the fitted links move the gradients at "
        f"{as_literal(', '.join(slow))}, below the {floor:g} GB/s floor of any link, where the "
        f"model holds them (and the network remedies start): check {KNOB.params} is the model's "
        "parameter count (e.g. 340e6, not 340)")]


# Efficiency against the first run above these (per sample, so per-device batches may differ):
# a note past the first (cache effects, a smaller per-device footprint give some), a refusal past
# the second, which no same job reaches (the rows' numbers or batches are wrong)
SUPERLINEAR_NOTE, SUPERLINEAR_REFUSED = 1.10, 2.0


# Why CPU runs read past linear, said beside that note and refusal for runs whose device column
# says CPU (docs/diagnose.md, "Threads of CPU runs": 192 % and 449 % efficient from a one-process
# baseline on every core against 2 processes of one thread each)
CPU_THREADS_WORDS = ("on CPU processes, time every run with the same threads per process: torchrun "
                     "gives a one-process run every core unless OMP_NUM_THREADS is set (it sets 1 "
                     "only for --nproc-per-node above 1), so run each with OMP_NUM_THREADS=1")


def _superlinear(runs, sc, words: Nouns) -> str:
    """A note where a run scales past linear against the first; ScalesimError where far past.
    On CPU processes both say how their threads give that (``CPU_THREADS_WORDS``)."""
    worst = int(np.argmax(sc.efficiency))
    eff = float(sc.efficiency[worst])
    if eff <= SUPERLINEAR_NOTE:
        return ""
    said = (f"the run at {words.count(int(runs.devices[worst]))} is {whole_percent(eff)} efficient "
            f"against the one at {words.count(int(runs.devices[0]))} (throughput "
            f"{float(sc.samples_per_s[worst] / sc.samples_per_s[0]):.3g}x on "
            f"{float(runs.devices[worst] / runs.devices[0]):.3g}x the {words.devices})")
    threads = f"; {CPU_THREADS_WORDS}" if words.cpu else ""
    if eff > SUPERLINEAR_REFUSED:
        raise ScalesimError(f"{runs.source}: {said}: no job scales that far past linear; check "
                            "its step_time_s or samples_per_s and its batch columns "
                            "(per_device_batch or global_batch, and accumulation)" + threads)
    return (f"{said}: past linear, which cache effects or a smaller per-{words.device} footprint "
            "can give; the diagnosis reads the runs as the same job at the same work per "
            f"{words.device}" + threads)


def _parts_lost(step, work, comm, wait, strag) -> tuple[dict, dict]:
    """Each part of the step per sample of work, run by run (exposed communication, data stall,
    straggler wait, and compute: the rest of the measured step), and the share of the largest
    run's time each loses: its growth per sample from the first run to the largest (none where it
    shrinks), over the largest run's time per sample. Keys in the order the findings are made."""
    compute = np.maximum(step - comm - wait - strag, 0.0)
    per = {"comm": comm / work, "data": wait / work, "straggler": strag / work,
           "compute": compute / work}
    growth = {k: max(float(v[-1] - v[0]), 0.0) for k, v in per.items()}
    t_last = float(step[-1] / work[-1])
    return per, {k: g / t_last for k, g in growth.items()}


PART_WORDS = {"comm": "communication", "data": "input pipeline", "straggler": "stragglers",
              "compute": "compute"}


def _per_run_words(share, devices, words: Nouns = GPU_NOUNS) -> str:
    """A part's share of each run's step, in run order ('0%, 10%, 20%, 0%'), and, where it is
    most at a run between the first and the largest, which run that is and its share there
    ('; most at 8 devices: 20%'), so an evidence line reaches the run the part is at."""
    i = int(np.argmax(share))
    most = (f"; most at {words.count(int(devices[i]))}: {whole_percent(float(share[i]))}"
            if 0 < i < len(share) - 1 and share[i] >= NAMED_PART_SHARE else "")
    return series([whole_percent(s) for s in share]) + most


def _first_to_last(part: str, share, devices, words: Nouns, source: str) -> str:
    """'<part> 0% of the step at 1 device -> 73% at 32 devices (<source>): 0%, ..., 73%', a part's
    share at the first run and at the largest, an ``arrowed_said`` change (a page writes its own
    arrow), then every run's (``_per_run_words``)."""
    first, last = (as_literal(words.count(int(devices[i]))) for i in (0, -1))
    return arrowed_said(f"{part} ", f"{whole_percent(share[0])} of the step at {first}"
                        f"{ARROW_FIELD}{whole_percent(share[-1])} at {last}",
                        f" ({source}): " + _per_run_words(share, devices, words))


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _undetermined_cause(fit, step, work, measured: dict, shares: dict, parts: dict,
                        words: Nouns = GPU_NOUNS) -> tuple[list[str], list[str]]:
    """The causes the runs cannot rule out in place of the part that loses most at the fit
    (``shares``, the parts' keys to their findings' in ``parts``), and the evidence that says so.

    A part the runs do not measure (``measured``: each part's measured seconds per run, None
    where the fitted model gives it) is the fitted model's (its share of the step laid in the
    measured one, ``runs_shares``), so it moves with every fitted
    parameter, those the runs do not show too (``fit.not_shown``: held at a start value that no
    run chose). Each of those is set to either end of the range the runs allow it
    (``fit_runs.held_ends``, its 95 % profile-likelihood interval); where another part then loses
    most, that part's cause is a rival: which cause it is rests on a parameter the runs do not
    determine. ([], []) where none is held or every end keeps the cause."""
    from scalesim.fit_runs import drawn_fit, held_ends

    top = max(shares, key=shares.get)
    rivals, lines = [], []
    rows = held_ends(fit)
    for i, (name, (low, high)) in enumerate(fit.held_range_x.items()):
        at_ends = []
        for x in rows[2 * i: 2 * i + 2]:
            given = parts_in_step_s(step, drawn_fit(fit, x).breakdown, measured)
            at_ends.append(_parts_lost(step, work, given["comm"], given["data"],
                                       given["straggler"])[1])
        tops = [max(end, key=end.get) for end in at_ends]
        if all(t == top for t in tops):
            continue
        rivals += [parts[t] for t in tops if t != top and parts[t] not in rivals]
        involved = [top] + [t for t in dict.fromkeys(tops) if t != top]

        def lost(end, involved=involved):
            return " / ".join(whole_percent(end[k]) for k in involved)

        j = fit.fitted.index(name)
        bottom = low <= fit.lower[j] + 1e-9  # the fit's bound: as good as none of it
        span = (f"anything up to {milliseconds(from_fitted_x(name, high))}" if bottom else
                f"anything from {milliseconds(from_fitted_x(name, low))} to "
                f"{milliseconds(from_fitted_x(name, high))}")
        lines.append(
            f"which part loses most rests on the {TIED_WORDS[name]}, which no run shows (held at its "
            f"start value, {milliseconds(fit.values[name])}): {span} fits the runs, the other parts as "
            f"fitted; {' / '.join(PART_WORDS[k] for k in involved)} lose {lost(shares)} of the "
            f"largest run's time as fitted, {lost(at_ends[0])} "
            + ("with it near 0" if bottom else f"at {milliseconds(from_fitted_x(name, low))}")
            + f", {lost(at_ends[1])} at {milliseconds(from_fitted_x(name, high))}")
    return rivals, lines


# A part of a run's step under this share prints as 0 % or 1 %: not one to name (the loader
# remedy's stall at a smaller run), nor, in another fit, a part that takes a share's time.
NAMED_PART_SHARE = 0.01
# What measures each part the fit may give a run, said where the runs cannot tell it apart.
PART_MEASURES = {"data": "a data_wait_s column (each run's input wait a step)",
                 "straggler": "a rank_step_times_s column (each rank's step time)"}
PART_NOUNS = {"comm": "exposed communication", "data": "data stall",
              "straggler": "straggler wait"}


def _unseparated_parts(fit, runs, devices, measured: dict, share_of_step: dict, fit_args: tuple,
                       words: Nouns = GPU_NOUNS) -> list[dict]:
    """The parts of a run's step the fit gives (a data stall, straggler wait: not measured,
    ``measured`` None) that the runs cannot tell from other parts. For each part that is
    ``OTHER_CAUSE_SHARE`` or more of a run's step (the share a report names as a cause;
    ``share_of_step``; ``devices`` the runs' as measured), the runs are fitted again without
    it (``fit_runs.fit_without``; ``fit_args``: params, wire bytes per parameter, exchange);
    where that fit is inside the 95 % region every band draws from, the part's share is one
    the runs do not decide. Each such part as a dict: where it is, its share fitted and the
    other fit's shares there, the other fit's misfit, what would measure it (its column, a
    trace of that run, and that run at twice its batch where the two fits predict it more
    than two runs' noise apart), and the sentence ``said`` the report gives; ``model_s``
    (each part's seconds under the other fit, laid in the measured step as the fit's are:
    ``runs_shares``) and ``from`` (the parts that take the time) for the cause and the loader
    remedy."""
    from scalesim.fit_runs import blended, fit_without

    out = []
    step = runs.step_time_s
    per = "replica" if runs.replica_split else words.device
    for part in ("data", "straggler"):
        share = share_of_step[part]
        i = int(np.argmax(share))
        if measured[part] is not None or share[i] < OTHER_CAUSE_SHARE:
            continue
        rival = fit_without(fit, runs, part, *fit_args)
        if rival is None or not rival.plausible:
            continue
        other = rival.fit
        model_s = parts_in_step_s(step, other.breakdown, measured)  # as the fit's (runs_shares)
        there = {k: float(model_s[k][i] / step[i]) for k in model_s}
        takers = [k for k in model_s if k != part
                  and there[k] - float(share_of_step[k][i]) >= NAMED_PART_SHARE]
        j = int(np.argmax(np.abs(other.residuals_rel)))
        at = words.count(int(devices[i]))
        twice = replace(fit.layout, micro_batch=fit.layout.micro_batch * 2.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ours, theirs = (float(blended(f.values, twice, fit.gradient_bytes,
                                          fit.exchange).samples_per_s[i]) for f in (fit, other))
        measures = [PART_MEASURES[part],
                    f"a profiler trace of the run on {at} (scalesim diagnose --trace)"]
        if abs(np.log(theirs / ours)) > Z95 * np.sqrt(2.0) * fit.noise_rel:
            b0 = float(runs.micro_batch[i])
            measures.append(arrowed_said(  # a page writes its own arrow
                f"timing {at} at twice the batch per {per} (", f"{b0:g}{ARROW_FIELD}{2 * b0:g}",
                f") against this fit's {rate(ours, 'samples')} there and the "
                f"{throughput(theirs)} of the fit without the {PART_NOUNS[part]}"))
        taken = " and ".join(PART_NOUNS[k] for k in takers)
        moved = ", ".join(f"{PART_NOUNS[k]} at {whole_percent(there[k])} of that step (fitted "
                          f"{whole_percent(float(share_of_step[k][i]))})" for k in takers)
        said = (f"the {PART_NOUNS[part]} of {whole_percent(float(share[i]))} of the step at {at} "
                f"is the fitted model's, not measured, and these runs cannot tell it from "
                + (f"{taken}: a fit without it puts {moved}" if takers else
                   "a misfit of the runs: a fit without it gives that time to no other part")
                + f" and misses the runs by {other.rmse_rel:.1%} rms"
                + (f" ({other.residuals_rel[j]:+.1%} at {words.count(int(devices[j]))})"
                   if abs(other.residuals_rel[j]) >= 5e-4 else "")
                + f", which they cannot rule out (chi2 {max(rival.chi2_excess, 0.0):.1f} "
                "above this fit's, within the "
                f"{rival.region:.1f} of the 95% region every band here draws from, at "
                f"{fit.noise_rel:.1%} noise a run); " + ", ".join(measures[:-1]))
        said = retitled(measures[-1], f"{said}, or ", " would tell them apart")
        out.append({"part": part, "devices": int(devices[i]), "share": float(share[i]),
                    "rival_shares": there, "taken_by": takers,
                    "rival_rmse_rel": other.rmse_rel,
                    "rival_worst_residual_rel": float(other.residuals_rel[j]),
                    "rival_worst_devices": int(devices[j]),
                    "chi2_excess": rival.chi2_excess, "chi2_region": rival.region,
                    "measures": measures, "said": said, "model_s": model_s,
                    "from": taken or "a misfit of the runs"})
    return out


def diagnose_runs(runs, params: float | None = None, wire_bytes_per_param: float = 4.0,
                  critical_batch: float | None = None, extrapolate_to: list[int] | None = None,
                  transformer=None, recompute_style: str = DEFAULT_RECOMPUTE_STYLE,
                  tp_overlap: bool = False, exchange=None, p2p_overlap: bool = True,
                  gpus_per_node: int | None = None) -> Report:
    """Fit, find the knee, name the cause and the first remedy for measured ``runs``.

    ``transformer`` (``scalesim.runs_model.RunsModel``): the transformer the runs trained and their
    GPU; the fitted profile then carries the shape, so its remedies are predicted by the layout
    model and "split the model" can apply (docs/model.md §22). Its parameter count stands in
    for ``params`` when that is not given. ``recompute_style``: how the runs' framework reruns
    the forward under full or selective recompute (``layout.RECOMPUTE_STYLES``), for the
    layouts of the split-the-model remedy; it needs ``transformer``. ``tp_overlap``: the runs' framework
    overlaps the tensor-parallel collectives with the matmuls (``ScenarioLayout.tp_overlap``),
    for that remedy's layouts with tp > 1 (the runs themselves have no tensor parallelism); it
    needs ``transformer`` too. ``p2p_overlap`` False: the runs' framework's interleaved pipeline
    sends block (``ScenarioLayout.p2p_overlap``, ``--p2p-overlap off``), for that remedy's
    interleaved layouts; it needs ``transformer`` too. ``exchange`` (``fit_runs.RunsExchange``,
    None: DDP): how the runs exchanged over their data-parallel ranks (ZeRO stage, framework,
    gradient sync); the fit, the memory and every remedy start from it (FSDP's blocks: the
    transformer's layers). ``gpus_per_node`` (None: the most any run put in one server): the
    devices one of the runs' servers holds (``runs.on_servers_of``), where the runs used fewer
    of each: the fitted profile's server holds that many, a named network reaches the runs'
    NIC share, and extrapolations fill whole servers of it."""
    from scalesim.bounds import check_number, check_values
    from scalesim.fit_runs import (
        DDP_EXCHANGE,
        RunsExchange,
        drawn_fits,
        extrapolate,
        fit_runs,
        fitted_profile,
        held_ends,
        plausible_draws,
        splits_by_accumulation,
    )
    from scalesim.runs import Runs, on_servers_of, partial_server_note, scaling, thin

    runs = require_model(runs, Runs, "runs")
    if transformer is not None:  # its GPU's words: a GB200 NVL72's server is a rack
        runs = replace(runs, gpu=transformer.gpu)
    if gpus_per_node is not None:
        runs = on_servers_of(runs, gpus_per_node)
    check_number("critical_batch", critical_batch, "critical_batch", optional=True)
    if extrapolate_to is not None:
        extrapolate_to = [int(p) for p in check_values("devices", extrapolate_to, "extrapolate_to")]

    if (early_stop_of(recompute_style) or op_sac_of(recompute_style)) and transformer is None:
        raise ScalesimError(f"recompute_style {recompute_style}: it applies to the runs' "
                            "transformer (diagnose --workload); give the workload or drop it")
    for name, value, default in (("tp_overlap", tp_overlap, False),
                                 ("p2p_overlap", p2p_overlap, True)):
        if not isinstance(value, bool | np.bool_):
            raise ScalesimError(f"{name}: expected true or false, got {value!r}")
        if value != default and transformer is None:
            raise ScalesimError(f"{name}: it applies to the split layouts of the runs' "
                                "transformer (diagnose --workload); give the workload or drop it")
    runs = thin(runs)
    measured = runs  # as given: devices and servers (the model split's, where the runs split it)
    split_note = ""
    if runs.replica_devices > 1:  # fitted as data-parallel runs of model replicas
        runs, extrapolate_to, split_note = _as_replicas(runs, transformer, extrapolate_to,
                                                        tp_overlap, recompute_style, p2p_overlap)
    if transformer is not None and runs.nouns.cpu:
        raise ScalesimError(knob_refusal(  # the inputs by their controls on the page
            f"the runs ran on CPU processes (device '{as_literal(measured.device_name)}'); "
            f"{KNOB.workload} predicts their transformer on a GPU ({KNOB.gpu}): drop "
            f"{KNOB.workload}, or the runs' device column"))
    if transformer is not None and params is None:
        params = transformer.params
    if runs.replica_split:  # no fitted micro-step of theirs is held to the peak (below)
        refuse_beyond_peak(measured, transformer)
    mfu, mfu_note = runs_mfu(measured, transformer)
    if transformer is not None and runs.replica_split:  # its parameters and MFU only
        transformer = None
        split_note = retitled(split_note, after=knob_refusal(  # the page says its control
            f" {KNOB.workload} gives the runs' parameter count and MFU; the remedies are the "
            "replicas' (which other split is faster is scalesim plan --workload's question)."))
    exchange = DDP_EXCHANGE if exchange is None else require_model(exchange, RunsExchange, "exchange")
    # DDP's bucket copies are priced a step at a GPU's bandwidth: --gpu's, else the device
    # column's (where it names a listed GPU; else a note says how to name one); not where the
    # runs' times are of a unit of work (``Runs.steps_timed``)
    by_column = (transformer is None and params is not None and runs.steps_timed
                 and not measured.replica_split and not runs.nouns.cpu)
    if transformer is not None:  # its layers
        exchange = replace(exchange, blocks=transformer.shape.layers,
                           memory_bandwidth_GBps=(transformer.memory_bandwidth_GBps
                                                  if runs.steps_timed else None))
    elif by_column:
        exchange = replace(exchange, memory_bandwidth_GBps=device_column_bandwidth_GBps(
            measured, exchange.memory_bandwidth_GBps))
    exchange, extrapolate_to, shard_note = _runs_shard_group(runs, measured, exchange,
                                                             extrapolate_to)
    sc = scaling(runs)
    superlinear_note = _superlinear(runs, sc, words=runs.nouns)
    if transformer is None and not runs.nouns.cpu and not measured.replica_split:
        _refuse_states_beyond_memory(params, wire_bytes_per_param, exchange,
                                     measured.device_column)
    fit = fit_runs(runs, params, wire_bytes_per_param, exchange)
    _refuse_copies_beyond_steps(fit, params, runs.step_time_s, transformer,
                                measured.device_column, runs.nouns)
    _refuse_links_beyond_bounds(fit, params, transformer,
                                runs.step_time_s if runs.steps_timed else None)
    model = fit.breakdown
    step = runs.step_time_s
    work = runs.micro_batch * runs.accumulation

    # each part measured where a column gives it (the straggler: the slow device's delay or the
    # spread's, from rank times), else the fitted model's, laid in the measured step by one rule
    # (``runs_shares``: a row's shares add to at most 100 %, the table's and the findings' alike)
    measured_parts = {"comm": runs.optional("comm_s"), "data": runs.optional("data_wait_s"),
                      "straggler": (fit.layout.straggler_delay_s if fit.rank_times_measured
                                    else None)}
    sources = share_sources(measured_parts)
    comm_src, wait_src = sources["comm"], sources["data"]
    strag_src = "measured rank times" if fit.rank_times_measured else MODELLED
    shown = parts_in_step_s(step, model, measured_parts)
    comm, wait, strag = shown["comm"], shown["data"], shown["straggler"]
    per, shares = _parts_lost(step, work, comm, wait, strag)
    compute = per["compute"] * work

    knee = find_knee(runs.devices, runs.nodes, sc.efficiency, compute, comm, wait, strag, work)
    words = runs.nouns
    eff_last = float(sc.efficiency[-1])
    share_of_step = {k: v * work / step for k, v in per.items()}

    findings: list[Finding] = []
    # Communication: boundary or steady growth.
    single = (runs.nodes == 1) & (runs.devices > 1)
    single_server = np.nonzero(runs.nodes == 1)[0]
    # A boundary needs a multi-server run right after the last single-server one.
    crossing = bool(single_server.size and single_server[-1] + 1 < len(runs.rows))
    comm_lines = [_first_to_last("exposed communication", share_of_step["comm"], runs.devices,
                                 words, comm_src)]
    boundary = False
    if crossing:
        last_single = int(single_server[-1])
        first_multi = last_single + 1
        eff_in = float(sc.efficiency[last_single])
        eff_out = float(sc.efficiency[first_multi])
        drops = -np.diff(sc.efficiency)
        in_server_drops = drops[:last_single] if last_single > 0 else np.array([0.0])
        boundary = bends_at_boundary(sc.efficiency, last_single)
        inside = words.count(int(runs.devices[last_single]))
        largest = whole_percent(max(float(np.max(in_server_drops)), 0.0))
        if runs.replica_split:  # the servers the data-parallel exchange spans, not the job's
            comm_lines.insert(0, f"efficiency {whole_percent(eff_in)} at {inside}, their data-parallel "
                              f"exchange inside one {words.server}; {whole_percent(eff_out)} at "
                              f"{words.count(int(runs.devices[first_multi]))}, the exchange "
                              f"across {runs.nodes[first_multi]} {words.servers} (largest drop "
                              f"with it inside a {words.server}: {largest})")
        else:
            comm_lines.insert(0, f"efficiency {whole_percent(eff_in)} at {inside} "
                              f"in one {words.server}, {whole_percent(eff_out)} at "
                              f"{whole(runs.devices[first_multi])} on {runs.nodes[first_multi]} "
                              f"{words.servers} (largest drop inside a {words.server}: "
                              f"{largest})")
        if np.any(single) and "inter_transfer_s" in fit.fitted:
            inter_ms = milliseconds(fit.values["inter_transfer_s"])
            if "intra_transfer_s" in fit.at_bound or "intra_transfer_s" not in fit.fitted:
                comm_lines.append(f"fitted gradient transfer across {words.servers} {inter_ms}; "
                                  f"inside a {words.server} too fast to measure")
            else:
                comm_lines.append(link_ratio_words(fit, words, inter_ms))
    findings.append(finding("inter_server" if boundary else "comm_growth", shares["comm"],
                            comm_lines, words))
    # Input pipeline.
    thr = runs.samples_per_s
    findings.append(finding("input_pipeline", shares["data"], [
        _first_to_last("data stall", share_of_step["data"], runs.devices, words, wait_src),
        arrowed_said("throughput ", f"{throughput(thr[0])}{ARROW_FIELD}{rate(thr[-1], 'samples')}",
                     f" for {runs.devices[-1] / runs.devices[0]:g}x the {words.devices}"),
    ], words))
    # Stragglers vs one slow device.
    # ranks are devices' (a split model's too: its replica is the device's data-parallel rank)
    device_words = runs.measured_nouns
    slow_rank, slow_factor, rank_lines = _rank_pattern(measured, device_words)
    strag = share_of_step["straggler"]
    strag_lines = [arrowed_said("straggler wait ", f"{whole_percent(strag[0])}{ARROW_FIELD}"
                                f"{whole_percent(strag[-1])}", f" of the step ({strag_src}): "
                                + _per_run_words(strag, runs.devices, words))] + rank_lines
    slow_replica = slow_rank
    if slow_rank is not None:
        of = ""
        if runs.replica_split:  # the model's slow device is that rank's replica
            slow_replica = replica_of_rank(slow_rank, measured.model_split, int(runs.devices[-1]))
            of = f" (of replica {slow_replica} at {words.count(int(runs.devices[-1]))})"
        strag_lines.insert(0, f"rank {slow_rank} is the slowest in every run{of}, up to "
                              f"{slow_factor:.2f}x the others")
    elif rank_lines:
        strag_lines.insert(0, "the slowest rank changes from run to run: spread, not one "
                              f"{device_words.device}")
    findings.append(finding("slow_device" if slow_rank is not None else "stragglers",
                            shares["straggler"], strag_lines, words))
    # Compute per sample.
    cps = compute / work
    compute_lines = [arrowed_said(f"compute per sample per {words.device} ",
                                  f"{sig3(cps[0] * 1e3)}{ARROW_FIELD}{milliseconds(cps[-1])}",
                                  f" ({cps[-1] / cps[0]:.2f}x)" if cps[0] > 0 else "")]  # no ratio to 0
    if runs.strong_scaling:
        compute_lines.insert(0, arrowed_said(f"strong scaling: per-{words.device} batch ",
                                             f"{work[0]:g}{ARROW_FIELD}{work[-1]:g}",
                                             " samples per step"))
        if "overhead_s" in fit.fitted:
            v = fit.values
            compute_lines.append(f"fitted fixed cost {milliseconds(v['overhead_s'])} per micro-step vs "
                                 f"{milliseconds(v['per_sample_s'] * runs.micro_batch[-1])} of per-sample "
                                 f"work at {words.count(int(runs.devices[-1]))}")
        if runs.bubble_micro_steps:  # fewer micro-batches a replica: the bubble's share grows
            compute_lines.append(_bubble_share_words(runs.bubble_micro_steps, runs.accumulation))
    findings.append(finding("small_work" if runs.strong_scaling else "compute", shares["compute"],
                            compute_lines, words))

    findings_of_parts = list(findings)  # comm, data, straggler, compute: as ``shares``
    findings.sort(key=lambda f: -f.share)
    speedup_ratio = float(thr[-1] / thr[0])
    lb = _large_batch(runs, critical_batch, speedup_ratio, words)
    if lb is not None:
        r, lines = lb
        lb_finding = finding("large_batch", 1.0 - r, lines + [
            f"systems efficiency at {words.count(int(runs.devices[-1]))}: {whole_percent(eff_last)}"],
                             words)
        if r < GOOD_EFFICIENCY and r < eff_last:
            findings.insert(0, lb_finding)
        else:
            findings.append(lb_finding)
    if findings[0].key != "large_batch" and eff_last >= GOOD_EFFICIENCY:
        findings.insert(0, finding("none", 0.0, [
            f"efficiency {whole_percent(eff_last)} at {words.count(int(runs.devices[-1]))} "
            f"(speed-up {sc.speedup[-1]:.2f}x)"], words))
    # a part named at a run, not only by its growth to the largest: a stall at 8 of 16 devices
    at_a_run = {f.key for f, part in zip(findings_of_parts, share_of_step, strict=True)
                if part != "compute" and np.max(share_of_step[part]) >= OTHER_CAUSE_SHARE}
    cause, others = findings[0], [f for f in findings[1:]
                                  if f.share >= OTHER_CAUSE_SHARE or f.key in at_a_run]
    parts = dict(zip(shares, (f.key for f in findings_of_parts), strict=True))
    apart = _unseparated_parts(fit, runs, [r.devices for r in measured.rows], measured_parts,
                               share_of_step, (params, wire_bytes_per_param, exchange), words)
    for one in apart:  # the part's own finding says it beside its per-run shares
        findings_of_parts[list(shares).index(one["part"])].evidence.insert(1, one["said"])
    if cause.key == parts[max(shares, key=shares.get)]:  # a part of the step: does it rest on
        rivals, lines = _undetermined_cause(fit, step, work, measured_parts, shares, parts, words)
        # a fit without a part the runs do not measure, which they cannot rule out, that
        # another part loses most in: a rival too
        for one in apart:
            given = one["model_s"]  # the other fit's parts in the measured step
            other = _parts_lost(step, work, given["comm"], given["data"], given["straggler"])[1]
            top = parts[max(other, key=other.get)]
            if top != cause.key:
                rivals += [top] if top not in rivals else []
                lines += [] if one["said"] in cause.evidence else [one["said"]]
        if rivals:  # a parameter the runs do not show? Then they cannot tell it from its rivals
            cause.rivals = rivals
            cause.label = (f"{cause.label}, or "
                           + ", or ".join(_lower_first(finding(k, 0.0, [], words).label)
                                          for k in rivals)
                           + ": these runs cannot tell which")
            cause.evidence = lines + cause.evidence

    b_noise = critical_batch or _critical_batch_from_steps(runs)
    fitted = {"name": f"fitted to {runs.source}", "critical_batch_size": b_noise,
              "slow_rank": slow_replica, "recompute_style": recompute_style}
    profile, scenario, at = fitted_profile(fit, runs, **fitted, model=transformer)
    ran_note = peak_note = ""
    gpu_memory_bytes = None  # the GPU's, where memory is treated as unknown (below)
    if transformer is not None:
        peak_note = _check_runs_model(profile, scenario, runs, transformer, fit)
        refuse_beyond_peak(measured, transformer)  # unpinned: the samples/s still are
        ran_note = _ran_beyond_memory(profile, scenario, at, transformer, exchange)
        if ran_note:  # they ran: the estimate, not the runs, is off; judge no remedy by it
            gpu_memory_bytes = transformer.memory_bytes
            transformer = replace(transformer, memory_bytes=None)
            profile, scenario, at = fitted_profile(fit, runs, **fitted, model=transformer)
    decisive = least_decisive_gain(profile, scenario)
    overlap_note = _overlap_rounding_note(profile, scenario, fit, decisive, words)

    wait_reading = read_runs_wait(runs, words)
    wait_last, step_last, k_last = (fetch_of_largest(runs) if wait_reading is not None
                                    else (0.0, float(step[-1]), 1))

    def remedies_of(one_fit, split_layout=None, batch_factors=SMALLER_BATCH_FACTORS):
        """The first remedy, all remedies the model predicts from ``one_fit``'s parameters and
        the smaller batch's factor (None: none). ``split_layout``: the layout splitting the model
        tries (None: the planner's best); ``batch_factors``: the smaller batches tried. Where
        ``one_fit`` carries the data wait as a fixed cost of each fetch (``Layout.fetch_s``), the
        loader remedy takes it off (``trace_data_wait.fixed_fetch_remedy``)."""
        prof, scn, at = fitted_profile(one_fit, runs, **fitted, model=transformer)
        first, remedies = model_remedies(prof, scn, at, (cause.key, *cause.rivals),
                                         nominal_links=not fit.params_known,
                                         split_framework={"tp_overlap": bool(tp_overlap),
                                                          "p2p_overlap": bool(p2p_overlap)},
                                         decisive_gain=decisive, split_layout=split_layout)
        if np.any(one_fit.layout.fetch_s):
            remedies = [loader_within_wait(fixed_fetch_remedy(prof, scn, wait_last / k_last,
                                                              k_last, "the runs'"),
                                           wait_last, step_last, "measured")
                        if r.key == "loader" else r for r in remedies]
            first = first_remedy(remedies, (cause.key, *cause.rivals), decisive)
        if _parameters_alone(prof, remedies, exchange, gpu_memory_bytes, transformer):
            first = first_remedy(remedies, (cause.key, *cause.rivals), decisive)
        factor = None
        if b_noise is not None and remedies:
            smaller = smaller_batch_remedy(prof, scn, at, b_noise, batch_factors)
            if smaller is not None:
                smaller, factor = smaller
                remedies.insert(ranked_position(remedies, smaller), smaller)
                if cause.key == "large_batch" and smaller.helps and shown_gain(smaller) >= decisive:
                    first = smaller
        return first, remedies, factor

    priced = {}

    def price(reading):
        """The remedies under the runs' ``reading`` of their data wait (``as_read``): the fit's
        own (None, ``PACES``: a loader that paces the job is the fit's input supply), or a refit
        with the wait a fixed cost of each fetch before each micro-step (``FIXED``), each banded over
        the parameters its runs allow and judged over the gradient sizes they allow; the first
        remedy, the sizes, the fit and its link valley kept in ``priced``."""
        one_fit, one_runs = fit, runs
        if reading == FIXED:
            one_runs = fixed_fetch_runs(runs)
            one_fit = fit_runs(one_runs, params, wire_bytes_per_param, exchange,
                               layout=fetch_layout(runs))
        try:
            first, remedies, factor = remedies_of(one_fit)
        except ScalesimError as exc:  # e.g. a global batch the model cannot split evenly
            first, remedies, factor = None, [], None
            fit.notes.append(f"remedies not predicted: {exc}")
        remedies = _loader_note_of_runs(remedies, share_of_step["data"],
                                        [r.devices for r in measured.rows], words,
                                        next((a["from"] for a in apart if a["part"] == "data"), ""))
        valley, valley_sets = None, []  # where the runs do not tell the link (runs_link_valley)
        if remedies:  # each draw makes the changes the fit's own remedies make (split, batch)
            split_layout = next((r.split_layout for r in remedies if r.split_layout), None)
            factors = (factor,) if factor is not None else SMALLER_BATCH_FACTORS
            count = REMEDY_BAND_DRAWS if transformer is None else LAYOUT_BAND_DRAWS
            drawn, ends = [], []
            valley = link_valley(one_fit, one_runs, params, wire_bytes_per_param, exchange)
            valley_rows = valley.rows if valley is not None else np.empty((0, len(one_fit.x)))
            for rows, into in ((plausible_draws(one_fit, one_runs)[0][1:count + 1], drawn),
                               (held_ends(one_fit), ends),  # [0] of the draws: the fit
                               (valley_rows, valley_sets)):  # refits the runs fit alike
                # their breakdowns in one call; their remedies' model calls batched (lockstep:
                # the same numbers)
                for one in map_in_lockstep(lambda f: remedies_of(f, split_layout, factors)[1],
                                           drawn_fits(one_fit, rows)):
                    if isinstance(one, ScalesimError):  # parameters the model cannot predict
                        continue  # from: not banded
                    if isinstance(one, BaseException):
                        raise one
                    into.append(one)
            set_gain_bands(remedies, drawn, ends + valley_sets)
        size_caveats, size_rank, sizes = {}, "", None
        if remedies and not fit.params_known:  # the buckets' gradient size is a guess
            first, size_caveats, size_rank, sizes = _judged_by_size(
                one_fit, one_runs, exchange, wire_bytes_per_param, remedies, first,
                lambda size_fit: remedies_of(size_fit, split_layout, factors)[1],
                (cause.key, *cause.rivals), decisive)
        across = bool(runs.nodes[-1] > 1)
        for r in remedies:  # a size-dependent remedy's caveat is its size's; another's its range
            sized = r.verdict == SIZE_DEPENDENT or r.title == FIXED_FETCH_TITLE
            valley_words = "" if sized else valley_caveat(valley, r, valley_sets, decisive, across,
                                                          slow_rank is not None, words)
            # the valley's sentence says what the fit's local band on the link or overlap cannot
            caveat = "" if sized else (
                joined("; ", (valley_words, band_caveat(r))) if valley_words
                else remedy_caveat(one_fit, r, across, words) or band_caveat(r))
            r.caveat = joined("; ", (caveat, size_caveats.get(r.key, "")))
        if size_rank and first is not None:
            first.caveat = joined("; ", (first.caveat, size_rank))
        priced[reading] = first, remedies, sizes, one_fit, valley
        return remedies

    remedies = as_read(price, wait_reading, wait_last)
    # the pacing reading's first remedy, sizes and link valley, where both were priced
    first, shown_before, sizes, _, valley = next(iter(priced.values()))
    first = next((b for r, b in zip(shown_before, remedies, strict=True) if r is first), None)
    extra = extrapolate(fit, runs, extrapolate_to)

    table = []
    for i, r in enumerate(measured.rows):
        replicas = {"replicas": int(runs.devices[i])} if runs.replica_split else {}
        table.append({
            "devices": r.devices, "nodes": r.nodes, **replicas, "samples_per_s": float(thr[i]),
            "step_time_s": float(step[i]), "speedup": float(sc.speedup[i]),
            "efficiency": float(sc.efficiency[i]), "comm_share": float(share_of_step["comm"][i]),
            "data_share": float(share_of_step["data"][i]),
            "straggler_share": float(share_of_step["straggler"][i]),
            "model_step_time_s": float(model.step_time_s[i]),
            "residual": float(fit.residuals_rel[i]),
        })
    v = fit.values
    fit_info = {
        "parameters": {k: float(val) for k, val in v.items()},
        "fitted": list(fit.fitted),
        "at_bound": list(fit.at_bound),
        "not_shown": list(fit.not_shown),
        "stderr_rel": {k: fit.stderr(k) for k in fit.fitted if k not in ABSOLUTE_SE},
        # overlap and jitter_cv are fitted as they are (not in log): their errors are absolute
        "stderr_abs": {k: fit.stderr(k) for k in fit.fitted if k in ABSOLUTE_SE},
        "intra_busbw_GBps": fit.busbw_GBps("intra") if fit.params_known else None,
        "inter_busbw_GBps": (fit.busbw_GBps("inter") if fit.params_known
                             and fit.multi_node_measured else None),
        "rmse_rel": fit.rmse_rel,
        "noise_rel": fit.noise_rel,
        # held transfer times the runs bound from above (``fit_runs.held_upper_bounds``), s
        "held_at_most_s": dict(fit.held_at_most_s),
        # of each held parameter, the range the runs allow it, the others as fitted
        # (``fit_runs.held_ranges``: its 95 % profile-likelihood interval), [low, high]
        "held_range": {k: [from_fitted_x(k, lo), from_fitted_x(k, hi)] for k, (lo, hi) in
                       fit.held_range_x.items()},
        # where the runs do not tell the link (``runs_link_valley``): the transfer time scanned,
        # the least and most that fit them alike (s) and their overlaps; None where they do
        "link_valley": None if valley is None else {
            "parameter": valley.name, "transfer_s": list(valley.transfer_s),
            "overlap": list(valley.overlap)},
        "bubble_micro_steps": runs.bubble_micro_steps,  # a step: k + this stage micro-steps
        "loader_limiting": bool(np.any(model.data_stall_s > 0)),
    }
    details = {
        "knee": None if knee is None else {
            "devices_before": knee.devices_before, "devices_after": knee.devices_after,
            "efficiency_drop": knee.efficiency_drop, "crosses_boundary": knee.crosses_boundary,
            "cause": knee.cause, "label": knee.label},
        "fit": fit_info,
        # which step the table's comm, data and straggler shares are of (``runs_shares``):
        # "measured" (a column of the runs: the measured step) or "fitted model" (its step)
        "share_sources": sources,
        # parts of the step the fit gives a run that a refit without them, which the runs
        # cannot rule out, puts elsewhere (``_unseparated_parts``), with the words said of each
        "unseparated": [{k: v for k, v in a.items() if k not in ("model_s", "from")}
                        for a in apart],
        "extrapolation": [asdict(e) for e in extra],
        "remedies_at_devices": at,
        # without --params: the gradient sizes (bytes) the remedies were judged at, which the
        # runs allow, and those they rule out (``runs_gradient_size``); None where it is known
        "gradient_sizes": sizes,
        **({"model_split": measured.model_split, "replica_devices": measured.replica_devices}
           if runs.replica_split else {}),
        "exchange": exchange.described(),
        # how the runs' data wait was read (``runs_data_wait.read_runs_wait``); None: not read
        "data_wait_reading": None if wait_reading is None else asdict(wait_reading),
        "strong_scaling": runs.strong_scaling,
        # each run's model FLOPs utilisation where --workload and its GPU's peak are known
        "mfu": mfu,
        # the fitted model, so the planner can open it (scalesim.app.diagnose_page)
        "fitted_profile": profile.model_dump(mode="json"),
        "fitted_scenario": scenario.model_dump(mode="json"),
    }
    if runs.replica_split:  # the knee and extrapolation in devices too, as the table
        _with_devices(details, measured.replica_devices, measured.devices_per_node)
    server_note = partial_server_note(runs) or _server_devices_note(runs, fit, words)
    notes = ([n for n in (superlinear_note, split_note, shard_note, server_note) if n]
             + _parts_over_the_step(raw_over_step(step, model, measured_parts), runs.devices,
                                    fit, words, [k for k, v in sources.items() if v != MODELLED])
             + list(runs.notes)
             + fit.notes + _implausible_links(fit, params, words)
             + [n for n in (peak_note, ran_note, mfu_note, overlap_note) if n])
    if wait_reading is not None:  # how the data wait was read, and the refit it was priced on
        notes.append(wait_reading.words)
        if FIXED in priced:
            notes.append(_refit_words(fit, priced[FIXED][3], wait_last, k_last, words))
    if extra and splits_by_accumulation(runs):
        per = "replica" if runs.replica_split else words.device
        notes.append(f"the runs kept a micro-batch of {whole(runs.micro_batch[-1])} per {per} "
                     "and ran fewer micro-steps as they grew: so does the extrapolation, down to "
                     "one micro-step (then the micro-batch shrinks); the fitted scenario (the "
                     "planner's link) holds the largest run's "
                     f"{whole(runs.accumulation[-1])} micro-steps at its global batch instead, "
                     "as a scenario splits a fixed global batch, so at other counts it changes "
                     "the micro-batch where the runs kept it")
    if exchange.sharded:
        notes.append(f"the runs exchanged as {exchange.label()}: the fit, the memory and every "
                     "remedy start from it (docs/model.md §4)")
    gathered = _gathered_note(profile.workload, exchange, fit.params_known)
    if gathered:
        notes.append(gathered)
    notes.extend(_copies_note(fit, f"{as_literal(transformer.gpu)} ({KNOB.gpu})"
                              if transformer is not None else
                              f"{as_literal(measured.device_column)} (the runs' device column)",
                              words))
    if by_column:
        notes.extend(_unpriced_copies_note(fit, measured.device_column, words))
    if not fit.params_known:
        notes.append(knob_refusal(
            f"no {KNOB.params}: link speeds are reported as gradient transfer times, and the "
            "exchange's buckets are laid out for a nominal gradient of "
            f"{NOMINAL_GRADIENT_BYTES / 1e9:g} GB, which the extrapolation rests on (how much "
            "of it overlaps backward)" + as_literal(size_note(sizes))
            + f"; give {KNOB.params} (model parameters) for bandwidths in GB/s and your model's "
            "buckets"))
    if profile.workload.transformer is not None:
        notes.append(knob_refusal(
            "remedy gains are the layout model's predictions at the largest run for the shape "
            f"of {KNOB.workload} {as_literal(transformer.name)} on "
            f"{as_literal(transformer.gpu)}; " + as_literal(profile.notes[0])))
    else:
        notes.append(f"remedy gains are model predictions at the largest run; {words.memory} is "
                     "unknown, so check that bigger batches fit")
    return Report("runs", runs.source, cause, others, first, remedies, table, details, notes,
                  decisive_gain=decisive)


def _refit_words(fit, refit, wait_s: float, micro_steps: int, words: Nouns) -> str:
    """What the remedies read with the data wait a fixed cost of each fetch rest on: the runs
    fitted again with it a fetch before each micro-step (``runs_data_wait.fetch_layout``), its
    compute beside the fit's, which carries the wait in its own."""
    def compute(v):
        return (f"{milliseconds(v['overhead_s'])} per micro-step (fixed) + "
                f"{milliseconds(v['per_sample_s'])} per sample")

    return (f"read as a fixed cost of each fetch, the data wait ({milliseconds(wait_s)} a step "
            f"at {words.count(int(refit.layout.devices[-1]))}, "
            f"{milliseconds(wait_s / micro_steps)} a micro-step) is priced on a refit of the "
            f"runs with each run's wait a fetch before each micro-step: compute "
            f"{compute(refit.values)} beside the fetch, where the fit above, the wait in its "
            f"compute, gives {compute(fit.values)}")


def device_column_bandwidth_GBps(runs, given: float | None) -> float | None:
    """The memory bandwidth that prices PyTorch DDP's bucket copies in a fit of ``runs``
    without --workload, GB/s: ``given`` (an exchange that states it), else the datasheet's of
    the GPU the runs' ``device`` column names (``profiles.memory_bandwidth_GBps``: 'NVIDIA
    A100-SXM4-80GB', as torch.cuda.get_device_name and nvidia-smi spell it), else None: a CPU's,
    an unlisted GPU's or no column (the fit then reads the copies as exchange)."""
    from scalesim.profiles import memory_bandwidth_GBps

    if runs.nouns.cpu or not runs.device_column:
        return given
    return memory_bandwidth_GBps(runs.device_column, given)


def _copies_note(fit, device: str, words: Nouns) -> list[str]:
    """What the fit charged PyTorch DDP's bucket copies of the runs' gradients (each into its
    bucket and back: ``fit_runs.ddp_copies_s``) at the memory bandwidth of ``device`` (its
    name and where it was given); [] where it charged none."""
    from scalesim.fit_runs import ddp_copies_s

    copies = ddp_copies_s(fit)
    if not np.any(copies > 0.0):
        return []
    n = int(fit.layout.devices[-1])
    return [knob_refusal(
        "PyTorch DDP's bucket copies (each gradient into its all-reduce bucket and back, "
        f"docs/model.md §4) are charged to compute at the "
        f"{fit.exchange.memory_bandwidth_GBps:,.0f} GB/s datasheet memory bandwidth of {device}: "
        f"{milliseconds(float(copies[-1]))} a step at {words.count(n)}, not read as exchange; "
        "DDP(gradient_as_bucket_view=True) skips the copy back, half of them (measured: "
        "tests/ddp_copy_probe.py)")]


def _refuse_states_beyond_memory(params: float | None, wire_bytes_per_param: float, exchange,
                                 device_column: str) -> None:
    """Refuse a parameter count that the GPU the runs' device column names could not hold under
    DDP: every replica keeps each parameter and its gradient, at least 2 x ``wire_bytes_per_param``
    bytes a parameter (the gradient's dtype, and parameters at least as wide; buckets, optimizer
    state and activations come on top), beyond the size in the GPU's name or datasheet
    (``presets.device_memory_of``)."""
    from scalesim.presets import device_memory_of

    memory = device_memory_of(device_column) if device_column else None
    if params is None or exchange.strategy != "ddp" or memory is None:
        return
    floor_bytes = 2.0 * wire_bytes_per_param * params
    if floor_bytes <= memory[0]:
        return
    raise ScalesimError(knob_refusal(
        f"{KNOB.params} {params:.4g} on {as_literal(device_column)} (the runs' device column): "
        f"under DDP every device holds each parameter and its gradient, at least 2 x "
        f"{wire_bytes_per_param:g} bytes a parameter ({KNOB.wire_bytes}), {gib(floor_bytes)}, "
        f"more than its {gib(memory[0])}: check {KNOB.params} (the model's parameter count) and "
        f"{KNOB.wire_bytes}, or the device column"))


def _refuse_copies_beyond_steps(fit, params: float | None, step_s, transformer,
                                device_column: str, words: Nouns) -> None:
    """Refuse runs whose PyTorch DDP bucket copies, priced at the named GPU's bandwidth
    (``fit_runs.ddp_copies_s``), take at least a measured step of theirs: the parameter count
    (``--params``, or ``--workload``'s) or the GPU is not the runs' (1e12 parameters on an A100:
    10 s of copies against steps of 0.1 s), and a fit would only hide it."""
    from scalesim.fit_runs import ddp_copies_s

    copies = ddp_copies_s(fit)
    over = np.flatnonzero(copies >= np.asarray(step_s, dtype=float))
    if over.size == 0:
        return
    i = int(over[0])
    given = (f"{KNOB.workload} {as_literal(transformer.name)} ({params:.4g} parameters) on "
             f"{as_literal(transformer.gpu)} ({KNOB.gpu})" if transformer is not None else
             f"{KNOB.params} {params:.4g} on {as_literal(device_column)} (the runs' device "
             "column)")
    check = (f"check {KNOB.workload} and {KNOB.gpu}" if transformer is not None else
             f"check {KNOB.params} (the model's parameter count) and {KNOB.wire_bytes}, or the "
             "device column")
    raise ScalesimError(knob_refusal(
        f"{given}: PyTorch DDP's bucket copies of the gradients alone take "
        f"{milliseconds(float(copies[i]))} a step at the "
        f"{fit.exchange.memory_bandwidth_GBps:,.0f} GB/s datasheet memory bandwidth, not less "
        f"than the {milliseconds(float(step_s[i]))} the run on {words.count(int(fit.layout.devices[i]))} "
        f"measured (docs/model.md §4): {check}"))


def _refuse_links_beyond_bounds(fit, params: float | None, transformer, step_s) -> None:
    """Refuse a stated parameter count (``--params``, or ``--workload``'s) whose gradient these
    runs exchange faster than any link runs (a fitted bus bandwidth past the bounds' 100 TB/s)
    where holding the link to that bound, as the fitted profile must, lengthens the transfer by
    more than the model's median error of the largest measured step: the count is not the
    runs' (1e12 parameters in steps of 10-20 ms: 40 ms of transfer at the bound), and the
    remedies would start from a link the fit never had (a network 'doubled' from 100,000 GB/s,
    accumulation promising more than the compute allows). A transfer the bound keeps within
    that error (an exchange the runs hide, so its bandwidth is only bounded below) is held to
    the bound as before. ``step_s``: the runs' measured steps, None where the runs give no
    step time (no batch column): nothing to measure the transfer against."""
    from scalesim.accuracy import DATA_PARALLEL_MEDIAN_ERROR

    if params is None or step_s is None:
        return
    high = bound("busbw_GBps").high
    for level, where in (("intra", "inside a server"), ("inter", "across servers")):
        if f"{level}_transfer_s" in fit.not_shown:
            continue
        busbw = fit.busbw_GBps(level)
        longer_s = fit.gradient_bytes / (high * 1e9) - fit.values[f"{level}_transfer_s"]
        if busbw <= high or longer_s <= DATA_PARALLEL_MEDIAN_ERROR * float(np.max(step_s)):
            continue
        given = (f"{KNOB.workload} {as_literal(transformer.name)} ({params:.4g} parameters)"
                 if transformer is not None else f"{KNOB.params} {params:.4g}")
        check = (f"check {KNOB.workload}" if transformer is not None else
                 f"check {KNOB.params} (the model's parameter count) and {KNOB.wire_bytes}")
        raise ScalesimError(knob_refusal(
            f"{given}: these runs' steps exchange its {bytes_text(fit.gradient_bytes)} of "
            f"gradients {where} at {busbw:,.0f} GB/s (fitted), past any link's "
            f"{high:,.0f} GB/s: {check}"))


def _unpriced_copies_note(fit, device_column: str, words: Nouns) -> list[str]:
    """Where the fit of GPU runs could not price PyTorch DDP's bucket copies (no GPU named whose
    datasheet bandwidth is known: ``device_column_bandwidth_GBps``), how to name one, with the
    bytes they move at the largest run (``fit_runs.ddp_copy_bytes``); [] where they are priced
    or the exchange makes none."""
    from scalesim.fit_runs import ddp_copy_bytes

    if fit.exchange.memory_bandwidth_GBps is not None:
        return []
    moved = ddp_copy_bytes(fit)
    if not moved[-1] > 0.0:
        return []
    named = (f"the runs' device column names '{as_literal(device_column)}', which the datasheet "
             "tables do not list" if device_column else "the runs have no device column")
    n = int(fit.layout.devices[-1])
    return [knob_refusal(
        f"PyTorch DDP's bucket copies (each gradient into its all-reduce bucket and back, "
        f"{sig3(float(moved[-1]) / 1e9)} GB read and written a step at {words.count(n)}, "
        f"docs/model.md §4) are read as exchange, not charged to compute at a GPU's memory "
        f"bandwidth: {named}. Name the GPU as torch.cuda.get_device_name writes it (a device "
        f"column, e.g. 'NVIDIA A100-SXM4-80GB'), or give {KNOB.workload} with {KNOB.gpu}")]


def _gathered_note(workload, exchange, params_known: bool) -> str:
    """What the fitted workload of DDP runs gathers where nothing named its parameters' dtype
    (no --workload: ``fit_runs.ddp_gathered_bytes``) and it differs from their measured bytes
    a gradient, their reduction ('' otherwise): the remedies' ZeRO all-gathers read it."""
    reduce = workload.reduce_bytes_per_param
    if (exchange.sharded or not params_known or exchange.gathered_bytes_per_param is not None
            or reduce is None or reduce == workload.wire_bytes_per_param):
        return ""
    return knob_refusal(
        f"the runs' DDP all-reduced {reduce:g} bytes a gradient ({KNOB.wire_bytes}): the fitted "
        "workload's gradient reduction; the remedies' ZeRO gathers its parameters at "
        f"{workload.wire_bytes_per_param:g} bytes each, 16-bit mixed precision as its memory "
        f"counts them ({KNOB.workload} names the model's own; docs/model.md §4)")


def _judged_by_size(fit, runs, exchange, wire_bytes_per_param: float, remedies: list[Remedy],
                    first: Remedy | None, remedies_at, causes: tuple[str, ...], decisive: float):
    """(first remedy, size caveats by key, rank caveat, sizes) of ``remedies``, predicted at the
    nominal gradient size of a fit without --params, judged over the sizes the runs allow
    (``runs_gradient_size``): ``remedies_at(fit)`` predicts them from a fit at another size (a
    size it cannot predict at is left out); the remedies are re-ranked by verdict in place, and
    the first is chosen again where its own verdict changed. ``sizes``: the bytes kept and
    ruled out, for the report's details and note."""
    from scalesim.runs_gradient_size import fits_by_size, judge_by_size, rank_words

    size_fits = fits_by_size(fit, runs, exchange, wire_bytes_per_param)
    by_size = {}
    for size, one_fit in size_fits.kept:
        try:
            by_size[size] = ([replace(r) for r in remedies] if one_fit is fit
                             else remedies_at(one_fit))
        except ScalesimError:  # parameters the model cannot predict from: not judged there
            continue
    caveats = judge_by_size(remedies, by_size, decisive)
    remedies.sort(key=lambda r: DIAGNOSIS_VERDICTS.index(r.verdict))  # stable: gains kept
    if first is not None and first.verdict == SIZE_DEPENDENT:
        first = first_remedy(remedies, causes, decisive)
    sizes = {"kept_bytes": sorted(by_size), "ruled_out_bytes": size_fits.ruled_out}
    return first, caveats, rank_words(first, by_size, causes, decisive), sizes


def size_note(sizes: dict | None) -> str:
    """How the remedies were judged without --params, for the report's note ('' where they were
    not: none predicted): over which gradient sizes, which the runs ruled out."""
    from scalesim.runs_gradient_size import size_words

    if not sizes or not sizes["kept_bytes"]:
        return ""
    kept, out = sizes["kept_bytes"], sizes["ruled_out_bytes"]
    return (f"; the remedies were predicted at each gradient size from {size_words(kept[0])} to "
            f"{size_words(kept[-1])} the runs allow"
            + (f" ({', '.join(map(size_words, out))} they rule out)" if out else "")
            + f": one that helps at some and not at others says '{SIZE_DEPENDENT}' with no "
            "gain, the others' 95% bands hold every size's gain too (their cautions the "
            "spread)")


def _loader_note_of_runs(remedies: list[Remedy], data_share, devices,
                         words: Nouns, unseparated: str = "") -> list[Remedy]:
    """``remedies`` with the loader remedy's "no data stall" reason (``remedies.NO_STALL_FOUND``,
    said of the largest run, where every remedy starts) scoped to that run where the table puts
    a data stall at a smaller one: '... show no data stall' read beside 'data 19.7%' at 8 of 16.
    ``data_share``: each run's data stall over its step, ``devices`` its devices (the table's
    columns); a stall under ``NAMED_PART_SHARE`` of a step, which prints as 0 % or 1 %, is not
    one to name. ``unseparated``: the parts a fit without that stall, which the runs cannot rule
    out, puts its time in (``_unseparated_parts``), said beside it; '' where none."""
    from scalesim.remedies import INPUT_KEEPS_UP, NO_STALL_FOUND

    stalled = [(int(n), float(s)) for n, s in zip(devices[:-1], data_share[:-1], strict=True)
               if s >= NAMED_PART_SHARE]
    if not stalled:
        return remedies
    n, worst = max(stalled, key=lambda p: p[1])
    note = (f"no data stall at {words.count(int(devices[-1]))}, the largest run, where the "
            f"remedies start; at {words.count(n)} the input waits {whole_percent(worst)} of the "
            f"step: it paces the smaller runs, not this one"
            + (f"; these runs cannot tell that stall from {unseparated} (the input pipeline "
               "finding says what would)"
               if unseparated else ""))
    # the fitted supply is kept where a smaller run waits on it (``fit_runs``), so the remedy
    # may say it keeps up at the largest run: scoped to that run the same way
    return [replace(r, note=note) if r.key == "loader" and r.note in (NO_STALL_FOUND,
                                                                      INPUT_KEEPS_UP) else r
            for r in remedies]


def _overlap_rounding_note(profile, scenario, fit, decisive: float,
                           words: Nouns = GPU_NOUNS) -> str:
    """A note where the remedies' model misses the fitted largest run by the model's median
    error or more: the fit blends overlap on and off by its fitted share, a scenario runs one of
    the two (``fit_runs.fitted_profile``: on from a share of one half), so with a share well
    inside (0, 1) the step every remedy is measured against is not the fit's. '' otherwise, or
    where the model cannot predict the scenario (the remedies then say so)."""
    from scalesim.predict import predict

    phi = float(fit.values["overlap"])
    fitted = float(fit.breakdown.step_time_s[-1])
    try:
        row = predict(profile, scenario)[0]
        other = predict(profile, scenario.model_copy(update={"overlap": not scenario.overlap}))[0]
    except ScalesimError:
        return ""
    off = row.step_time_s / fitted - 1.0
    low, high = sorted((row.step_time_s, other.step_time_s))
    # the blend of the two cases is what the fit's step is: a miss from elsewhere is not this
    between = low * (1 - 1e-6) <= fitted <= high * (1 + 1e-6)
    if not fitted > 0 or abs(off) < decisive or not between:
        return ""
    case = ("on: the overlap remedy finds nothing left to hide" if scenario.overlap
            else "off")
    return (f"the fit overlaps {phi:.0%} of the exchange with backward, a scenario all of it or "
            f"none: the remedies run the largest run at {milliseconds(row.step_time_s)} a step against the "
            f"fit's {milliseconds(fitted)} ({off:+.0%}), with overlap {case}; each remedy's gain is "
            "measured from that step, so read them with that error; a profiler trace of one step "
            "measures the overlap (scalesim diagnose --trace)")


def runs_mfu(runs, transformer) -> tuple[list[dict] | None, str]:
    """(each run's {"devices", "mfu"}, the report's line) of ``runs`` (as measured: their own
    devices) that trained ``transformer`` (``runs_model.RunsModel``): model FLOPs a token
    (3 x forward, no recompute, attention without causal halving: Narayanan et al. 2021 Eq. 3,
    ``TransformerShape.model_flops_per_token``, as predict's and plan's ``mfu``) x seq_len
    tokens a sample x samples/s, over devices x the GPU's dense 16-bit peak. (None, '') without
    a transformer; (None, why) where the GPU's peak is not listed."""
    if transformer is None:
        return None, ""
    if transformer.peak_tflops is None:
        return None, (f"MFU not computed: no dense 16-bit peak listed for {transformer.gpu} "
                      "(name the GPU as the presets do, --gpu)")
    shape = transformer.shape
    per_sample = shape.model_flops_per_token() * shape.seq_len
    peak_s = runs.devices * transformer.peak_tflops * 1e12  # FLOP/s of each run's devices
    mfu = runs.samples_per_s * per_sample / peak_s
    rows = [{"devices": int(d), "mfu": float(u)} for d, u in zip(runs.devices, mfu, strict=True)]
    ends = [f"{u:.1%} at {whole(d)}" for u, d in ((mfu[0], runs.devices[0]),
                                                    (mfu[-1], runs.devices[-1]))]
    words = runs.measured_nouns
    rest = (f" {words.devices}: {transformer.name}'s "
            f"{shape.model_flops_per_token() / 1e9:.4g} GFLOP a token (3 x forward, no "
            f"recompute; Narayanan et al. 2021), {whole(shape.seq_len)} tokens a sample, "
            f"against {transformer.gpu}'s dense 16-bit peak of "
            f"{transformer.peak_tflops:g} TFLOP/s (fp8 runs: against the 16-bit peak still)")
    head = "model FLOPs utilisation (MFU) "
    if len(mfu) == 1:
        return rows, head + ends[0] + rest
    return rows, arrowed_said(head, ARROW_FIELD.join(ends), rest)  # a page writes its arrow


def refuse_beyond_peak(runs, transformer) -> None:
    """Refuse, in one line, ``runs`` (as measured) whose samples/s need ``transformer``'s weight
    matmuls alone (6 FLOPs a weight a token; the attention core left out: a causal kernel runs
    half what MFU counts) above its GPU's datasheet peak. Runs that split the model have no
    fitted micro-step to hold to the peak (``_check_runs_model``), so this is their check;
    data-parallel runs get it after that one, whose band can leave a fitted micro-step
    unpinned while the measured samples/s are not (llama3-8b on A100s at 868 ms a sample had
    been reported at an MFU of 174 %, where the same runs with a tp column were refused)."""
    if transformer is None or transformer.peak_tflops is None:
        return
    shape = transformer.shape
    peak_s = runs.devices * transformer.peak_tflops * 1e12  # FLOP/s of each run's devices
    matmuls = runs.samples_per_s * 6.0 * shape.matmul_weights() * shape.seq_len / peak_s
    if np.any(matmuls > 1.0):
        i = int(np.argmax(matmuls))
        raise ScalesimError(
            f"the runs train {rate(runs.samples_per_s[i], 'samples')} on {whole(runs.devices[i])} "
            f"{runs.measured_nouns.devices}, faster than {transformer.name} "
            f"({shape.words()}) can on {transformer.gpu}: its weight matmuls alone need "
            f"{matmuls[i]:.0%} of the {transformer.peak_tflops:g} TFLOP/s datasheet peak; "
            "describe the runs' own model (a workload JSON with their sequence length and "
            "sizes) and GPU")


def _as_replicas(runs, transformer, extrapolate_to: list[int] | None, tp_overlap: bool = False,
                 recompute_style: str = DEFAULT_RECOMPUTE_STYLE, p2p_overlap: bool = True):
    """(replica runs, the extrapolation's replica counts, the report's note) of ``runs`` that
    split the model (``runs.replica_runs``). ``extrapolate_to``: device counts, each a whole
    number of replicas. The runs' transformer (``transformer``) gives their parameter count
    and MFU only: the layout model predicts data-parallel runs, so the options of its layouts
    (``tp_overlap``, ``recompute_style``, ``p2p_overlap`` off) are refused."""
    from scalesim.fit_runs import unfilled_servers
    from scalesim.runs import replica_runs

    replicas = replica_runs(runs)
    split, m = replicas.replica_split, runs.replica_devices
    words = runs.nouns
    if transformer is not None and (tp_overlap or recompute_style != DEFAULT_RECOMPUTE_STYLE
                                    or not p2p_overlap):
        # the option by its control (``knob_refusal``: the CLI's flag, the page's label)
        option = (KNOB.tp_overlap if tp_overlap else f"{KNOB.p2p_overlap} off" if not p2p_overlap
                  else f"{KNOB.recompute_style} {as_literal(recompute_style)}")
        raise ScalesimError(knob_refusal(
            f"the runs split the model ({as_literal(split)}); {option} is for the layouts of "
            "the split-the-model remedy, which runs fitted as model replicas do not get "
            f"(another split is scalesim plan --workload's question): drop {option}"))
    if extrapolate_to is not None:
        odd = [p for p in extrapolate_to if p % m]
        if odd:
            raise ScalesimError(f"extrapolate to {whole(odd[0])} {words.devices}: not a whole "
                                f"number of model replicas of {words.count(m)} ({split}); give "
                                f"multiples of {m}")
        g = replicas.devices_per_node  # replicas a server holds, as the fit places them
        uneven = [p for p in extrapolate_to if unfilled_servers(p // m, g)]
        if uneven:
            raise ScalesimError(f"extrapolate to {whole(uneven[0])} {words.devices} "
                                f"({whole(uneven[0] // m)} replicas): its data-parallel groups "
                                f"do not fill whole {words.servers} at {g} replicas a "
                                f"{words.server}, as the runs placed them; give a multiple of "
                                f"{whole(m * g)} {words.devices}")
        extrapolate_to = [p // m for p in extrapolate_to]
    first, last = runs.rows[0], runs.rows[-1]
    spans = _replica_servers(runs.model_split, last.replicas, runs.devices_per_node)
    replicas_devices = (f"{whole(first.replicas)}{ARROW_FIELD}{whole(last.replicas)} for "
                        f"{whole(first.devices)}{ARROW_FIELD}"
                        f"{as_literal(words.count(last.devices))}")
    note = arrowed_said(
        f"the runs split the model ({split}): one model replica is {words.count(m)}, and the "
        "fit, the knee, the remedies and the extrapolation count replicas (the data-parallel "
        "degree), ", replicas_devices,
        f"; the findings' and the fit's {words.servers} are those one data-parallel group "
        "spans (tp innermost, pp outermost), the table's and the extrapolation's the job's. "
        "Tensor-, context- and pipeline-parallel traffic is part of a replica's compute, so a "
        "change in it between runs reads as compute, and a link's fitted bandwidth is a "
        f"replica's, the sum of its {words.devices}' concurrent exchanges")
    if runs.model_split["pp"] > 1:
        note = retitled(note, after="; " + pipeline_bubble_words(
            next((r for r in runs.rows if r.schedule), first)))
    if replicas.nic_servers_per_node > 1:
        n = replicas.nic_servers_per_node
        note = retitled(note, after=f"; a replica spans {words.count(spans, 'server')} and the "
                        f"replicas of one of the fit's {words.servers} span {n}: a faster network "
                        f"is priced on all {n} {words.servers}' NICs")
    note = retitled(note, after=' (docs/diagnose.md "Runs that split the model")')
    return replicas, extrapolate_to, note


def pipeline_bubble_words(row) -> str:
    """How the fit charges the fill and drain of ``row``'s pipeline (a ``runs.RunRow`` with
    pp > 1): its schedule, as given or assumed, and the micro-step times it idles a step."""
    v = row.virtual_stages
    schedule = row.pipeline_schedule
    given = "" if row.schedule else ", assumed: no schedule column"
    chunks = f" x {v} chunks" if schedule == "interleaved" else ""
    rule = {"1f1b": "(pp - 1)", "gpipe": "(pp - 1)", "interleaved": "(pp - 1)/v",
            "zb": "a third of (pp - 1)"}[schedule]
    return (f"the replicas' pipeline ({row.pp} stages{chunks}, schedule "
            f"{SCHEDULE_SHORT[schedule]}{given}) idles "
            f"{rule} = {row.pipeline_bubble:.3g} micro-steps of one stage a step in fill and drain "
            "(Narayanan et al. 2021 §2.2; zero bubble: Qi et al. 2023), so a step of k "
            f"micro-batches is fitted as k + {row.pipeline_bubble:.3g} stage micro-steps and "
            "more micro-batches (accumulation) shrink the bubble's share")


def _bubble_share_words(bubble: float, accumulation) -> str:
    """The pipeline's fill and drain as a share of a replica's compute, ``bubble / (k +
    bubble)`` stage micro-steps, at the first and the last run's ``k`` (micro-batches a step)."""
    k0, k1 = float(accumulation[0]), float(accumulation[-1])
    return (f"the pipeline's fill and drain, {bubble:.3g} stage micro-steps a step: "
            f"{whole_percent(bubble / (k0 + bubble))} of a replica's compute at {k0:g} micro-batches -> "
            f"{whole_percent(bubble / (k1 + bubble))} at {k1:g}")


def _runs_shard_group(runs, measured, exchange, extrapolate_to: list[int] | None):
    """(exchange, extrapolation counts, note) of ``runs`` (replicas where ``measured`` split
    the model) under ``exchange``'s hybrid shard group: given in ranks of dp x cp, so in
    replicas of a split with cp > 1 it is ``shard_group / cp``; at or above every run's
    data-parallel ranks each run shards fully (a note says so); refused in one line where it
    does not divide a run's, or an extrapolation count's (a default count that cannot run is
    left out, said in the note)."""
    from scalesim.fit_runs import default_extrapolation_devices

    words, device_words, note = runs.nouns, runs.measured_nouns, ""
    cp = measured.model_split["cp"] if runs.replica_split else 1
    if exchange.shard_group and cp > 1:
        if exchange.shard_group % cp:
            raise ScalesimError(f"shard group {exchange.shard_group} (ranks of dp x cp) is not a "
                                f"whole number of replicas of cp {cp}; give a multiple of {cp}")
        exchange = replace(exchange, shard_group=exchange.shard_group // cp)
    if exchange.shard_group and exchange.shard_group >= int(runs.devices.max()):
        note = (f"shard group {exchange.shard_group * cp} at or above every run's data-parallel "
                "ranks: each run sharded over all of them (full sharding), as the fit and the "
                "remedies do; extrapolations beyond it shard hybrid")
    for r in runs.rows:  # the fit's devices: its data-parallel ranks (replicas where split)
        if why := exchange.run_problem(r.devices):
            raise ScalesimError(f"the run on {words.count(r.devices)}: {why}")
    if exchange.shard_group:
        m = measured.replica_devices
        for p in extrapolate_to or []:
            if why := exchange.run_problem(p):
                raise ScalesimError(f"extrapolate to {device_words.count(p * m)}: {why}")
        if extrapolate_to is None:
            wanted = default_extrapolation_devices(runs)
            extrapolate_to = [p for p in wanted if not exchange.run_problem(p)]
            if len(extrapolate_to) < len(wanted):
                left = [p * m for p in wanted if p not in extrapolate_to]
                note = "; ".join(n for n in (note, (
                    f"extrapolation to {', '.join(map(whole, left))} "
                    f"{device_words.devices} left out: shard group "
                    f"{exchange.shard_group * cp} does not divide them")) if n)
            extrapolate_to = extrapolate_to or None
    return exchange, extrapolate_to, note


def _server_devices_note(runs, fit, words: Nouns) -> str:
    """What the fit knows of servers of ``Runs.devices_per_node`` that the runs used fewer
    devices of: given by --gpus-per-node (``Runs.server_devices``), or where a run filled more
    of one than the runs across servers did (8 on 1 server, then 16 on 4): the inter-server
    link is what the devices they used reached (a whole server's NICs unmeasured: taken as it
    is), and where no run put two in one server, the intra-server link is held, not measured;
    '' where the runs filled their servers."""
    n, used, flagged = runs.devices_per_node, runs.used_per_node, runs.server_devices
    across = runs.devices[runs.nodes > 1] // runs.nodes[runs.nodes > 1]
    across_used = int(across.max()) if across.size else n
    if (flagged is None or n <= used) and across_used >= n:
        return ""
    inter = (f"the {link_GBps(fit.busbw_GBps('inter'))} busbw" if fit.params_known
             else "the gradient transfer time")
    last = runs.rows[-1]
    said = (f"{KNOB.devices_per_node} {n}: the runs used at most {used} of each {words.server}'s "
            f"{n} {words.gpus}; the fitted {words.server} holds {n}, a named network reaches "
            f"the NICs of the {words.gpus} a run used (predict.inter_nic_share), and the "
            f"extrapolation fills whole {words.servers} of {n}"
            if flagged is not None and n > used else
            f"the runs across {words.servers} used at most {across_used} of each "
            f"{words.server}'s {n} {words.gpus} (a run put {n} in one): the fitted scenario is "
            f"the largest run as it ran, {last.devices} on "
            f"{words.count(last.nodes, 'server')}, and the extrapolation fills whole "
            f"{words.servers} of {n}")
    if fit.multi_node_measured and across_used < n:
        said += (f"; its {words.link('inter_node')} is {inter} the runs reached with "
                 f"{across_used} {words.noun(across_used, 'gpu')} a {words.server}, taken as it "
                 f"is for whole {words.servers} (their other NICs are not measured)")
    if "intra_transfer_s" not in fit.fitted:
        said += (f"; no run put two {words.gpus} in one {words.server}, so its "
                 f"{words.link('intra_node')} is held, not measured: the extrapolation's rows "
                 f"of two or more a {words.server} say so, their band holding it anywhere from "
                 f"the {words.link('inter_node')}'s busbw to 20x it")
    return knob_refusal(said)


def _replica_servers(split: dict[str, int], replicas: int, devices_per_node: int) -> int:
    """Servers of ``devices_per_node`` devices that one model replica's devices sit in, for a
    job split as ``split`` (tp, pp, cp) over ``replicas`` (``layout.replica_servers``)."""
    return replica_servers(split["tp"], split["cp"], split["pp"], replicas, 1, devices_per_node)


def _with_devices(details: dict, replica_devices: int, devices_per_node: int) -> None:
    """Give the knee, the extrapolation and the remedies' run of runs fitted as model replicas
    (``_as_replicas``) in devices, as the report's table, beside their replica counts, and the
    extrapolation's servers as the job's (``devices_per_node`` devices each), in place."""
    knee = details["knee"]
    if knee is not None:
        for end in ("before", "after"):
            knee[f"replicas_{end}"] = knee[f"devices_{end}"]
            knee[f"devices_{end}"] *= replica_devices
    for e in details["extrapolation"]:
        e["replicas"] = e["devices"]
        e["devices"] *= replica_devices
        e["nodes"] = -(-e["devices"] // devices_per_node)
    details["remedies_at_replicas"] = details["remedies_at_devices"]
    details["remedies_at_devices"] *= replica_devices


def _parameters_alone(profile, remedies: list[Remedy], exchange, memory_bytes, transformer) -> bool:
    """Where memory is treated as unknown (``_ran_beyond_memory``: the runs ran beyond the
    model's estimate), the remedy that holds the parameters whole (ZeRO-3 -> ZeRO-2, the
    sharding remedy of ZeRO-3 runs) is still judged on the parameters alone: ``params x
    param_bytes_per_param`` above the GPU's ``memory_bytes`` cannot fit, whatever else the
    estimate got wrong (Llama 3 70B: 141 GB of bf16 weights against an 80 GB GPU). True where
    it changed one."""
    if memory_bytes is None or exchange.strategy != "zero3":
        return False
    need = profile.workload.params * profile.workload.param_bytes_per_param
    if need <= memory_bytes:
        return False
    changed = False
    for i, r in enumerate(remedies):
        if r.key == "sharding" and r.verdict != "not runnable":
            remedies[i] = replace(r, verdict="not runnable", note=(
                f"does not fit in the {transformer.gpu}'s {memory_bytes / GIB_BYTES:.4g} GiB: the "
                f"parameters alone, held whole, take {need / GIB_BYTES:.4g} GiB "
                f"({profile.workload.params / 1e9:.3g} G x "
                f"{profile.workload.param_bytes_per_param:g} bytes)"))
            changed = True
    return changed


def _ran_beyond_memory(profile, scenario, devices: int, transformer, exchange) -> str:
    """'' unless the layout model's memory estimate for the runs' own largest run (``scenario``
    at ``devices``) exceeds ``transformer``'s GPU memory: they ran, so the estimate is off for
    them (recompute, sharding, a shorter sequence than the shape says), and judging remedies
    by it would call today's run "does not fit" and any change "makes it fit" (session-24
    audit: GPT 1.7B at 4 a GPU on A100 40GB). Then the note that says so (with the flag that
    says how the runs sharded, where they were read as DDP: ``exchange``); the caller treats
    memory as unknown. A template (``knob_refusal``): the Diagnose page says its control."""
    from scalesim.predict import predict

    now = predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]
    if now.fits:
        return ""
    words = hardware_nouns(profile.hardware)
    # the input that says how the runs sharded by its control (the CLI's flag, the page's label)
    how = (f"sharding ({KNOB.strategy} zero1-3 says so)" if not exchange.sharded
           else "offloading" if exchange.strategy == "zero3"
           else "more sharding than " + exchange.strategy)
    return knob_refusal(
        f"the model estimates {now.memory_bytes / GIB_BYTES:.1f} GiB per {words.device} for the "
        f"largest run's own layout ({exchange.strategy}), more than the "
        f"{as_literal(transformer.gpu)}'s {transformer.memory_bytes / GIB_BYTES:.4g} GiB, yet the "
        f"runs ran (with recompute, {how} or a shorter sequence than the shape says?): memory is "
        "treated as unknown, so every remedy is assumed to fit")


def _check_runs_model(profile, scenario, runs, transformer, fit) -> str:
    """One line (an error) where the runs' fitted micro-step is faster than ``transformer``'s
    matmuls alone at its GPU's datasheet peak (the attention core at its kernel's own share of
    it where the pin holds it there, an A100's 0.656: ``layout_predict.curve_beyond_peak``),
    even at the top of its 95 % band: that shape on that GPU cannot have run them (a sequence
    length or model size that is not theirs, another GPU), and every remedy the layout model
    predicts would hold compute at the peak, slower than measured (the example runs,
    BERT-large at sequence 128, described as BERT-large at sequence 512: 'faster network
    +13 %' where the runs' own fit says +253 %). Where the band reaches the peak's time the
    runs do not pin their compute (three runs of one batch, session-24 audit: 454 ms +-
    415 %): no error, but the note returned says the remedies take the peak's time; '' where
    the fit is slower than the peak."""
    from scalesim.layout_predict import curve_beyond_peak, pin_attention_share

    b = float(runs.micro_batch[-1])
    at_peak_s, fastest_s, measured_s = curve_beyond_peak(profile, scenario, b)
    if not fastest_s > measured_s:  # NaN: no datasheet peak to hold the runs to
        return ""

    slow_core = fastest_s > at_peak_s  # the pin's attention core at its kernel's share (A100)

    def core(ms: str) -> str:
        return (f", {ms} with its attention core at {pin_attention_share(profile):.2g} of it "
                "(FlashAttention-2's rate there)") if slow_core else ""

    errors = [fit.stderr(n) for n in ("per_sample_s", "overhead_s") if n in fit.fitted]
    spread = band_factor(max(errors)) if errors and None not in errors else np.inf
    if measured_s * spread >= fastest_s:  # the runs leave room for the peak's time
        return (f"the fitted micro-step of {b:g} samples, {milliseconds(measured_s)} (95% band up to "
                + ("unbounded" if not np.isfinite(spread) else milliseconds(measured_s * spread))
                + f"), is faster than {transformer.name}"
                + (" can run" if slow_core else "'s matmuls alone")
                + f" at the {transformer.peak_tflops:g} TFLOP/s peak of {transformer.gpu} ("
                + ("its matmuls alone " if slow_core else "")
                + f"{milliseconds(at_peak_s)}{core(milliseconds(fastest_s))}); the runs do not pin "
                "it, so the remedies compute at that peak's time")
    raise ScalesimError(
        f"the runs compute a micro-step of {b:g} samples in {milliseconds(measured_s)}, faster "
        f"than {transformer.name} ({transformer.shape.words()}) can on {transformer.gpu}: its "
        f"matmuls alone take {milliseconds(at_peak_s)} at the {transformer.peak_tflops:g} "
        f"TFLOP/s datasheet peak{core(milliseconds(fastest_s))}; describe the runs' own "
        "model (a workload JSON with their sequence length and sizes) and GPU")


def _parts_over_the_step(share_of_step: dict, devices, fit, words: Nouns = GPU_NOUNS,
                         measured=()) -> list[str]:
    """A note where a part of the step (fitted or measured, ``runs_shares.raw_over_step``), or
    the parts together, is more than the measured step: the fitted model does not describe the
    runs (a data stall of 138 % of the step, a remedy of +125,501 %; comm 20 % and data 93 % of
    a run of 130 ms the model puts at 207), and its shares and remedy gains should not be read
    as findings. Together, the parts must pass the step by ``OTHER_CAUSE_SHARE`` (a fitted
    straggler wait of 0.9 % beside measured parts that fill the step is not said); measured
    parts (``measured``, their keys) alone together over the step are timing noise the runs
    allow (``runs.RANK_TIME_SLACK``), not a misfit."""
    names = {"comm": "exposed communication", "data": "data stall",
             "straggler": "straggler wait"}
    parts = {k: np.asarray(v, dtype=float) for k, v in share_of_step.items() if k != "compute"}
    over = [(float(v[i]), f"the {names.get(name, name)} is", int(devices[i]))
            for name, v in parts.items() for i in range(len(v)) if v[i] > 1.0]
    if not over and parts:  # none alone: the parts the fit gives a run together
        together = sum(parts.values())
        i = int(np.argmax(together))
        # past the step by a share a report names (OTHER_CAUSE_SHARE), with a fitted part in it
        if (together[i] > 1.0 + OTHER_CAUSE_SHARE
                and any(parts[k][i] > 0 for k in parts if k not in measured)):
            named = [names.get(k, k) for k, v in parts.items() if v[i] >= 0.005]  # 1 % shown
            over = [(float(together[i]), f"the {' and '.join(named)} together are", int(devices[i]))]
    if not over:
        return []
    share, said, n = max(over)
    return [f"{said} {share:.0%} of the measured step at {words.count(n)}: more than the step "
            f"itself, so the fitted model does not describe these runs (rms residual "
            f"{fit.rmse_rel:.0%}); read its shares and remedy gains as unreliable, and check the "
            f"runs (the same settings in every row, each run's {words.devices} and throughput)"]
