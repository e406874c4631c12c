"""The device counts of a ``--devices`` list that a one-value setting cannot run, and the one
note that names them: predict leaves them out and sweep drops their rows, in the same words
(the app, the shard group's; docs/model.md §16, "Counts a setting cannot run").

Four rules, each a ``LeftOut`` of the counts it is given: a model split tp x pp (x cp) that
does not divide a count (``split_left_out``), a fixed global batch that dp x accumulation does
not divide (``batch_left_out``) or splits into micro-batches past the bounds table's largest
(``micro_batch_left_out``), a shard group below a count's dp (x cp) that does not divide it
(``shard_group_left_out``). ``layout_predict.counts_that_run`` applies them in one order, for
predict, sweep and the app, and refuses a list none of whose counts runs. Each note names the
rule's values, the counts left out and, where one exists, a value of the setting that runs
every count (the gcd or lcm of the counts' sizes). The note and the reason are templates
(``layout.knob_refusal``): their line is the CLI's, in its notation ('tp x pp = 16', 'dp 24')
with each fix's knob by its flag; the app says them naming its controls ('Tensor parallel 8 x
Pipeline stages 2 = 16', 'the 24 data-parallel ranks'), a sweep a ``--scenario`` file's setting
by its key (``errors.in_words_of``, ``cli.given_words``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scalesim.bounds import flag_of
from scalesim.device_nouns import CPU_NOUNS, GPU_NOUNS
from scalesim.errors import KNOB
from scalesim.figures import count_list, either, whole
from scalesim.layout import dp_ranks, knob_refusal, model_split_template, shard_group_problem


@dataclass(frozen=True)
class LeftOut:
    """The device counts a rule leaves out (ascending; empty: none), its note ('' for none),
    the rule's reason alone ('shard group 16 does not divide dp 24 or 40', for a refusal that
    names these counts beside another rule's: ``layout_predict.counts_that_run``), each a
    template (``_left_out``), and the knobs whose values it refuses (``ScalesimError.knobs``)."""

    counts: tuple[int, ...] = ()
    note: str = ""
    why: str = ""
    knobs: tuple[str, ...] = ()


def _left_out(left, devices: str, knobs: tuple[str, ...], why: tuple[str, str],
              fix: tuple[str, str], instead: tuple[str, str], which: str = "") -> LeftOut:
    """The ``LeftOut`` of the counts ``left``: its reason and note (``left_out_note``) as
    templates (``layout.knob_refusal``); ``why``, ``fix`` and ``instead`` each (the page's
    words naming the controls, the CLI's notation), a knob in either named '{field}'."""
    page, cli = (left_out_note(w, left, devices, f, i, which)
                 for w, f, i in zip(why, fix, instead, strict=True))
    return LeftOut(tuple(sorted(left)), knob_refusal(page, knobs, cli=cli),
                   knob_refusal(why[0], knobs, cli=why[1]), knobs)


def callers_words(named: Callable[[str], str] | None, *fields: str) -> tuple[str, ...]:
    """``fields``, the knobs a line names through ``named``, where ``named`` is its caller's own
    namer (the app's control labels); () where it is the CLI's flags (None, ``flag_of``): a
    refusal's ``ScalesimError.controls_named``."""
    return () if named is None or named is flag_of else fields


def left_out_note(why: str, left, devices: str, fix: str, instead: str, which: str = "") -> str:
    """'<why>: the rows on 24 and 40 devices are left out; <fix> runs every count, or
    <instead>': the one sentence of every rule (``fix`` '' where no value runs every count;
    ``which`` the rows' kind where others at those counts run, 'ZeRO '; 'the row on 1 device'
    in the singular)."""
    one = len(left) == 1
    runs = f"{fix} runs every count, or " if fix else ""
    noun = _singular(devices) if sorted(left) == [1] else devices
    return (f"{why}: the {which}{'row' if one else 'rows'} on {count_list(sorted(left))} "
            f"{noun} {'is' if one else 'are'} left out; {runs}{instead}")


def _singular(devices: str) -> str:
    """The noun of one count for the plural ``devices``: 'device', 'process' (``device_nouns``)."""
    return next((n.device for n in (GPU_NOUNS, CPU_NOUNS) if n.devices == devices), devices)


def split_left_out(model: int, counts, devices: str = "devices", cp: bool = False,
                   degrees: tuple[int, int, int] | None = None) -> LeftOut:
    """The ``counts`` that ``model`` = tp x pp (x cp where ``cp``) devices of one replica do not
    divide: 'tp x pp = 16 does not divide the devices: the rows on 8 and 24 devices are left
    out; a tp x pp that divides 8 runs every count, or give counts that are multiples of 16'
    (8: the gcd of every count, offered where it is 2 or more); ``degrees`` (tp, pp, cp): the
    page names their controls ('Tensor parallel 8 x Pipeline stages 2 = 16 ...; a split whose
    product divides 8 runs ...', as ``layout_predict.split_devices``; None: the notation)."""
    left = tuple(sorted(p for p in counts if p % model))
    if not left:
        return LeftOut()
    what = "tp x pp x cp" if cp else "tp x pp"
    said = what if degrees is None else model_split_template(*degrees[:2],
                                                             degrees[2] if cp else None)
    common = math.gcd(*counts)
    instead = f"give counts that are multiples of {whole(model)}"

    def fix(split: str) -> str:
        return f"{split} {whole(common)}" if common >= 2 else ""

    return _left_out(left, devices, ("devices", "tp", "pp", *(("cp",) if cp else ())),
                     (f"{said} = {whole(model)} does not divide the {devices}",
                      f"{what} = {whole(model)} does not divide the {devices}"),
                     (fix("a split whose product divides"), fix(f"a {what} that divides")),
                     (instead, instead))


def _over(left, replicas: dict[int, int], devices: str, split: bool) -> tuple[str, str]:
    """The replicas of the counts ``left`` as the page says them, naming no control: 'the 12 or
    20 data-parallel ranks' where the model is ``split`` (``layout.dp_ranks``), else '24 or 40
    devices'; and the rule's units, 'data-parallel ranks' or ``devices``."""
    if split:
        return f"the {dp_ranks(either(replicas[p] for p in left))}", "data-parallel ranks"
    return f"{either(left)} {devices}", devices


def batch_left_out(global_batch: int, accumulation: int, replicas: dict[int, int],
                   devices: str = "devices", split: bool = False) -> LeftOut:
    """The counts (keys of ``replicas``: each count's model replicas, dp where ``split``, else
    the count) whose replicas x ``accumulation`` micro-steps do not divide ``global_batch``
    samples: 'global batch 64 does not split evenly over dp x accumulation 12 or 20: the rows
    on 24 and 40 devices are left out; --global-batch 60 or 120 runs every count, or give counts
    whose dp x accumulation divides it' (``predict.nearest_splitting_batches`` of every count);
    the page's: 'Global batch 64 does not split evenly over the 6 or 10 data-parallel ranks x
    Gradient accumulation 2: ...; Global batch 60 or 120 runs every count, or give counts whose
    data-parallel ranks x Gradient accumulation divides it'."""
    from scalesim.predict import nearest_splitting_batches

    share = {p: r * accumulation for p, r in replicas.items()}
    left = tuple(sorted(p for p, s in share.items() if global_batch % s))
    if not left:
        return LeftOut()
    rule = "dp x accumulation" if split else f"{devices} x accumulation"
    over, units = _over(left, replicas, devices, split)
    nearest = nearest_splitting_batches(global_batch, list(replicas.values()), accumulation)
    fix = f"{KNOB.global_batch} {' or '.join(str(b) for b in nearest)}" if nearest else ""
    return _left_out(left, devices, ("global_batch", "accumulation"),
                     (f"{KNOB.global_batch} {global_batch} does not split evenly over {over} x "
                      f"{KNOB.accumulation} {accumulation}",
                      f"global batch {global_batch} does not split evenly over {rule} "
                      f"{either(share[p] for p in left)}"), (fix, fix),
                     (f"give counts whose {units} x {KNOB.accumulation} divides it",
                      f"give counts whose {rule} divides it"))


def micro_batch_left_out(global_batch: int, accumulation: int, replicas: dict[int, int],
                         devices: str = "devices", split: bool = False) -> LeftOut:
    """The counts (keys of ``replicas``, as ``batch_left_out``'s) where ``global_batch`` samples
    over replicas x ``accumulation`` micro-steps is a micro-batch past the bounds table's
    largest (``predict.micro_batch_max``; strong scaling on few devices): 'global batch
    67,108,864 over devices x accumulation 1 or 2 is a micro-batch of 67,108,864 or 33,554,432
    samples, past the largest of the bounds table (16,777,216): the rows on 1 and 2 devices are
    left out; --accumulation 4 or --global-batch 16777216 runs every count, or give counts whose
    devices x accumulation is at least 4' (the fewest micro-steps that split the batch at every
    count into such micro-batches, at most ``predict.accumulation_max``; the largest global
    batch that does at this accumulation: a multiple of lcm(replicas) x accumulation up to the
    fewest replicas' largest; each where one exists); the page names its controls, as
    ``batch_left_out``'s."""
    from scalesim.predict import accumulation_max, micro_batch_max

    largest = micro_batch_max()
    share = {p: r * accumulation for p, r in replicas.items()}
    left = tuple(sorted(p for p, s in share.items() if global_batch // s > largest))
    if not left:
        return LeftOut()
    rule = "dp x accumulation" if split else f"{devices} x accumulation"
    over, units = _over(left, replicas, devices, split)
    ranks = list(replicas.values())
    steps = next((a for a in range(accumulation + 1, accumulation_max() + 1)
                  if all(global_batch % (r * a) == 0 and global_batch // (r * a) <= largest
                         for r in ranks)), None)
    step = math.lcm(*ranks) * accumulation
    batch = largest * min(ranks) * accumulation // step * step
    fix = " or ".join([f"{KNOB.accumulation} {steps}"] * (steps is not None)
                      + [f"{KNOB.global_batch} {batch}"] * (batch >= step))
    past = (f"is a micro-batch of {either(global_batch // share[p] for p in left)} samples, "
            f"past the largest of the bounds table ({largest:,})")
    least = f"at least {-(-global_batch // largest)}"
    return _left_out(left, devices, ("global_batch", "accumulation", "devices"),
                     (f"{KNOB.global_batch} {global_batch:,} over {over} x {KNOB.accumulation} "
                      f"{accumulation} {past}",
                      f"global batch {global_batch:,} over {rule} "
                      f"{either(share[p] for p in left)} {past}"), (fix, fix),
                     (f"give counts whose {units} x {KNOB.accumulation} is {least}",
                      f"give counts whose {rule} is {least}"))


def shard_group_left_out(shard_group: int, ranks: dict[int, tuple[int, int]],
                         devices: str = "devices", which: str = "") -> LeftOut:
    """The counts (keys of ``ranks``: each count's (dp, cp)) whose dp x cp ``shard_group`` is
    below and does not divide (``layout.shard_group_problem``): 'shard group 16 does not divide
    dp 24 or 40: the rows on 24 and 40 devices are left out; --shard-group 8 runs every count,
    or give counts whose dp it divides' (8: the gcd of the group and the groups left out, where
    it is 2 or more and runs every count; ``which``: 'ZeRO ' where a sweep's ddp rows run at
    those counts); the page's: 'Shard group (HSDP) 16 does not divide the 24 or 40
    data-parallel ranks: ...; Shard group (HSDP) 8 runs every count, or give counts whose
    data-parallel ranks it divides' (``layout.dp_ranks``)."""
    left = {p: r for p, r in ranks.items() if shard_group_problem(shard_group, *r)}
    if not left:
        return LeftOut()
    with_cp = any(cp > 1 for _, cp in left.values())
    group = "dp x cp" if with_cp else "dp"
    sizes = [dp * cp for dp, cp in left.values()]
    common = math.gcd(shard_group, *sizes)
    runs_all = common >= 2 and not any(shard_group_problem(common, *r) for r in ranks.values())
    fix = f"{KNOB.shard_group} {common}" if runs_all else ""
    units = dp_ranks("", with_cp).strip()  # 'data-parallel ranks', the group's without a size
    return _left_out(left, devices, ("shard_group",),
                     (f"{KNOB.shard_group} {shard_group} does not divide the "
                      f"{dp_ranks(either(sizes), with_cp)}",
                      f"shard group {shard_group} does not divide {group} {either(sizes)}"),
                     (fix, fix), (f"give counts whose {units} it divides",
                                  f"give counts whose {group} it divides"), which)
