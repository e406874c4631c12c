"""What a runs diagnosis without --params owes to the gradient size it assumes.

Without the model's parameter count the fit lays the gradient exchange's buckets out for a
nominal gradient (``fit_runs.NOMINAL_GRADIENT_BYTES``, 1 GB): how much of the exchange overlaps
backward, and so every remedy's gain, rests on it (a first-day user's 1.6 M-parameter job read
"Shard optimizer state" +14.4 % at 1 GB, -10.5 % at its own 6.3 MB). The runs are fitted again
at each size of ``GRADIENT_BYTES_TRIED`` and a size is kept where the runs cannot rule it out
(its misfit within chi2_0.95(1) of the least of them, at the nominal fit's noise: one more
parameter, the size, as ``fit_runs.held_ranges``). Over the kept sizes (``judge_by_size``):

- a change that helps by the model's median error or more at some kept size and not at another
  takes the verdict ``remedies.SIZE_DEPENDENT``: no gain is shown and it ranks after the
  remedies (one whose gains are all under that error, +1.8 % or +0.01 %, keeps its verdict);
- any other keeps its verdict, and its band (``Remedy.gain_low`` / ``gain_high``) widens to hold
  its gain at every kept size (``Remedy.gain_by_gradient_bytes`` lists them), its caution giving
  the least and the most where they differ by the model's median error or more;
- the first remedy is cautioned where another would be first at a kept size (``rank_words``).

docs/diagnose.md, "Without --params".
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim.diagnosis import Remedy, first_remedy, shown_gain
from scalesim.errors import KNOB, as_literal
from scalesim.fit_runs import NOMINAL_GRADIENT_BYTES, FitResult, fit_runs, misfit_at_noise
from scalesim.layout import knob_refusal
from scalesim.quantiles import CHI2_95_ONE_DOF
from scalesim.remedies import SIZE_DEPENDENT

# Gradient sizes tried, bytes: 1 MB (250 k fp32 gradients) to 100 GB (25 G), a decade apart,
# the nominal among them: the data-parallel jobs a runs file describes, an MLP to a 20 B model.
GRADIENT_BYTES_TRIED = (1e6, 1e7, 1e8, NOMINAL_GRADIENT_BYTES, 1e10, 1e11)


def size_words(gradient_bytes: float) -> str:
    """A gradient size in words: '1 MB', '10 GB' (decimal units, as the note's '1 GB')."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if gradient_bytes >= scale:
            return f"{gradient_bytes / scale:g} {unit}"
    return f"{gradient_bytes:g} bytes"


@dataclass(frozen=True)
class SizeFits:
    """The runs fitted at each gradient size tried: ``kept`` (size, fit) the runs cannot rule
    out, the nominal's first; ``ruled_out`` the sizes whose misfit they can."""

    kept: list[tuple[float, FitResult]]
    ruled_out: list[float]


def fits_by_size(fit: FitResult, runs, exchange, wire_bytes_per_param: float = 4.0,
                 sizes: tuple[float, ...] = GRADIENT_BYTES_TRIED) -> SizeFits:
    """``runs`` fitted again at each of ``sizes`` (bytes; ``fit`` is the nominal one), kept
    where their misfit is within chi2_0.95(1) of the least of them at ``fit``'s noise."""
    fits = {NOMINAL_GRADIENT_BYTES: fit}
    for size in sizes:
        if size != NOMINAL_GRADIENT_BYTES:
            fits[size] = fit_runs(runs, None, wire_bytes_per_param, exchange,
                                  nominal_gradient_bytes=size, layout=fit.layout)
    misfit = {s: misfit_at_noise(f, runs, fit.noise_rel) for s, f in fits.items()}
    limit = min(misfit.values()) + CHI2_95_ONE_DOF
    kept = [(s, fits[s]) for s in fits if misfit[s] <= limit]
    return SizeFits(kept, sorted(s for s in fits if misfit[s] > limit))


def judge_by_size(remedies: list[Remedy], by_size: dict[float, list[Remedy]],
                  decisive: float) -> dict[str, str]:
    """Judge ``remedies`` (predicted at the nominal size) over ``by_size`` (the same remedies
    predicted at each kept size, bytes -> list; the nominal's among them), in place: each
    applicable one gets its gain at every size (``gain_by_gradient_bytes``); a change that helps
    by ``decisive`` or more (the model's median error: a gain it can tell from none) at one size
    and does not help at another (no change, a loss, not applicable or not runnable there)
    becomes ``SIZE_DEPENDENT``, its band the least and the most of those gains; the others keep
    their verdict, their bands widened to hold them. Returns, by key, the caveat of each
    size-dependent remedy (every size's gain) and of each other whose gains over the sizes
    differ by ``decisive`` or more (their least and most)."""
    sizes = sorted(by_size)
    span = f"the gradient sizes these runs allow ({size_words(sizes[0])} to {size_words(sizes[-1])})"
    caveats = {}
    for r in remedies:
        if not r.applicable:
            continue
        same = [next((d for d in by_size[s] if d.key == r.key), None) for s in sizes]
        gains = [shown_gain(d) if d is not None and d.applicable else 0.0 for d in same]
        r.gain_by_gradient_bytes = [[s, g] for s, g in zip(sizes, gains, strict=True)]
        helps = [d is not None and d.helps for d in same]
        decides = any(h and g >= decisive for h, g in zip(helps, gains, strict=True))
        if decides and not all(helps):
            r.verdict, r.helps = SIZE_DEPENDENT, False
            r.gain_low, r.gain_high = min(gains), max(gains)
            caveats[r.key] = knob_refusal(
                f"over {span} it reads "
                + ", ".join(f"{g:+.1%} at {size_words(s)}" for s, g in
                            zip(sizes, gains, strict=True))
                + f": give {KNOB.params} (the model's parameter count) to judge it")
            continue
        if r.gain_low is not None and r.verdict != "not runnable":
            r.gain_low, r.gain_high = min(r.gain_low, *gains), max(r.gain_high, *gains)
        if r.verdict != "not runnable" and max(gains) - min(gains) >= decisive:
            low, high = gains.index(min(gains)), gains.index(max(gains))
            caveats[r.key] = knob_refusal(
                f"over {span} it reads {gains[low]:+.1%} at {size_words(sizes[low])} to "
                f"{gains[high]:+.1%} at {size_words(sizes[high])}: {KNOB.params} (the "
                "model's parameter count) pins it")
    return caveats


def rank_words(first: Remedy | None, by_size: dict[float, list[Remedy]],
               causes: tuple[str, ...], decisive: float) -> str:
    """'' unless the first remedy to try (``diagnosis.first_remedy`` for ``causes`` and the least
    decisive gain ``decisive``) is another than ``first`` at one of the kept sizes of
    ``by_size`` (bytes -> the remedies predicted there): then which, where, and what to give."""
    if first is None:
        return ""
    for s in sorted(by_size):
        other = first_remedy(by_size[s], causes, decisive)
        if other is not None and other.key == first.key:
            continue
        own = next((d for d in by_size[s] if d.key == first.key), None)
        mine = shown_gain(own) if own is not None and own.applicable else 0.0
        where = f"at a gradient of {size_words(s)}, which these runs allow too,"
        if other is None:
            return knob_refusal(
                f"{where} it gains {mine:+.1%}, under the model's median error "
                f"({decisive:.1%}): give {KNOB.params} (the model's parameter count) to judge it")
        return knob_refusal(
            f"{where} the first remedy would be {as_literal(other.title)} "
            f"({shown_gain(other):+.0%}, this one {mine:+.0%}): give {KNOB.params} (the model's "
            "parameter count) to rank them")
    return ""
