"""When a link level's times do not grow with message size, time larger messages (no torch).

On a busy host the small messages of a sweep over loopback can take as long as the largest
(a 2 MiB gloo all-reduce takes 1-2 ms, about what the host's noise adds to any call), and
``fit_alpha_beta`` then finds no positive bandwidth. ``decide`` reads the level's timings so
far and says what to do next: fit them, time the ops whose size term does not show yet at
twice the largest size, or refuse in one line naming the level, the sizes tried and the fix.
The collectives phase (``collective_phase.measure_level``) asks it again after each new size.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim.figures import GIB_BYTES, MIB_BYTES, bytes_text, duration_text
from scalesim.model import collectives as coll
from scalesim.schemas import CollectivePoint

# An op's sweep has grown enough once the fitted size term is at least this share of the
# largest message's fitted time (below it the bandwidth rests on a few noisy microseconds).
MIN_SIZE_SHARE = 0.3
# No message larger than this is timed to find the size term (1 GiB: memory for a few buffers).
EXTEND_CAP_BYTES = GIB_BYTES
# The extension budget of a level is at least this many sizes' --coll-time-s per op.
MIN_BUDGET_SIZES = 8


@dataclass(frozen=True)
class SizeDecision:
    """What to do with a level's timings: fit them (``extend_to`` and ``refusal`` None), time
    ``ops`` at ``extend_to`` bytes (about ``cost_s`` seconds), or refuse with the one-line
    ``refusal``."""

    extend_to: int | None = None
    ops: tuple[str, ...] = ()
    cost_s: float = 0.0
    refusal: str | None = None


def extension_budget_s(points: int, ops: int, coll_time_s: float) -> float:
    """Seconds a level may spend on larger sizes: as much again as its sweep's ``points`` timed
    loops of ``coll_time_s``, and at least ``MIN_BUDGET_SIZES`` sizes' worth per op (a sweep of
    one or two sizes still gets a few doublings)."""
    return max(points, MIN_BUDGET_SIZES * ops) * coll_time_s


def timing_cost_s(call_s: float, coll_time_s: float, rounds: int) -> float:
    """Seconds ``collective_phase.time_call`` spends on a call of ``call_s``: a warm-up and a
    sizing call, then ``rounds`` loops sharing ``coll_time_s``, each of at least two calls."""
    return 2 * call_s + max(coll_time_s, rounds * 2 * call_s)


def size_term_share(op: str, rows: list[CollectivePoint]) -> float | None:
    """The fitted size term's share of the fitted time of the largest message in ``rows``
    (``fit_alpha_beta``: ``v*S/busbw / (s*alpha + v*S/busbw)``), None when no positive
    bandwidth fits (the times do not grow with size)."""
    rows = sorted(rows, key=lambda p: p.size_bytes)
    try:
        alpha, busbw, _ = coll.fit_alpha_beta(op, [p.size_bytes for p in rows],
                                              [p.ranks for p in rows], [p.time_s for p in rows])
    except ValueError:
        return None
    steps, vol = coll.step_and_volume(op, [rows[-1].ranks])
    size_term = float(vol[0]) * rows[-1].size_bytes / coll.GB / busbw
    return size_term / (float(steps[0]) * alpha + size_term)


def decide(level: str, points: list[CollectivePoint], coll_time_s: float, rounds: int,
           budget_s: float, cap_bytes: int = EXTEND_CAP_BYTES) -> SizeDecision:
    """The next step for one level's ``points`` (the slowest group's, every op so far).

    An op has grown when a positive bandwidth fits and its size term is at least
    ``MIN_SIZE_SHARE`` of the largest message's time. Ops that have not are timed at twice
    the largest size while that size is at most ``cap_bytes`` and timing them there
    (``timing_cost_s``, each call predicted at twice the largest one's) fits in ``budget_s``,
    the seconds left of the level's budget (the caller's: its sweep's ``coll_time_s`` per op
    and size). Past that, an op with no positive bandwidth is a refusal; one whose size term
    is small but positive is fitted as it is.
    """
    by_op: dict[str, list[CollectivePoint]] = {}
    for p in points:
        by_op.setdefault(p.op, []).append(p)
    shares = {op: size_term_share(op, rows) for op, rows in sorted(by_op.items())}
    short = [op for op, share in shares.items() if share is None or share < MIN_SIZE_SHARE]
    if not short:
        return SizeDecision()
    largest = max(p.size_bytes for p in points)
    call_s = {op: max(p.time_s for p in by_op[op] if p.size_bytes == largest) for op in short}
    cost_s = sum(timing_cost_s(2 * t, coll_time_s, rounds) for t in call_s.values())
    next_bytes = int(2 * largest)
    if next_bytes <= cap_bytes and cost_s <= budget_s:
        return SizeDecision(extend_to=next_bytes, ops=tuple(short), cost_s=cost_s)
    failed = [op for op in short if shares[op] is None]
    if not failed:
        return SizeDecision()
    sizes = sorted({p.size_bytes for p in points if p.op == failed[0]})
    why = (f"{bytes_text(next_bytes)} is above the {bytes_text(cap_bytes)} cap" if next_bytes > cap_bytes
           else f"timing {', '.join(short)} at {bytes_text(next_bytes)} would take about "
                f"{duration_text(cost_s)}, more than the {duration_text(max(budget_s, 0))} left "
                "of the level's "
                f"--coll-time-s {coll_time_s:g} per size")
    return SizeDecision(refusal=(
        f"{level}: {', '.join(failed)} times do not grow with message size over "
        f"{bytes_text(sizes[0])}-{bytes_text(sizes[-1])} ({len(sizes)} sizes; larger ones not "
        f"tried: {why}), so no bandwidth fits: noise on a busy machine hides the size term; "
        f"give --max-size-mib {2 * sizes[-1] / MIB_BYTES:g} or more (or a larger --coll-time-s), "
        "or calibrate on a quieter machine"))
