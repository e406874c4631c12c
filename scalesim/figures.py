"""Numbers as a reader sees them, for the CLI's tables and the decision and goal sentences:
fixed decimals that never show a nonzero value as zero, and durations in the unit that suits
them. Pure text formatting, no model."""

from __future__ import annotations

import math


def fixed(value: float, width: int = 0, decimals: int = 2) -> str:
    """``value`` right-aligned in ``width`` characters with ``decimals`` places; a nonzero value
    those places would show as zero (0.00) gets two significant digits instead (3.2e-05)."""
    text = f"{value:>{width}.{decimals}f}"
    if value != 0 and float(text) == 0:
        text = f"{value:>{width}.2g}"
    return text


def exact(value: float) -> str:
    """The shortest text that reads back as exactly ``value``, written as a person writes a
    number: '100', '20000', '0.25', '2000000000'; an exponent only far from one, where Python's
    ``repr`` uses it ('1.5e-06' below 1e-4, '1e+16' from 1e16). For text a reader types back (a
    share link), where ``:g`` would round and the shortest ``.Ng`` form reads '1e+02'."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def number(value: float) -> str:
    """A number in a sentence, exactly and thousands-separated: '100,000', '16,777,216',
    '100,000.5', '0.001' (the digits of the shortest text that reads back, ``exact``), an exponent
    only far from one and as a person types it ('1e20', '1e-9', not '1e+20', '1e-09'). A bound
    and the value it refuses are both written so (``bounds.Bound.text``, the refusals of JSON
    fields and of the app's controls)."""
    if isinstance(value, int) or (math.isfinite(value) and value == int(value)
                                  and abs(value) < 1e16):
        return f"{int(value):,}"
    text = exact(value)
    if "e" in text:
        mantissa, _, power = text.partition("e")
        return f"{mantissa}e{int(power)}"
    if "." in text:
        sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
        units, _, decimals = digits.partition(".")
        return f"{sign}{int(units):,}.{decimals}"
    return text  # nan, inf


MULTIPLE_DIGITS = 4  # significant digits a multiple is written with exactly ('1.125x')


def multiple(value: float) -> str:
    """A ratio as 'Nx', exactly where up to ``MULTIPLE_DIGITS`` significant digits say it
    ('2x', '1.125x', '0.5x'; a whole one whole, '16,384x'), else about ('~1.67x'): never a
    rounded '1.12x' for 1.125."""
    if math.isfinite(value) and value == int(value):
        return f"{number(value)}x"
    for digits in range(1, MULTIPLE_DIGITS + 1):
        text = f"{value:.{digits}g}"
        if float(text) == value:
            return f"{number(float(text))}x"
    return f"~{value:.3g}x"


def whole(n: int) -> str:
    """A whole count in prose, thousands separated: '16', '1,024' (not in a list a user types
    back, where the commas separate values: ``bounds.list_text``)."""
    return f"{int(n):,}"


def count_list(counts, shown: int | None = 6, last: str = "and") -> str:
    """Counts in prose, each as ``whole`` writes it, the last after ``last``: '16, 32 and 64'
    ('16, 32 or 64' for the values a rule fails at);
    where one has a thousands comma, '; ' between them, so that a comma is a number's and never
    the list's ('1,024; 2,048 and 4,096', not '1,024, 2,048 and 4,096'); past ``shown`` counts
    (None: all), the first ones and the last: '1; 2; 4; 8; 16; ... and 4,096 (13 in all)'. Not
    for a list a user types back (``bounds.list_text``: '1,2,4')."""
    words = [whole(n) for n in counts]
    sep = "; " if any("," in w for w in words) else ", "
    if shown is not None and len(words) > shown:
        return f"{sep.join(words[:shown - 1])}{sep}... {last} {words[-1]} ({len(words)} in all)"
    return words[0] if len(words) == 1 else f"{sep.join(words[:-1])} {last} {words[-1]}"


def either(values) -> str:
    """Numbers a rule fails at, once each, in order, the last after 'or', as ``count_list``
    writes counts: '8', '8 or 16', '1, 2 or 4', '67,108,864; 33,554,432 or 512' (past six, the
    first ones and the last)."""
    return count_list(list(dict.fromkeys(values)), last="or")


def count(n: int, noun: str) -> str:
    """A count with its noun, singular for one: '1 device', '16 devices', '1,024 devices'."""
    return f"{whole(n)} {noun}{'' if n == 1 else 's'}"


def count_change(before: int, after: int, noun: str) -> str:
    """A count going from one value to another, with the noun of the second: '8 -> 16 devices',
    '1,024 -> 2,048 devices'."""
    return f"{whole(before)} -> {count(after, noun)}"


def count_columns(words) -> tuple[tuple[str, int], tuple[str, int]]:
    """The count columns of the CLI's tables (predict's rows, diagnose's runs) as (header,
    width) pairs: devices at least 7 wide and nodes 5, wider where ``words`` (the devices'
    ``Nouns``) head them longer: (('devices', 7), ('nodes', 5)) on GPUs, (('processes', 9),
    ('hosts', 5)) on a CPU calibration."""
    devices, nodes = words.header("devices"), words.header("nodes")
    return (devices, max(7, len(devices))), (nodes, max(5, len(nodes)))


AMOUNT_EXPONENT_FROM = 1e15  # amount writes 3 significant digits and an exponent from here


def amount(value: float) -> str:
    """Money or a count without its unit: '1,234' from 100 up, '12.34' below, two significant
    digits below a cent ('0.0031'), '0' for zero; from ``AMOUNT_EXPONENT_FROM`` (a quadrillion:
    ten times the world's yearly output in dollars) three significant digits and an exponent
    ('5.53e17', not the 23 characters of '553,314,154,250,940,160', digits a model's estimate
    does not have); an exponent as a person types it ('2e-6', not '2e-06': ``typed_exponent``)."""
    if math.isfinite(value) and abs(value) >= AMOUNT_EXPONENT_FROM:
        return typed_exponent(f"{value:.3g}")
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    return typed_exponent(fixed(value, 0, 2))


def typed_exponent(text: str) -> str:
    """A formatted number's exponent as a person types it: '2e-06' -> '2e-6', '1e+15' ->
    '1e15' (as ``number`` writes one); text without an exponent unchanged."""
    mantissa, e, power = text.partition("e")
    return f"{mantissa}e{int(power)}" if e else text


SPEEDUP_WHOLE_FROM = 1000.0  # speedup writes a whole, thousands-separated number from here


def speedup(ratio: float) -> str:
    """A speed-up against one device, the predict and diagnose tables' column: two decimals
    ('1.00', '7.74', '901.36'; ``fixed``: never a nonzero one as zero), from
    ``SPEEDUP_WHOLE_FROM`` whole and thousands separated ('90,136' at 100,000 devices, not
    '90136.03', whose decimals a model's ratio does not have); 'n/a' for no number."""
    if not math.isfinite(ratio):
        return "n/a"
    # 999.996 reads '1,000', not the '1000.00' its two decimals round to
    return f"{ratio:,.0f}" if abs(round(ratio, 2)) >= SPEEDUP_WHOLE_FROM else fixed(ratio, 0, 2)


THROUGHPUT_DIGITS = 4  # significant digits a throughput is written with (``throughput``)


def throughput(per_s: float) -> str:
    """A throughput without its unit, the house style of every command's table (the unit in
    the column's header): ``THROUGHPUT_DIGITS`` significant digits,
    thousands separated, never an exponent: '519.1', '17.11', '4,016', '140,900',
    '12,610,000' (not '1.409e+05', nor the 8 digits of '12613874.2' a model's estimate does
    not have); an exponent only below 1e-4, as a person types it ('3.2e-5'); 'n/a' for no
    number."""
    if not math.isfinite(per_s):
        return "n/a"
    rounded = float(f"{per_s:.{THROUGHPUT_DIGITS}g}")
    if abs(rounded) >= 10 ** (THROUGHPUT_DIGITS - 1):
        return f"{rounded:,.0f}"
    return typed_exponent(f"{rounded:.{THROUGHPUT_DIGITS}g}") if rounded else "0"


def rate(samples_per_s: float, unit: str) -> str:
    """A throughput with the workload's unit (``Workload.sample_unit``, the one word every
    command and the app use for it), in a sentence or a cell: '5.591 sequences of 8192
    tokens/s', '1,234 images/s', '140,900 tokens/s'. Written as ``throughput`` writes it (4
    significant digits), so a number reads the same in a table and in the sentence beside it:
    decide's '8.177' in its row and its recommendation, predict's and plan's columns alike.
    Two close figures a sentence compares (an option against today's) are told apart by their
    signed percentage (``signed_percent``), not by more digits."""
    return f"{throughput(samples_per_s)} {unit}/s"


GIB_BYTES = 2**30  # bytes in one GiB: the one definition (memory in prose, tables, presets)
MIB_BYTES = 2**20  # bytes in one MiB: the one definition (DDP buckets, message sizes, uploads)


def gib(n_bytes: float) -> str:
    """A run's memory need in prose, one decimal and thousands separated, as every command and
    the app write it: '101.2 GiB', '1,398.9 GiB' (bytes in, GiB of 2**30 bytes out)."""
    return f"{n_bytes / GIB_BYTES:,.1f} GiB"


def bytes_text(size_bytes: float) -> str:
    """A message or buffer size in the largest binary unit it reaches: 8 -> '8 B', 1536 ->
    '1.5 KiB', 1048576 -> '1 MiB', 2**30 -> '1 GiB' (nccl-tests' sizes, calibration's sweeps)."""
    for unit, scale in (("GiB", GIB_BYTES), ("MiB", MIB_BYTES), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:g} {unit}"
    return f"{size_bytes:g} B"


DAYS_PER_YEAR = 365.25  # a Julian year: duration_text's years


YEARS_IN_DIGITS = 1e9  # duration_text writes fewer years whole ('7,890,091 years'), more as 3.2e12


def duration_text(seconds: float) -> str:
    """'0.42 s', '42 s', '12 min', '3.5 h', '4.2 days', '3.1 years', '7,890,091 years' (the unit
    that keeps two digits; years of 365.25 days from two years on, never '2881844553.4 days'),
    '3.2e12 years' from a billion years on (never a count of hundreds of digits)."""
    if seconds < 60:  # '2.5e-5 s', not '2.5e-05 s'
        return f"{typed_exponent(f'{seconds:.2g}')} s" if seconds < 10 else f"{seconds:.0f} s"
    hours = seconds / 3600.0
    if hours < 1:
        return f"{seconds / 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    days = hours / 24.0
    if days < 2 * DAYS_PER_YEAR or not math.isfinite(days):
        return f"{days:.1f} days"
    years = days / DAYS_PER_YEAR
    if years >= YEARS_IN_DIGITS:
        return f"{typed_exponent(f'{years:.2g}')} years"
    return f"{years:.1f} years" if years < 100 else f"{years:,.0f} years"


def durations_apart(value_s: float, bound_s: float) -> tuple[str, str]:
    """``value_s`` and ``bound_s`` as ``duration_text`` writes them, or where the two read alike
    in the same unit, at as many more decimals of it (up to four more) as tell them apart: a
    plan of 14.41 h past a deadline of 0.6 days (14.4 h) reads '14.41 h' and '14.40 h', never
    '14.4 h (misses the deadline of 14.4 h)' (``percents_apart``'s rule for two durations)."""
    shown = duration_text(value_s), duration_text(bound_s)
    if shown[0] != shown[1] or value_s == bound_s:
        return shown
    unit = shown[1].split(" ", 1)[1]  # the unit duration_text chose for both: s, min, h...
    seconds = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0,
               "years": DAYS_PER_YEAR * 86400.0}[unit]
    for decimals in range(2, 6):
        shown = (f"{value_s / seconds:,.{decimals}f} {unit}",
                 f"{bound_s / seconds:,.{decimals}f} {unit}")
        if shown[0] != shown[1]:
            break
    return shown


SIG3_WHOLE_BELOW = 1e6  # sig3 writes whole numbers from 100 up to this, then an exponent


def sig3(value: float) -> str:
    """A measured or fitted figure without its unit: three significant digits ('12', '6.8',
    '0.652'), whole numbers from 100 ('197', '1536'); never the six digits of a fit ('197.154'),
    nor the 300 digits of a huge one: an exponent from ``SIG3_WHOLE_BELOW`` ('1.4e+07'); 'n/a'
    for a value that is no number (NaN, infinite: a fit at its bound), never 'nan'."""
    if not math.isfinite(value):
        return "n/a"
    return (f"{value:.3g}" if abs(value) < 100 or abs(value) >= SIG3_WHOLE_BELOW
            else f"{value:.0f}")


def link_GBps(busbw_GBps: float) -> str:
    """A link's bandwidth with its unit, as every command prints one: '197 GB/s', '0.652 GB/s'
    (``sig3``)."""
    return f"{sig3(busbw_GBps)} GB/s"


CHANGE_ARROW = " -> "  # between a figure before and after a change, as the CLI writes it


def busbw_words(whole_GBps, reached_GBps=None, part: str = "", was: str = "",
                arrow: str = CHANGE_ARROW, server: str = "server") -> str:
    """A link's bus bandwidth as a manager reads it, GB/s: the figure the job's devices reach
    first (fewer GPUs of a server reach fewer of its NICs, docs/model.md §2), the whole server's
    in parentheses: '24 GB/s busbw for the job's 1 of 8 GPUs per server (whole server 192)';
    a change as (before, after) pairs: '12 -> 24 GB/s busbw for the job's 1 of 8 GPUs per server
    (whole server 48 -> 192)'. The whole figure alone ('6.8 -> 48 GB/s busbw') where the job
    reaches it all: ``reached_GBps`` None, no ``part`` (whole servers), or the same printed
    figures. ``part``: '1 of 8 GPUs per server' (``predict.server_part_words``); ``was`` follows
    the first figure ('(a preset, not measured)'). ``whole_GBps`` None: no whole server's figure
    is known (a link fitted to what the job's devices reached, no NIC count), so the job's alone:
    '12.4 -> 24.8 GB/s busbw for the job's 1 of 8 GPUs per server'. The one wording of decide's
    network option, goal's networks and least network, the remedies' titles and the app's
    cards. ``arrow``: what goes between a change's figures (a template's '{arrow}',
    ``layout_change.arrowed_said``); ``server``: the noun of the whole ('rack' on a GB200 NVL72,
    'host' on a CPU calibration: ``device_nouns.hardware_nouns``), as ``part`` says it."""
    def chain(values, tag: str) -> str:
        values = values if isinstance(values, tuple) else (values,)
        return arrow.join(sig3(v) + (f" {tag}" if tag and i == 0 else "")
                           for i, v in enumerate(values))

    if whole_GBps is None:
        return f"{chain(reached_GBps, was)} GB/s busbw" + (f" for the job's {part}" if part
                                                           else "")
    whole = chain(whole_GBps, "")
    if reached_GBps is None or not part or chain(reached_GBps, "") == whole:
        return f"{chain(whole_GBps, was)} GB/s busbw"
    return f"{chain(reached_GBps, was)} GB/s busbw for the job's {part} (whole {server} {whole})"


def latency_us(latency_s: float) -> str:
    """A link's latency (s) in microseconds with its unit: '12.3 us', '150 us' (``sig3``)."""
    return f"{sig3(latency_s * 1e6)} us"


def signed_percent(change: float) -> str:
    """A change as a signed percentage at one decimal, '+104.5%', '-51.2%' (never '-0.0%'):
    every gain and change the decision card, its recommendation, the planner's headline and
    its Remedies tab write, so one option's gain reads the same wherever it is written."""
    text = f"{change:+.1%}"
    return "+0.0%" if text == "-0.0%" else text


def percents_apart(value: float, bound: float) -> tuple[str, str]:
    """``value`` and ``bound`` (fractions) as percentages at one decimal, or at as many more (up
    to four) as tell them apart: a share of 2.76 % under a threshold of 2.82 % reads '2.76%'
    and '2.82%', never '2.8% of the step (below 2.8%)'."""
    for decimals in range(1, 5):
        shown = f"{value:.{decimals}%}", f"{bound:.{decimals}%}"
        if shown[0] != shown[1]:
            break
    return shown


def whole_percent(fraction: float) -> str:
    """A fraction as a whole percentage: 0.354 -> '35%'."""
    return f"{100.0 * fraction:.0f}%"


def series(items: list[str], most: int = 12) -> str:
    """'a, b, c', or the first and last few with '...' between when there are over ``most``."""
    if len(items) <= most:
        return ", ".join(items)
    half = most // 2
    return ", ".join(items[:half]) + f", ... ({len(items) - most} more), " + ", ".join(
        items[-half:])


def milliseconds(seconds: float) -> str:
    """Seconds as milliseconds to three significant digits, as every fitted figure ('104 ms',
    '5.3 ms', '0.0937 ms': not '0.1 ms' for 94 us), ``sig3``."""
    return f"{sig3(1e3 * seconds)} ms"
