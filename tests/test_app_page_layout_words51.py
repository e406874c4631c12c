"""Session 51: three more places on the planner page and in its HTML report that said a layout
in the CLI's notation or with a degree of 1 where the page's layout titles use its control
labels and leave a 1 out (``layout_titles.page_title``, ``page_degrees``)."""

from __future__ import annotations

from scalesim.app.plan import build_scenario
from scalesim.app.state import decode_query, preset_profile

# gpt-7.5b (36 layers) on DGX A100 servers, up to 64 GPUs
BASE = {"v": "18", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64"}


def _notes(**link) -> list[str]:
    state = decode_query({**BASE, **link})[0]
    return build_scenario(state, preset_profile(state))[1]


def test_the_pages_scenario_notes_name_the_recompute_controls():
    """Was 'recompute style early-stop ignored: recompute is selective, not full'."""
    notes = _notes(tp="2", rec="selective", rs="early-stop")
    assert ("Recompute style early-stop ignored: Activation recompute is selective, not full"
            in notes)


def test_the_pages_stage_note_names_the_pipeline_control():
    """36 layers over 5 stages: 4 of ceil(36 / 5) = 8 and one of 36 - 32 = 4 (was '36 layers
    over pp 5: ...'); 2 x 2 virtual stages: 36 / 4 = 9 a chunk (was 'over pp 2 x 2 virtual
    stages')."""
    notes = _notes(pp="5", acc="10", grid="list", dlist="40")
    assert any(n.startswith("36 layers over Pipeline stages 5: 4 stages of 8 layers and one of "
                            "4 (Megatron-LM: --decoder-last-pipeline-num-layers 4;")
               for n in notes), notes
    notes = _notes(pp="2", sched="interleaved", vs="2", acc="8")
    assert any(n.startswith("36 layers over Pipeline stages 2 x Virtual stages 2: 9 layers a "
                            "chunk") for n in notes), notes
    assert not any("over pp " in n for n in notes)
