"""Remedies for lost scaling efficiency, each applied alone and ranked by predicted gain.

The remedies are the seed's list: a bigger per-device batch, overlap of communication with
backward, gradient accumulation, more loader workers or caching the input, sharding (ZeRO), a
faster interconnect, and fixing a slow device. Each one changes the scenario (or the profile's
links) in one documented way; the model predicts the result at the same device count; the gain is
the change in throughput. A remedy that does not apply (overlap already on, no data stall, no
slow device...) is still returned with ``applicable=False`` and the reason, so a report can say
why it was not suggested.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim.errors import ScalesimError
from scalesim.predict import Prediction, predict
from scalesim.schemas import Profile, Scenario

FAST_INTER_BUSBW_GBPS = 192.0  # 8x 200 Gb/s HDR InfiniBand per node, measured (nccl#812)


@dataclass(frozen=True)
class RemedyResult:
    key: str  # bigger_batch, overlap, accumulation, loader, sharding, interconnect, slow_device
    title: str  # what changes, in words a manager can read
    scenario: Scenario
    profile: Profile
    prediction: Prediction | None  # None when not applicable
    gain: float  # throughput ratio minus one (0.25 = +25 %); 0 when not applicable
    applicable: bool
    reason: str = ""  # why not applicable, or a caveat (memory, global batch changes)


def _one(profile: Profile, scenario: Scenario, devices: int) -> Prediction:
    return predict(profile, scenario.model_copy(update={"devices": [devices]}))[0]


def _candidates(profile: Profile, scenario: Scenario, now: Prediction):
    """(key, title, scenario, profile, reason-if-not-applicable, caveat) for each remedy."""
    strong = scenario.global_batch is not None
    b = now.micro_batch
    out = []
    if strong:
        out.append(("bigger_batch", "Double the global batch (per-device batch "
                    f"{b} -> {2 * b})", scenario.model_copy(
                        update={"global_batch": 2 * scenario.global_batch}), profile, "",
                    "changes the optimisation: check time-to-quality"))
    else:
        out.append(("bigger_batch", f"Double the per-device batch ({b} -> {2 * b})",
                    scenario.model_copy(update={"micro_batch": 2 * b}), profile, "",
                    "global batch doubles: check time-to-quality"))
    out.append(("overlap", "Overlap gradient exchange with backward",
                scenario.model_copy(update={"overlap": True}), profile,
                "overlap is already on" if scenario.overlap else "", ""))
    k = scenario.accumulation
    acc_scn = scenario.model_copy(update={"accumulation": 4 * k})
    if strong:
        acc_reason = ("" if scenario.global_batch % (now.devices * 4 * k) == 0
                      else "global batch does not split into 4x more micro-steps")
        caveat = "same global batch, 4x smaller micro-batches"
    else:
        acc_reason, caveat = "", "global batch grows 4x: check time-to-quality"
    out.append(("accumulation", f"Accumulate gradients over {4 * k} micro-steps (now {k})",
                acc_scn, profile, acc_reason, caveat))
    out.append(("loader", "Cache the input / add loader workers (no data stall)",
                scenario, profile.model_copy(update={"input_pipeline": None}),
                "" if now.data_stall_s > 0 else "the input pipeline keeps up already", ""))
    target = "zero1" if scenario.strategy == "ddp" else "zero3"
    out.append(("sharding", f"Shard optimizer state ({scenario.strategy} -> {target})",
                scenario.model_copy(update={"strategy": target}), profile,
                "" if scenario.strategy != "zero3" else "already fully sharded",
                "saves memory; communication does not shrink"))
    hw = profile.hardware
    if now.nodes > 1:
        inter = scenario.inter_busbw_GBps or hw.inter_node.busbw_GBps
        faster = max(FAST_INTER_BUSBW_GBPS, 2 * inter)
        out.append(("interconnect", f"Faster inter-server network ({inter:g} -> {faster:g} GB/s "
                    "busbw)", scenario.model_copy(update={"inter_busbw_GBps": faster}),
                    profile, "", ""))
    else:
        intra = scenario.intra_busbw_GBps or hw.intra_node.busbw_GBps
        out.append(("interconnect", f"Faster intra-server links ({intra:g} -> {2 * intra:g} "
                    "GB/s busbw)", scenario.model_copy(update={"intra_busbw_GBps": 2 * intra}),
                    profile, "" if now.devices > 1 else "one device does not communicate", ""))
    has_slow = scenario.slow_device is not None and scenario.slow_factor > 1.0
    out.append(("slow_device", "Replace or fix the slow device",
                scenario.model_copy(update={"slow_device": None, "slow_factor": 1.0}), profile,
                "" if has_slow else "no slow device in the scenario", ""))
    return out


def rank_remedies(profile: Profile, scenario: Scenario, devices: int):
    """Baseline prediction at ``devices`` and every remedy, best predicted gain first."""
    if devices < 1:
        raise ScalesimError("devices must be 1 or more")
    now = _one(profile, scenario, devices)
    results = []
    for key, title, scn, prof, reason, caveat in _candidates(profile, scenario, now):
        if reason:
            results.append(RemedyResult(key, title, scn, prof, None, 0.0, False, reason))
            continue
        try:
            after = _one(prof, scn, devices)
        except ScalesimError as exc:
            results.append(RemedyResult(key, title, scn, prof, None, 0.0, False, str(exc)))
            continue
        note = caveat
        if not after.fits:
            note = "does not fit in device memory" + (f"; {caveat}" if caveat else "")
        gain = after.samples_per_s / now.samples_per_s - 1.0
        results.append(RemedyResult(key, title, scn, prof, after, gain, True, note))
    # Applicable first, then those that fit in memory, then by gain.
    results.sort(key=lambda r: (not r.applicable,
                                not (r.prediction is not None and r.prediction.fits), -r.gain))
    return now, results
