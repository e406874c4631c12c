"""Session 49: the planner's 'Cannot predict' box names the page's controls where the layout's
refusals wrote notation ('tp x pp = 3', 'shard group 3 does not divide dp 16', 'global batch
100 is not divisible by dp 8 x accumulation 1'); the page walked under AppTest (the same lines
without Streamlit, and the CLI's: ``test_layout_words49.py``)."""

from __future__ import annotations

import pytest
from app_harness import cannot_predict_box, open_app, preset_query

H100 = {"hw": "dgx-h100", "wl": "llama3-8b"}


@pytest.mark.parametrize("fields, said", [
    ({**H100, "pp": 3},
     "devices 1, 2, 4, 8 and 16 are not divisible by Tensor parallel 1 x Pipeline stages 3 = 3; "
     "give device counts that are multiples of it (3, 6 or 24). Control to change: Largest "
     "device count."),
    ({**H100, "cp": 3},
     "devices 1, 2, 4, 8 and 16 are not divisible by Tensor parallel 1 x Pipeline stages 1 x "
     "Context parallelism 3 = 3; give device counts that are multiples of it (3, 6 or 24). "
     "Control to change: Largest device count."),
    ({**H100, "strat": "zero3", "sg": 3, "grid": "list", "dlist": "16"},
     "Shard group (HSDP) 3 does not divide the 16 data-parallel ranks; give a divisor of it "
     "(e.g. 16: full sharding) (at 16 devices). Below:"),
    ({**H100, "mode": "strong", "gb": 100, "grid": "list", "dlist": "8"},
     "Global batch 100 is not divisible by 8 data-parallel ranks x Gradient accumulation 1 (8 "
     "devices); pick one divisible by their product: 96 or 104. Below:"),
], ids=["pp 3", "cp 3", "shard group 3", "global batch"])
def test_the_box_names_the_pages_controls(fields, said):
    """Before session 49: '... not divisible by tp x pp = 3 ... Controls to change: Largest
    device count, Tensor parallel, Pipeline stages.', 'shard group 3 does not divide dp 16 ...
    Control to change: Shard group (HSDP).', 'global batch 100 is not divisible by dp 8 x
    accumulation 1 (8 devices); pick a global batch divisible by dp x accumulation: 96 or 104.
    Controls to change: Global batch, Gradient accumulation.'"""
    box = cannot_predict_box(open_app(preset_query(**fields))).replace("\\", "")  # md escapes
    assert f"Cannot predict this scenario: {said}" in box, box
    for notation in ("tp x", "x pp", "dp ", "shard group", " x accumulation", "global batch"):
        assert notation not in box, box
