"""Session 50, continued: the Layouts tab's table and a searched goal plan's table head their
layout columns with short names ('dp', 'tp', 'pp', 'ZeRO', ``table_columns.LAYOUT_COLUMNS``;
tests and readers look columns up by them), and the layouts chart tags each bar 'dp8 tp2 pp2
z1 mb1'. The page now explains them in its labels right above the table
('Columns: dp = data-parallel ranks, tp = Tensor parallel, ...',
``layout_titles.short_legend``), and the chart's subtitle says the tags so, where it said
'dp x tp x pp, ZeRO stage (z), micro-batch (mb), ...', the CLI's notation."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app import charts
from scalesim.app.plan import layout_ranking, make_plan
from scalesim.app.state import decode_query, preset_profile
from test_app_goal_layout import LINK as GOAL_LINK
from test_app_layouts import LAYOUT_LINK

from scalesim.device_nouns import GPU_NOUNS

LAYOUTS_LEGEND = ("Columns: dp = data-parallel ranks, tp = Tensor parallel, pp = Pipeline "
                  "stages, ZeRO = the Strategy's ZeRO stage (0: DDP).")


def _main_kinds(at) -> list[tuple[str, object]]:
    """(kind, value) of each element of the page's main area, in the page's order."""
    out = []

    def walk(node):
        if hasattr(node, "children") and node.children:
            for child in node.children.values():
                walk(child)
        else:
            out.append((node.type, getattr(node, "value", None)))

    walk(at.main)
    return out


def test_the_layouts_table_has_its_short_columns_explained_right_above_it():
    at = open_app({**LAYOUT_LINK, "tab": "layouts"})
    kinds = _main_kinds(at)
    table = next(i for i, (kind, value) in enumerate(kinds)
                 if kind == "dataframe" and "ZeRO runs as" in value.columns)
    assert kinds[table - 1] == ("caption", LAYOUTS_LEGEND), kinds[table - 1]


def test_a_searched_goal_plans_table_has_its_short_columns_explained():
    at = open_app({"v": "18", **GOAL_LINK})
    table = next(d.value for d in at.dataframe if "meets goal" in d.value.columns)
    assert {"tp", "pp"} <= set(table.columns)
    assert any(c.value.startswith("Columns: tp = Tensor parallel, pp = Pipeline stages")
               for c in at.caption), [c.value for c in at.caption]


def test_the_layouts_chart_subtitle_says_the_tags_in_the_pages_labels():
    state = decode_query(LAYOUT_LINK)[0]
    plan = make_plan(preset_profile(state), state)
    rows = layout_ranking(plan.profile, plan.scenario, plan.focus)
    subtitle = charts.layouts_chart(rows, plan.focus.devices, words=GPU_NOUNS).to_dict()[
        "title"]["subtitle"]
    assert subtitle[0] == ("dp = data-parallel ranks, tp = Tensor parallel, pp = Pipeline "
                           "stages, z = the Strategy's ZeRO stage (0: DDP), mb = Micro-batch, "
                           "rc = Activation recompute, sp = Sequence parallelism")
    assert subtitle[1].startswith("only layouts that fit in memory")
    assert "dp x tp x pp" not in " ".join(subtitle)
