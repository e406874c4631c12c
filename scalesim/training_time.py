"""Time and money to finish training, with the large-batch penalty, for any batch and device count.

One definition used by the remedies' ranking, the decision card and goal seeking (so the three
agree with each other and with ``scalesim predict``):

* with a training length (below) it wins, as in ``predict``'s cost; else
* with a critical batch size B_noise and E_min (samples to quality at a tiny batch) known: the time
  to quality ``S_min (1 + B_noise/B) x step_time`` (McCandlish et al. 2018; equals
  ``Prediction.time_to_quality_s``);
* with a training length (``train_samples``, the samples the run needs at the *reference* global
  batch B_ref, i.e. today's) and B_noise known: a run at another global batch B needs
  ``train x (1 + B/B_noise) / (1 + B_ref/B_noise)`` samples (the same model's
  ``E = E_min (1 + B/B_noise)``, anchored at today's batch), so bigger batches are not free;
* with a training length and no B_noise: ``train`` samples whatever the batch (stated as an
  assumption: the batch does not change the samples needed);
* otherwise unknown (None).

A run ends at an optimizer step: time to finish is the *whole* steps it takes,
``ceil(samples / global_batch) x step_time`` (``whole_steps``, docs/model.md §9; the last partial
batch is dropped or padded to a full one, as frameworks do), so a run shorter than one global
batch still takes one full step.

Cost is hours x billed devices x USD per device-hour: a cloud bills whole instances, so the
devices billed are the run's devices rounded up to the instance shapes the provider rents
(``scalesim.billing``; 12 GPUs of 8-GPU instances bill 16). Arrays in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalesim.billing import billed_devices, billing_words, job_sizes
from scalesim.device_nouns import Nouns
from scalesim.figures import number, whole
from scalesim.model.quality import samples_to_quality
from scalesim.schemas import Profile, Scenario


@dataclass(frozen=True)
class Goal:
    """What "finished" means for a scenario, resolved from the scenario and the profile."""

    critical_batch: float | None  # B_noise, samples
    min_samples: float | None  # E_min, samples
    train_samples: float | None  # samples in the run at the reference global batch
    price_per_device_hour: float | None  # USD
    server_devices: int = 1  # devices the run uses per server
    instance_sizes: tuple[int, ...] | None = None  # GPUs per rentable shape (the hardware's
    # whole server when it rents no smaller ones); None: whole servers of server_devices
    whole_server_devices: int | None = None  # devices a whole server holds (a GB200 NVL72
    # rack's 72, of which a job of 8 per rack is billed whole trays); None: server_devices

    def billed_devices(self, devices, instance_sizes=None):
        """Devices billed for ``devices`` (array): whole instances (``scalesim.billing``) of
        the goal's shapes, or of ``instance_sizes`` where given (a network upgrade rented as
        another instance type: ``NetworkUpgrade.billed_sizes``)."""
        return billed_devices(devices, self.server_devices,
                              self.instance_sizes if instance_sizes is None else instance_sizes)

    def billing_said(self, device_name: str, words: Nouns) -> str:
        """How the goal's devices are billed, in ``words`` (the hardware's nouns), the one
        sentence of predict's cost line, decide's price and the Cost tab
        (``billing.billing_words``)."""
        return billing_words(self.server_devices, self.instance_sizes, device_name, words,
                             self.whole_server_devices)

    def usd_per_hour(self, devices, instance_sizes=None):
        """USD per hour of the billed devices (array; ``instance_sizes`` as
        ``billed_devices``), or None without a price."""
        if self.price_per_device_hour is None:
            return None
        return self.billed_devices(devices, instance_sizes) * self.price_per_device_hour

    @property
    def kind(self) -> str | None:
        """'train' (a training length), 'quality' (E_min and B_noise) or None (nothing known).

        A training length wins when both are given, as in ``predict``'s cost.
        """
        if self.train_samples is not None:
            return "train"
        if self.critical_batch is not None and self.min_samples is not None:
            return "quality"
        return None

    @property
    def penalised(self) -> bool:
        """True when a bigger global batch costs more samples (B_noise is known)."""
        return self.critical_batch is not None and self.kind is not None

    def label(self) -> str:
        return {"quality": "time to quality", "train": "time to train"}.get(self.kind or "", "")


# the knobs that state a training length (``ScalesimError.knobs`` of a refusal that needs one):
# a sample count, or the samples to quality with the critical batch size (docs/model.md §9)
TRAINING_LENGTH_KNOBS = ("train_samples", "min_samples_to_quality", "critical_batch_size")


def resolve_goal(profile: Profile, scenario: Scenario) -> Goal:
    """The goal the scenario (over the profile's workload, hardware and noise scale) states."""
    wl = profile.workload
    b_crit = scenario.critical_batch_size or wl.critical_batch_size
    if b_crit is None and profile.noise_scale is not None:  # measured by calibration
        b_crit = profile.noise_scale.b_simple
    price = scenario.price_per_device_hour
    if price is None:
        price = profile.hardware.price_per_device_hour
    hw = profile.hardware
    sizes = job_sizes(scenario.instance_sizes, hw.instance_sizes, hw.devices_per_node,
                      scenario.devices_per_node, hw.allocation_devices)
    return Goal(critical_batch=b_crit,
                min_samples=scenario.min_samples_to_quality or wl.min_samples_to_quality,
                train_samples=scenario.train_samples or wl.train_samples,
                price_per_device_hour=price,
                server_devices=scenario.devices_per_node or profile.hardware.devices_per_node,
                instance_sizes=tuple(sizes), whole_server_devices=hw.devices_per_node)


def zero_price_note(goal: Goal) -> str | None:
    """The words every command that compares money says of a price of 0 USD per device-hour
    (predict, decide, goal; the app shows theirs): accepted, since servers already paid for
    cost nothing more per hour, but every device-hour is then free, so money tells plans apart
    by nothing but a priced network upgrade, and the cheapest is the soonest (its tie-break)."""
    if goal.price_per_device_hour != 0 or goal.kind is None:
        return None
    return ("the price is $0 per device-hour: device time costs nothing, so every plan costs $0 "
            "but for a priced network upgrade, and the cheapest is simply the soonest; give "
            "the price a device-hour costs you (for servers you own, their cost spread over "
            "their hours) to compare money")


def samples_needed(goal: Goal, global_batch, reference_batch):
    """Samples the run needs at ``global_batch`` (array), or None when no goal is known."""
    b = np.asarray(global_batch, dtype=float)
    if goal.kind == "quality":
        return samples_to_quality(b, goal.critical_batch, goal.min_samples)
    if goal.kind == "train":
        if goal.critical_batch is None:
            return np.full(b.shape, goal.train_samples)
        ref = np.asarray(reference_batch, dtype=float)
        return goal.train_samples * (1.0 + b / goal.critical_batch) / (
            1.0 + ref / goal.critical_batch)
    return None


# relative slack under which a step count is taken as whole already, so that float noise in
# E_min / B_noise x (1 + B_noise/B) (e.g. 1000.0000000002) does not add a step
_WHOLE_SLACK = 1e-9


def whole_steps(samples, global_batch):
    """Optimizer steps a run of ``samples`` (array, samples) takes at ``global_batch`` (array,
    samples a step): ``ceil(samples / global_batch)``, at least one. A run ends at a step and its
    last step is a full global batch (a partial last batch is dropped or padded, e.g. PyTorch
    DataLoader ``drop_last``), docs/model.md §9."""
    steps = np.asarray(samples, dtype=float) / np.asarray(global_batch, dtype=float)
    nearest = np.rint(steps)
    # a count within the slack of a whole number is that number (never one less: scaling the
    # count down by the slack dropped whole steps beyond 1e9 of them)
    whole = np.abs(steps - nearest) <= _WHOLE_SLACK * np.abs(steps)
    return np.maximum(np.where(whole, nearest, np.ceil(steps)), 1.0)


def run_time_s(samples, global_batch, step_time_s):
    """Seconds of a run of ``samples`` (array): whole steps x ``step_time_s`` (arrays)."""
    return whole_steps(samples, global_batch) * np.asarray(step_time_s, dtype=float)


def time_to_goal_s(goal: Goal, step_time_s, global_batch, reference_batch):
    """Seconds to finish (array): the whole optimizer steps of the samples needed
    (``samples_needed``) x the step time; None when no goal is known. See the module docstring."""
    samples = samples_needed(goal, global_batch, reference_batch)
    if samples is None:
        return None
    return run_time_s(samples, global_batch, step_time_s)


def partial_batch_note(goal: Goal, global_batch, reference_batch,
                       batch_flag: str = "--global-batch") -> str | None:
    """The words predict, goal and decide (and the app) say where the samples a run needs are
    fewer than one global batch (``global_batch``, array): the run is charged one full step, so
    its time is the step's, not a fraction of it; None otherwise. ``batch_flag``: the flag that
    makes the batch smaller (goal takes no --global-batch: its --batch)."""
    b = np.atleast_1d(np.asarray(global_batch, dtype=float))
    samples = samples_needed(goal, b, reference_batch)
    if samples is None:
        return None
    short = np.atleast_1d(samples) < b
    if not short.any():
        return None
    what = ("the training length" if goal.kind == "train" else "the samples to quality")
    fix = " or more --train-samples" if goal.kind == "train" else ""
    n, gb = float(np.min(np.atleast_1d(samples)[short])), int(np.min(b[short]))
    return (f"{what} ({number(n)} sample{'' if n == 1 else 's'}) is less than one global batch "
            f"({whole(gb)} sample{'' if gb == 1 else 's'}): a run ends at a whole optimizer "
            f"step, so it is charged one full step; give a smaller {batch_flag}{fix}")


def cost_usd(goal: Goal, seconds, devices):
    """USD for ``seconds`` on ``devices`` (arrays): the billed devices' hours x the price per
    device-hour; None without a price or a time."""
    hourly = goal.usd_per_hour(devices)
    if seconds is None or hourly is None:
        return None
    return np.asarray(seconds, dtype=float) / 3600.0 * hourly


def relative_quality_time(goal: Goal, step_time_s, global_batch):
    """Time to quality up to a constant factor, ``(1 + B_noise/B) x step_time`` (S_min cancels),
    so options can be ranked by it with only a critical batch size known; None without one."""
    if goal.critical_batch is None:
        return None
    b = np.asarray(global_batch, dtype=float)
    return (1.0 + goal.critical_batch / b) * np.asarray(step_time_s, dtype=float)
