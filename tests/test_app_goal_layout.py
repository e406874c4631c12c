"""The app's Goal tab gets goal's layout choice (session 43, share link v18, link key ``glay``
from the knob table's row ``goal_layout``). Before, the app passed ``layout="given"`` always, so
for llama3-8b with no split in the sidebar the Goal tab kept data parallelism where ``scalesim
goal`` (search by default) ran the planner's best layout at each count: the two answered
differently for the same what-if. Now the sidebar's "Goal's layouts" (auto, search, given; auto
is the CLI's default: search unless the Layout sets a split) and app == CLI in each mode."""

from __future__ import annotations

import re

import pytest
from app_harness import link_param, open_app, run_clean
from cli_harness import run_cli, whole_lines
from scalesim.app.plan import build_scenario, goal_layout_mode
from scalesim.app.state import default_state

from scalesim.bounds import KNOB_BY_FIELD
from scalesim.goal_layouts import default_layout
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout

# llama3-8b on the default A100 40 GB servers, goal searching up to 64 GPUs: nothing fits
# unsplit, the planner's layouts do
LINK = {"wl": "llama3-8b", "train": "1000000000", "price": "3", "dl": "720", "bud": "1000000",
        "gmax": "64", "tab": "goal"}
CLI = ["goal", "--workload", "llama3-8b", "--train-samples", "1e9", "--price", "3",
       "--deadline", "720h", "--budget", "1000000", "--max-devices", "64"]


def _unescaped(text: str) -> str:
    """A sentence the page wrote through ``markdown_text.escape_markdown``, as plain text."""
    return text.replace("\\$", "$").replace("\\", "")


def _goal_sentence(query: dict) -> str:
    at = open_app(query)
    (box,) = [w.value for w in [*at.success, *at.warning] if "plan" in w.value]
    return _unescaped(box)


def test_the_row_gives_the_key_and_the_choices():
    row = KNOB_BY_FIELD["goal_layout"]
    assert (row.flag, row.url_key, row.choices, row.link_since) == (
        "--layout", "glay", ("search", "given"), 18)
    assert default_state().glay == "auto"


@pytest.mark.parametrize("version, glay, flags", [
    ("18", "search", ["--layout", "search"]),
    ("18", "given", ["--layout", "given"]),
    ("18", None, []),  # auto: goal's default, as the CLI without --layout
    # an older link opens as its Goal tab was before v18: the sidebar's Layout kept (given)
    ("17", None, ["--layout", "given"]),
])
def test_the_goal_tab_answers_as_the_cli_in_each_mode(capsys, version, glay, flags):
    query = {"v": version, **LINK, **({"glay": glay} if glay else {})}
    app = _goal_sentence(query)
    code, out, err = run_cli(capsys, [*CLI, *flags])
    assert code == 0, err
    cli = whole_lines(out).splitlines()[0]  # goal's text wraps at 110
    if "given" in flags:  # data parallel: nothing fits on 40 GB
        # the layout kept in the page's labels since session 50, the CLI's notation on the CLI
        cli_kept, page_kept = ("(tp 1 x pp 1, recompute none)",
                               "(Tensor parallel 1, Pipeline stages 1, Activation recompute none)")
        assert cli_kept in cli and app == cli.replace(cli_kept, page_kept)
        assert app.startswith("No plan runs")
        return
    # the planner's layouts: a plan that says its split, in the page's labels since session 51,
    # its strategy by the Strategy control's choice too (session 51, later)
    cli_plan, page_plan = ("dp 16 x tp 2 x pp 2 (interleaved 1F1B, 2 virtual stages, recompute "
                           "none, sequence parallel)",
                           "16 data-parallel ranks x Tensor parallel 2 x Pipeline stages 2 "
                           "(interleaved 1F1B, 2 virtual stages, Activation recompute none, "
                           "Sequence parallelism)")
    assert cli_plan in cli and ", zero2, network " in cli
    # the batch by its controls since goal.batch_said (session 51, later still)
    page = cli.replace(cli_plan, page_plan).replace(", zero2, ", ", Strategy ZeRO-2, ")
    assert app == re.sub(r"micro-batch (\d+) per replica x (\d+) accumulation",
                         r"Micro-batch \1 per model replica x Gradient accumulation \2", page)
    assert not app.startswith("No plan runs")


def test_the_sidebar_has_the_control_and_the_link_follows_it():
    at = open_app({"v": "18", **LINK})
    control = at.sidebar.selectbox(key="k_glay")
    assert control.label == "Goal's layouts" and control.value == "auto"
    assert control.options == ["auto: search unless the Layout sets a split",
                               "search: the planner's best at each device count",
                               "given: the sidebar's Layout at every count"]
    control.set_value("given")
    run_clean(at)
    # given is what a link before v18 opens this split at (``opened_before``): written as v17
    # (gmax's), without the key; search is written as v18
    assert link_param(at, "v") == "17" and "glay" not in at.query_params
    assert any(w.value.startswith("No plan runs") for w in at.warning)
    at.sidebar.selectbox(key="k_glay").set_value("search")
    run_clean(at)
    assert (link_param(at, "v"), link_param(at, "glay")) == ("18", "search")
    # the search note names the app's control, not the CLI's flag
    at = open_app({"v": "18", **LINK, "glay": "search"})
    caption = next(c.value for c in at.caption if "plans searched" in c.value)
    assert "Goal's layouts 'given' in the sidebar's Training goal and price keeps" in caption
    assert "--" not in caption


def test_auto_is_the_clis_default_of_the_split_the_sidebar_sets():
    """auto resolves as ``goal_layouts.default_layout`` of the scenario the CLI's flags give:
    a split (tp 2, recompute full) keeps it; the framework's recompute style alone does not
    (``--recompute-style`` is no layout choice), though the app's scenario carries a layout
    for it."""
    profile = resolve_profile(None, "a2-highgpu-8g", "llama3-8b")
    base = default_state().model_copy(update={"wl": "llama3-8b"})
    cases = [({}, Scenario()), ({"tp": 2}, Scenario(layout=ScenarioLayout(tp=2))),
             ({"rec": "full"}, Scenario(layout=ScenarioLayout(recompute="full"))),
             ({"rec": "selective", "rs": "op-sac"}, Scenario(layout=ScenarioLayout(
                 recompute="selective", recompute_style="op-sac"))),
             ({"rs": "early-stop"}, Scenario(layout=ScenarioLayout(recompute_style="early-stop")))]
    modes = []
    for update, cli in cases:
        state = base.model_copy(update=update)
        scenario, _ = build_scenario(state, profile)
        modes.append(goal_layout_mode(state, profile, scenario))
        assert modes[-1] == default_layout(profile, cli), update
    assert modes == ["search", "given", "given", "given", "search"]
    # the choice made wins
    state = base.model_copy(update={"tp": 2, "glay": "search"})
    assert goal_layout_mode(state, profile, build_scenario(state, profile)[0]) == "search"


def test_search_on_a_parameter_count_workload_names_the_apps_controls():
    """bert-large has no transformer shape: a link asking search gets the CLI's refusal in the
    app's words (the control disabled but kept, so it can be set back)."""
    at = open_app({"v": "18", "train": "1000000000", "price": "3", "dl": "720",
                   "bud": "1000000", "glay": "search", "tab": "goal"})
    (info,) = [i.value for i in at.info if "Goal seeking needs more" in i.value]
    assert "no transformer shape" in info and "--" not in info
    assert ("pick a transformer workload (e.g. llama3-8b) in the sidebar or drop Goal's layouts "
            "'search' in the sidebar's Training goal and price") in _unescaped(info)
    assert not at.sidebar.selectbox(key="k_glay").disabled  # search: kept open to set back
    assert open_app({"v": "18", "tab": "goal"}).sidebar.selectbox(key="k_glay").disabled


def test_an_older_link_opens_its_goal_tab_as_its_sender_saw_it():
    """Before, a v17 link opened at auto, so for llama3-8b with no split its Goal tab searched
    the planner's layouts where the sender's (v17) had kept data parallelism: 'Cheapest plan
    ... as dp 4 x tp 2 ...' for the sender's 'No plan runs'. Now it opens at given; where auto
    keeps the Layout too (a split, a parameter-count workload) at auto, the same answer, so
    such a state is written at its older version as before; and a link re-shared from an
    older one opens the same again."""
    from urllib.parse import parse_qs

    from scalesim.app.state import decode_query, encode_query, link_version, opened_before

    at = open_app({"v": "17", **LINK})
    assert at.sidebar.selectbox(key="k_glay").value == "given"
    assert any(w.value.startswith("No plan runs") for w in at.warning)
    for query, opens in (({"v": "17", **LINK}, "given"), ({"v": "17", **LINK, "tp": "2"}, "auto"),
                         ({"v": "17", **LINK, "wl": "bert-large"}, "auto"),
                         ({"v": "18", **LINK}, "auto")):
        state, profile, _ = decode_query(query)
        assert state.glay == opens, query
        again = encode_query(state, profile)
        assert decode_query(parse_qs("&".join(f"{k}={v}" for k, v in again.items())))[0] == state
    # the default page's state (auto) for llama3-8b searches, which no older link says: v18
    state, profile, _ = decode_query({"v": "18", **LINK})
    assert (opened_before("glay", state, profile), link_version(state, profile)) == ("given", 18)
    assert "glay" not in encode_query(state, profile)  # auto: v18's frozen default
    given = state.model_copy(update={"glay": "given"})
    assert link_version(given, profile) < 18 and "glay" not in encode_query(given, profile)
