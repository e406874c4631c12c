"""docs/model.md's equations of the pipeline (§15), the layout's memory and stragglers (§16)
as the doc writes them, on round numbers: each pins a line of the doc that had said something
other than what the model computes (session 42's audit)."""

import pytest
from test_collective_waits import GPT, HW

from scalesim.layout import INTERLEAVED
from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts


def _inputs(**changes):
    base = dict(dp=1, tp=1, pp=1, cp=1, zero=0, micro_batch=4, global_batch=16, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    base.update(changes)
    return LayoutInputs(**{**GPT, **HW, **base})


def test_the_interleaved_last_stage_holds_its_warm_up_chunks_in_flight():
    """§15/§16: the last rank of an interleaved pipeline holds ((v - 1) p + 1) / v micro-batches
    of its layers in flight, not 1. GPT 1.7B's layer shape, 4 layers over p 2 x v 2 (2 layers a
    rank), m = 4, a 256,000-token vocabulary so that the last rank (fp32 logits of one
    micro-batch) is the fullest: 2 layers x 1.5 + 4 b s V bytes; the first holds 2 x 2.5."""
    x = _inputs(pp=2, schedule=INTERLEAVED, virtual_stages=2, layers=4, vocab=256000)
    act = float(tf.activation_bytes_per_layer(4, 2048, 2304, 24, 24, 9216, False))
    last = 2 * act * ((2 - 1) * 2 + 1) / 2 + 4 * 4 * 2048 * 256000
    first = 2 * act * 2 * (1 + 1 / 4)
    assert last > first
    assert float(evaluate_layouts(x).activation_bytes) == pytest.approx(last, rel=1e-12)
    # what the doc said (one micro-batch in flight on the last stage) is one layer, 2.65 GB, less
    assert last - (2 * act + 4 * 4 * 2048 * 256000) == pytest.approx(act, rel=1e-12)
