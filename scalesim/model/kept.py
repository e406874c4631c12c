"""Results of a pure model call kept by the contents of its inputs (session 40).

Diagnose predicts one fitted model many times over (each remedy and each of its gain bands'
parameter draws, docs/performance.md), and the layout model's one-device compute pin inside
those predictions is mostly the same inputs again (``layout_predict._pin_compute_s``). A
``Kept`` evaluates each distinct input once; the same inputs give the same figures (the model
reads nothing else), so a kept result is the one computed. Its arrays are made read-only, as
several callers share them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np


def contents(value) -> tuple:
    """A key equal exactly where ``value`` (an inputs field) is: its array's dtype, shape and
    bytes; the repr of one that is not numbers (a table of tuples) or None."""
    a = None if value is None else np.asarray(value)
    if a is None or a.dtype == object:
        return ("repr", repr(value))
    return (a.dtype.str, a.shape, a.tobytes())


class Kept:
    """At most ``entries`` results of inputs of at most ``elements`` array elements in all
    (larger ones, a sweep's grid, are evaluated and not kept); all dropped when full."""

    def __init__(self, entries: int = 256, elements: int = 4096):
        self.entries, self.elements = entries, elements
        self._kept: dict = {}

    def clear(self) -> None:
        self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)

    def __call__(self, evaluate: Callable, x):
        """``evaluate(x)`` (``x`` a dataclass of scalars and arrays), kept by ``x``'s contents."""
        fields = [getattr(x, f.name) for f in dataclasses.fields(x)]
        if sum(np.size(v) for v in fields if v is not None) > self.elements:
            return evaluate(x)
        key = tuple(contents(v) for v in fields)
        result = self._kept.get(key)
        if result is None:
            result = evaluate(x)
            # the result's own arrays (``dataclasses.astuple`` would flag deep copies)
            for v in ([getattr(result, f.name) for f in dataclasses.fields(result)]
                      if dataclasses.is_dataclass(result) else (result,)):
                if isinstance(v, np.ndarray):
                    v.setflags(write=False)
            if len(self._kept) >= self.entries:
                self._kept.clear()
            self._kept[key] = result
        return result
