"""Text that fits a terminal: lines wrapped at ``COLUMNS`` characters, a table whose long
first cells are cut to a short title keyed to a note with the whole text (``fit_table``), and
a table whose long last cells wrap inside their column (``hanging_table``)."""

from __future__ import annotations

import textwrap

COLUMNS = 110  # characters a line of text output may take (an 80-120 column terminal's)
GAP = "  "  # between a table's columns
MIN_TITLE = 20  # characters the first column keeps however wide the others are


def wrap(line: str, indent: str = "  ") -> list[str]:
    """``line`` as lines of at most ``COLUMNS`` characters, the later ones after ``indent``;
    words (a URL, 'a2-highgpu-8g', '->') never broken, so one longer than a line stays whole."""
    if len(line) <= COLUMNS:
        return [line]
    return textwrap.wrap(line, COLUMNS, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def _cuts(title: str) -> list[str]:
    """The title's heads that end where a clause or a parenthesis starts outside parentheses
    (before ': ', ', ' or ' ('), longest first: "Add 2 servers (64 -> 80 devices), the planner's
    layout: ddp -> zero1" -> ["Add 2 servers (64 -> 80 devices), the planner's layout",
    'Add 2 servers (64 -> 80 devices)', 'Add 2 servers']."""
    heads, depth = [], 0
    for i, char in enumerate(title):
        if depth == 0 and title[i:i + 2] in (": ", ", ", " ("):
            heads.append(title[:i])
        depth += {"(": 1, ")": -1}.get(char, 0)
    return heads[::-1]


def short_title(title: str, width: int, key: str) -> str:
    """``title`` itself where it fits ``width``, else its longest clause head (``_cuts``) that
    fits with ' ``key``' after it, else its first clause with the key (wider than ``width``:
    ``fit_table`` wraps it)."""
    if len(title) <= width:
        return title
    heads = _cuts(title) or [title]
    return next((f"{h} {key}" for h in heads if len(h) + len(key) + 1 <= width),
                f"{heads[-1]} {key}")


def fit_table(rows: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """``rows`` (the same keys, the first column's left-aligned, the others right-aligned) as
    lines of at most ``COLUMNS`` characters, and the notes '[1] whole first cell' for each
    first cell cut to a short title (``short_title``); a short title still too wide wraps
    inside its column. Wider than ``COLUMNS`` only where the other columns leave under
    ``MIN_TITLE`` characters."""
    first, *others = list(rows[0])
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in others}
    room = COLUMNS - sum(widths.values()) - len(GAP) * len(others)
    width = max(MIN_TITLE, min(room, max(len(first), *(len(r[first]) for r in rows))))
    notes, cells, cut = [], [], 0
    for r in rows:
        title = r[first]
        if len(title) > width:
            cut += 1
            key = f"[{cut}]"
            notes += wrap(f"{key} {title}", " " * (len(key) + 1))
            title = short_title(title, width, key)
        cells.append(textwrap.wrap(title, width, break_long_words=False,
                                   break_on_hyphens=False) or [""])
    width = max(width, *(len(line) for c in cells for line in c))

    def line(cell: str, values: list[str]) -> str:
        return GAP.join([cell.ljust(width), *(v.rjust(widths[k]) for k, v in
                                              zip(others, values, strict=True))]).rstrip()

    lines = [line(first, others)]
    for r, cell in zip(rows, cells, strict=True):
        lines.append(line(cell[0], [r[k] for k in others]))
        lines += [line(more, [""] * len(others)) for more in cell[1:]]
    return lines, notes


def hanging_table(rows: list[dict[str, str]]) -> list[str]:
    """``rows`` (the same keys; the first column's left-aligned and never empty, the middle
    ones right-aligned, the last a long text) as lines of at most ``COLUMNS`` characters: the
    last cell wraps inside the room the others leave (at least ``MIN_TITLE``), its later lines
    indented to its column. A row starts with its first cell, never a space, so a reader joins
    each line that does to the row it continues, as it does a ``wrap``ped line."""
    first, *middle, last = list(rows[0])
    if any(not r[first].strip() for r in rows):
        raise ValueError(f"hanging_table: an empty '{first}' cell would start its row with a space")
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in (first, *middle)}
    indent = sum(widths.values()) + len(GAP) * len(widths)
    room = max(MIN_TITLE, COLUMNS - indent)
    lines = []
    for r in [{k: k for k in rows[0]}, *rows]:
        text = textwrap.wrap(r[last], room, break_long_words=False, break_on_hyphens=False) or [""]
        cells = [r[first].ljust(widths[first]), *(r[k].rjust(widths[k]) for k in middle)]
        lines.append(GAP.join([*cells, text[0]]).rstrip())
        lines += [" " * indent + more for more in text[1:]]
    return lines
