"""The note for a layout that nearly fills its devices (docs/model.md §16, "Memory margin").

The memory model counts weights, gradients, optimizer state, activations and a framework buffer;
the caching allocator's fragmentation comes on top and is not modelled. A layout that fits
with less than ``TIGHT_MEMORY_SHARE`` of a device free is ranked as fitting (``fits`` is
memory <= (1 - margin) x device memory, the margin 0 unless asked), and one note says so with
what ``--memory-margin`` of that share ranks instead (``plan_note``) or refuses (``rows_note``).
"""

from __future__ import annotations

from scalesim.device_nouns import GPU_NOUNS, Nouns
from scalesim.figures import count_list, gib, rate, signed_percent

# Less than this share of a device's memory free: a layout the allocator's fragmentation may not
# fit. PyTorch's caching allocator rounds and splits blocks so that free memory in pieces can
# fail a large request (docs.pytorch.org/docs/stable/notes/cuda.html, "Memory management":
# max_split_size_mb, expandable_segments, off by default); how much it loses depends on the run,
# so this is a rule of thumb, not a measured fragmentation: 4 GiB of an 80 GiB device, twice the
# 2 GiB framework buffer the model already counts (``layout_step.FRAMEWORK_BYTES``). Also the
# margin the note suggests (--memory-margin 0.05).
TIGHT_MEMORY_SHARE = 0.05


def free_words(memory_bytes: float, device_memory_bytes: float) -> str:
    """'0.2 GiB (0.3%) of 80.0 GiB free': what a layout needing ``memory_bytes`` leaves of a
    device of ``device_memory_bytes`` (bytes both)."""
    free = device_memory_bytes - memory_bytes
    return (f"{gib(free)} ({100 * free / device_memory_bytes:.1f}%) of "
            f"{gib(device_memory_bytes)} free")


def is_tight(memory_bytes: float, device_memory_bytes: float, memory_margin: float,
             fits: bool = True) -> bool:
    """Whether a layout that fits leaves less than ``TIGHT_MEMORY_SHARE`` of the device free
    where no margin was asked (``memory_margin`` 0): the case the note is for."""
    free = device_memory_bytes - memory_bytes
    return bool(fits) and not memory_margin and free < TIGHT_MEMORY_SHARE * device_memory_bytes


def plan_note(best, alternative, nouns: Nouns = GPU_NOUNS,
              control: str = "--memory-margin", at_count: bool = False) -> str:
    """The plan's note where its ``best`` row (a ``plan.PlanRow``) is tight (``is_tight``):
    what it leaves free and ``alternative``, the best row the same ranking gives with
    ``TIGHT_MEMORY_SHARE`` kept free (a ``PlanRow``, its tokens/s as ``figures.rate`` writes
    every throughput: '283,300 tokens/s (-0.9%)'), or, a string, why none fits then;
    ``nouns`` the devices' ('process' on CPU); ``control`` the margin's name before its value
    (the CLI's flag; the app's sidebar label); ``at_count``: the best of its device count
    alone ('the best layout on 16 devices'), ``alternative`` ranked at that count."""
    device_memory_bytes = best.memory_bytes + best.headroom_bytes
    from scalesim.layout_predict import row_title

    on = f" on {best.devices} {nouns.devices}" if at_count else ""
    head = (f"the best layout{on} leaves {free_words(best.memory_bytes, device_memory_bytes)}: "
            f"the allocator's fragmentation may not fit; {control} "
            f"{TIGHT_MEMORY_SHARE:g} ranks with {100 * TIGHT_MEMORY_SHARE:g}% kept free: then ")
    if isinstance(alternative, str):
        return head + alternative
    change = signed_percent(alternative.samples_per_s / best.samples_per_s - 1.0)
    where = "" if alternative.devices == best.devices else f" on {alternative.devices}"
    return (head + f"{row_title(alternative)}{where} at {rate(alternative.tokens_per_s, 'tokens')} "
            f"({change}), {gib(alternative.memory_bytes)} per {nouns.device}")


def rows_note(rows, device_memory_bytes: float, memory_margin: float,
              nouns: Nouns = GPU_NOUNS) -> str | None:
    """Predict's note where rows that fit leave less than ``TIGHT_MEMORY_SHARE`` of a device
    free and no margin was asked (``rows``: predictions, each with ``devices``,
    ``memory_bytes``, ``fits``): the tightest one's free memory and the counts that
    ``--memory-margin`` of that share would mark as not fitting; None where none is tight."""
    tight = [r for r in rows if is_tight(r.memory_bytes, device_memory_bytes, memory_margin,
                                         r.fits)]
    if not tight:
        return None
    worst = max(tight, key=lambda r: r.memory_bytes)
    counts = count_list([r.devices for r in tight])
    one = len(tight) == 1
    return (f"the {'row' if one else 'rows'} on {counts} {nouns.devices} "
            f"{'leaves' if one else 'leave as little as'} "
            f"{free_words(worst.memory_bytes, device_memory_bytes)}: the allocator's "
            f"fragmentation may not fit; --memory-margin {TIGHT_MEMORY_SHARE:g} keeps "
            f"{100 * TIGHT_MEMORY_SHARE:g}% free and marks {'it' if one else 'them'} as not "
            "fitting")


def margin_note(best, memory_margin: float, rerank, nouns: Nouns = GPU_NOUNS,
                control: str = "--memory-margin", at_count: bool = False) -> str | None:
    """``plan_note`` where the ranking's ``best`` row (a ``plan.PlanRow``) is tight
    (``is_tight`` at ``memory_margin``, the share asked); ``rerank(share)`` gives the best row
    of the same ranking with ``share`` of each device kept free, or raises ScalesimError where
    none fits (its words up to the first ';' are said). None where ``best`` is not tight. One
    note for plan's text and JSON and the app's Layouts tab (``control``, ``at_count``: as
    ``plan_note``; plan's best on each count asked: ``at_count``)."""
    from scalesim.errors import ScalesimError

    if not is_tight(best.memory_bytes, best.memory_bytes + best.headroom_bytes, memory_margin,
                    best.fits):
        return None
    try:
        alternative = rerank(TIGHT_MEMORY_SHARE)
    except ScalesimError as exc:  # nothing fits with the margin: the plan's own words
        alternative = str(exc).split(";")[0]
    return plan_note(best, alternative, nouns, control, at_count)
