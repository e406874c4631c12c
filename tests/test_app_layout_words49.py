"""Session 49: the planner's 'Cannot predict' box names the page's controls where the layout's
refusals wrote notation ('tp x pp = 3', 'shard group 3 does not divide dp 16', 'global batch
100 is not divisible by dp 8 x accumulation 1'); the page walked under AppTest (the same lines
without Streamlit, and the CLI's: ``test_layout_words49.py``)."""

from __future__ import annotations

import pytest
from app_harness import cannot_predict_box, open_app, preset_query
from test_layout_words49 import BOXES, H100, NOTATION


# the page's box holds the line test_layout_words49 builds without Streamlit, and on two of
# them the ' Below:' that introduces the fallback what-if the page draws under the box
@pytest.mark.parametrize("case, after", [("pp 3", ""), ("cp 3", ""), ("shard group 3", " Below:"),
                                         ("global batch over dp", " Below:")])
def test_the_box_names_the_pages_controls(case, after):
    """Before session 49: '... not divisible by tp x pp = 3 ... Controls to change: Largest
    device count, Tensor parallel, Pipeline stages.', 'shard group 3 does not divide dp 16 ...
    Control to change: Shard group (HSDP).', 'global batch 100 is not divisible by dp 8 x
    accumulation 1 (8 devices); pick a global batch divisible by dp x accumulation: 96 or 104.
    Controls to change: Global batch, Gradient accumulation.'"""
    fields, said = BOXES[case]
    box = cannot_predict_box(open_app(preset_query(**fields))).replace("\\", "")  # md escapes
    assert f"Cannot predict this scenario: {said}{after}" in box, box
    for notation in NOTATION:
        assert notation not in box, box


def test_the_boxs_other_rules_name_the_pages_controls():
    """tp 8 x pp 2 on 8, 24 and 32 devices with Global batch 3: the split leaves out 8 and 24,
    the batch 32 (dp 32 / 16 = 2 does not divide 3): the box's second reason names the page's
    controls (``count_refusal``'s reasons joined as templates). Before session 49 (follow-up):
    '...; at 32 devices, global batch 3 does not split evenly over dp x accumulation 2.
    Controls to change: Device counts, Global batch, Gradient accumulation.'"""
    box = cannot_predict_box(open_app(preset_query(
        **H100, tp=8, pp=2, mode="strong", gb=3, grid="list", dlist="8,24,32"))).replace("\\", "")
    assert ("Cannot predict this scenario: devices 8 and 24 are not divisible by Tensor parallel "
            "8 x Pipeline stages 2 = 16; give device counts that are multiples of it (16 or 32), "
            "or a split whose product divides 8; at 32 devices, Global batch 3 does not split "
            "evenly over the 2 data-parallel ranks x Gradient accumulation 1. Control to change: "
            "Device counts.") in box, box
    for notation in ("dp x", "x accumulation", "global batch"):
        assert notation not in box, box


@pytest.mark.parametrize("fields, note", [
    ({**H100, "strat": "zero3", "sg": 16, "grid": "list", "dlist": "16,24,40"},
     "Shard group (HSDP) 16 does not divide the 24 or 40 data-parallel ranks: the rows on 24 and "
     "40 devices are left out; Shard group (HSDP) 8 runs every count, or give counts whose "
     "data-parallel ranks it divides"),
    ({**H100, "tp": 4, "pp": 2, "grid": "list", "dlist": "4,8,16"},
     "Tensor parallel 4 x Pipeline stages 2 = 8 does not divide the devices: the row on 4 "
     "devices is left out; a split whose product divides 4 runs every count, or give counts "
     "that are multiples of 8"),
], ids=["shard group 16", "tp x pp 8"])
def test_the_left_out_notes_name_the_pages_controls(fields, note):
    """The page's 'left out' notes (``counts_left_out``'s templates said in the page's labels).
    Before session 49 (follow-up): 'shard group 16 does not divide dp 24 or 40: ...; Shard group
    (HSDP) 8 runs every count, or give counts whose dp it divides', 'tp x pp = 8 does not divide
    the devices: ...; a tp x pp that divides 4 runs every count ...'."""
    at = open_app(preset_query(**fields))
    infos = [i.value.replace("\\", "") for i in at.info]
    assert any(note in i for i in infos), infos
    left = next(i for i in infos if "left out" in i)
    for notation in ("tp x", "x pp", "dp ", "shard group"):
        assert notation not in left, left
