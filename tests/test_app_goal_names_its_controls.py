"""The Goal tab names the app's own controls (session 42's app walk): for llama3-8b on the
default A100 40 GB servers nothing fits unsplit, and its note told the app's user to change
'--tp, --pp' and '--max-devices', flags of the CLI; the app has no largest-count control at all.
Now the sidebar's labels (through the knob table's link keys), and since v17 the app's own
largest count goal searches (gmax) by its label; the CLI's note keeps its flags. Goal keeps the
split as given in both (app == CLI)."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.planner_page import goal_controls

from scalesim.bounds import GOAL_DEFAULT_MAX_DEVICES
from scalesim.device_nouns import nouns_for
from scalesim.goal import no_fit_note
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario

# the sidebar's split kept (Goal's layouts 'given', v18; the default searches layouts as the CLI)
LINK = {"v": "18", "glay": "given", "wl": "llama3-8b", "train": "1000000000", "price": "3", "dl": "720",
        "bud": "1000000", "tab": "goal"}


def test_the_goal_tab_names_the_sidebar_controls_and_how_far_it_searched():
    at = open_app(LINK)
    assert any(w.value.startswith("No plan runs") for w in at.warning)
    caption = next(c.value for c in at.caption if "plans searched" in c.value)
    # the kept layout in the sidebar's labels (session 50; the CLI's 'tp 1 x pp 1, recompute
    # none')
    assert ("Goal keeps the split and recompute as given (Tensor parallel 1, Pipeline stages 1, "
            "Activation recompute none) and "
            "nothing fits at them: recompute the activations (Activation recompute full), split "
            "the model further (Tensor parallel, Pipeline stages in the sidebar's Layout; the "
            "Layouts tab ranks the layouts that fit), or search more devices (Largest device "
            "count goal searches in the sidebar's Training goal and price, now 1,024)") in caption
    assert "--" not in caption  # no CLI flag the app does not have


def test_the_cli_keeps_its_flags_and_the_app_its_labels_from_one_note():
    profile = resolve_profile(None, "a2-highgpu-8g", "llama3-8b")
    base = Scenario(train_samples=1e9, price_per_device_hour=3.0)
    assert no_fit_note(profile, base, 16).endswith(
        "split the model further (--tp, --pp; scalesim plan ranks the layouts that fit), or "
        "search more devices (--max-devices, now 16)")
    app = no_fit_note(profile, base, GOAL_DEFAULT_MAX_DEVICES,
                      goal_controls(nouns_for(profile.hardware.device_name)))
    # the app's own control since v17 (gmax), named by its sidebar label where it is
    assert app.endswith("or search more devices (Largest device count goal searches in the "
                        "sidebar's Training goal and price, now 1,024)")
    assert "max-devices" not in app
    cpu = goal_controls(nouns_for("CPU: AMD EPYC"))  # with cp, as a split no count takes
    assert cpu.split("tp", "pp", "cp") == ("Tensor parallel, Pipeline stages, Context "
                                           "parallelism in the sidebar's Layout")
