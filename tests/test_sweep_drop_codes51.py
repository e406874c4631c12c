"""sweep counts its dropped rows from one code a row (``sweep.Drops``, session 51): the counts
the notes and ``SweepResult`` read (every drop, the broken layouts, the rows a left-out note
names) all derive from it, so they cannot disagree; before, four counters and two examples were
kept and merged apart. By hand, six rows: kept; batch; layout; batch and layout (the layout
counts); batch, said; layout, said. A kept row a note names stays kept."""

import numpy as np

from scalesim.sweep import Drops, SweepResult

BATCH_OK = np.array([True, False, True, False, False, True])
LAYOUT_OK = np.array([True, True, False, False, True, False])
SAID = np.array([True, False, False, False, True, True])


def test_each_count_derives_from_the_row_codes():
    drops = Drops.of_rows(BATCH_OK, LAYOUT_OK, SAID, ("first", "first unsaid"))
    assert drops.counts == (1, 2, 1, 1)  # batch, layout, batch said, layout said
    assert drops.noted() == (3, 2, "first unsaid")  # the rows no left-out note names
    assert drops.noted(left_out=True) == (5, 3, "first")
    result = SweepResult(columns={"devices": np.array([1])}, drops=drops)
    assert (result.dropped, result.dropped_layout, result.dropped_left_out,
            result.dropped_left_out_layout) == (5, 3, 2, 1)
    assert (result.layout_example, result.other_example) == ("first", "first unsaid")


def test_chunks_add_up_and_keep_each_first_example():
    none_yet = Drops((2, 0, 0, 0), ("", ""))
    later = Drops((0, 1, 0, 1), ("a", "b"))
    assert none_yet + later == Drops((2, 1, 0, 1), ("a", "b"))
    assert (later + Drops((0, 3, 0, 0), ("c", "d"))).examples == ("a", "b")
    assert sum([none_yet, later], Drops()).noted() == (3, 1, "b")
