"""Session 51: the Goal tab's note of the kept layout's uneven stages names the pipeline by the
sidebar's control ('32 layers over Pipeline stages 3: ...'), as the planner page's own stage
note does since 78dea274; ``scalesim goal`` keeps its 'over pp 3'
(tests/test_review20.py::test_goal_says_the_uneven_stages_of_the_split_it_keeps)."""

from __future__ import annotations

from app_harness import open_app

# llama3-8b (32 layers) on DGX H100 servers at Tensor parallel 2 x Pipeline stages 3, goal
# keeping that layout ('given') at counts of 6 to 96 devices
LINK = {"v": "18", "hw": "dgx-h100", "wl": "llama3-8b", "tp": "2", "pp": "3", "grid": "list",
        "dlist": "6,12,24,48,96", "train": "1000000000", "price": "3", "dl": "720",
        "bud": "1000000", "gmax": "96", "glay": "given", "tab": "goal"}


def test_the_goal_tabs_stage_note_names_the_pipeline_control():
    """32 layers over 3 stages: 2 of ceil(32 / 3) = 11 and one of 32 - 22 = 10 (was '32 layers
    over pp 3: ...')."""
    at = open_app(LINK)
    (caption,) = [c.value for c in at.caption if "plans searched" in c.value]
    assert ("32 layers over Pipeline stages 3: 2 stages of 11 layers and one of 10 (Megatron-LM: "
            "--decoder-last-pipeline-num-layers 10; torchtitan splits it so by itself)."
            in caption), caption
    assert "over pp 3" not in caption
