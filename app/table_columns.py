"""Number columns of the app's tables: a column holds numbers (its unit in its name), never text
such as '101.2 GiB' or '3.0 days', so sorting it in the app sorts by value ('101.2 GiB' sorted
before '27.0 GiB' as text). A cell with no number (a run that does not fit, no price) is empty
(None), and a word column beside it says why.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from scalesim.figures import THROUGHPUT_DIGITS
from scalesim.layout import SCHEDULE_SHORT

HOURS_PER_S = 1 / 3600.0
# a throughput column (samples/s): ``figures.throughput``'s significant digits, as every
# command's table and the page's metrics write it. Streamlit's printf %g is sprintf-js's
# String(Number(x.toPrecision(n))) (its frontend bundle, streamlit 1.67): '0.2075', '17.11',
# '4016', '140900', never an exponent from 1e-6 up; a fixed '%.0f' read a run below 0.5/s as
# '0' and '%.1f' one below 0.05/s as '0.0'
RATE_FORMAT = f"%.{THROUGHPUT_DIGITS}g"

# the unit a name ends in ('step ms') or, for a word, starts with ('hours to finish') -> the
# display format (printf or Streamlit's 'dollar'), first match wins
FORMATS = (
    (" ms", "%.2f"),
    (" %", "%.1f"),
    ("/s", RATE_FORMAT),
    (" GiB", "%.1f"),
    (" USD", "dollar"),
    (" hours", "%.1f"),
)


# a plan's layout, as the Layouts tab's table names its columns (a searched goal plan's too)
LAYOUT_COLUMNS = {"tp": "tp", "pp": "pp", "cp": "cp", "schedule": "schedule",
                  "virtual_stages": "virtual stages", "recompute": "recompute",
                  "sequence_parallel": "seq. parallel"}


def searched_layout_cells(plans: list) -> list[dict]:
    """Each of goal's ``plans`` (``goal.GoalPlan``) as its layout's cells, by
    ``LAYOUT_COLUMNS``: tp, pp (cp where one is above 1), schedule (virtual stages where one is
    interleaved), recompute, sequence parallel; none (empty dicts) where the plans carry no
    searched layout (``goal --layout given``: the scenario's own, said in the notes)."""
    if not plans or any(p.recompute is None for p in plans):
        return [{} for _ in plans]
    fields = ["tp", "pp", *(["cp"] if any(p.cp > 1 for p in plans) else []), "schedule",
              *(["virtual_stages"] if any(p.schedule == "interleaved" for p in plans) else []),
              "recompute", "sequence_parallel"]
    return [{LAYOUT_COLUMNS[f]: SCHEDULE_SHORT.get(p.schedule, p.schedule) if f == "schedule"
             else getattr(p, f) for f in fields} for p in plans]


def to_hours(seconds: float | None) -> float | None:
    """A time in a table's hours column (seconds in, hours out); None stays None (no time)."""
    return None if seconds is None else seconds * HOURS_PER_S


def _named_in(name: str, unit: str) -> bool:
    """Whether the column ``name`` carries ``unit``: at its end, or a unit word at its start."""
    return name.endswith(unit) or (unit.startswith(" ") and f"{name} ".startswith(unit[1:] + " "))


def number_columns(df: pd.DataFrame, formats: dict[str, str] | None = None) -> dict:
    """``st.dataframe``'s column_config for ``df``: a NumberColumn with its format for each
    numeric column whose name ends in a unit of ``FORMATS`` (``formats``: others by name)."""
    config = {}
    for column in df.columns:
        if df[column].dtype.kind not in "iuf":  # text (a word column) stays text
            continue
        fmt = (formats or {}).get(column) or next(
            (f for unit, f in FORMATS if _named_in(str(column), unit)), None
        )
        if fmt is not None:
            config[column] = st.column_config.NumberColumn(format=fmt)
    return config


def show_table(df: pd.DataFrame, formats: dict[str, str] | None = None, **kwargs) -> None:
    """``st.dataframe`` of ``df`` without its index, its number columns formatted
    (``number_columns``)."""
    st.dataframe(df, hide_index=True, column_config=number_columns(df, formats), **kwargs)
