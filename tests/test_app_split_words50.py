"""Session 50: the planner's page and its HTML report say a layout's split in the sidebar's labels
(Tensor parallel, Pipeline stages, the data-parallel ranks in words), not the CLI's notation
('dp x tp x pp'), which no control shows."""

from __future__ import annotations

from app_harness import open_app
from scalesim.app.layout_titles import PAGE_SPLIT_HEADER, SEARCHED_LAYOUTS
from scalesim.app.plan import make_plan
from scalesim.app.state import decode_query, preset_profile

# gpt-7.5b on DGX A100s split tp 2 x pp 2: 64 GPUs are 16 data-parallel ranks
SPLIT_LINK = {"v": "3", "hw": "dgx-a100", "wl": "gpt-7.5b", "dmax": "64", "tp": "2",
              "pp": "2", "sp": "1", "mb": "1", "acc": "8"}


def test_the_split_header_and_the_searched_layouts_are_the_sidebars_labels():
    assert PAGE_SPLIT_HEADER == "data-parallel ranks x Tensor parallel x Pipeline stages"
    assert SEARCHED_LAYOUTS == (
        "every layout (data-parallel ranks x Tensor parallel x Pipeline stages, Strategy, "
        "Micro-batch, Pipeline schedule, Activation recompute and Sequence parallelism)")


def test_the_layouts_heading_says_the_search_in_the_sidebars_labels():
    at = open_app({**SPLIT_LINK, "tab": "layouts"})
    heading = next(m.value for m in at.markdown if m.value.startswith("**Best of"))
    assert heading.startswith(f"**Best of {SEARCHED_LAYOUTS} on 64 devices at global batch "), heading
    assert "dp x tp x pp" not in heading and "ZeRO, micro-batch" not in heading


def test_the_numbers_table_heads_its_split_column_in_the_sidebars_labels():
    """64 GPUs at tp 2 x pp 2: 16 data-parallel ranks, the cell '16 x 2 x 2' under the header."""
    at = open_app(SPLIT_LINK)
    table = next(d.value for d in at.dataframe if PAGE_SPLIT_HEADER in d.value.columns)
    assert "dp x tp x pp" not in table.columns
    row = table[table["devices"] == 64].iloc[0]
    assert row[PAGE_SPLIT_HEADER] == "16 x 2 x 2"


def test_the_html_reports_split_column_is_the_pages():
    from scalesim.app.report import report_html

    state = decode_query(SPLIT_LINK)[0]
    html = report_html(make_plan(preset_profile(state), state), "http://x/?v=3")
    assert f">{PAGE_SPLIT_HEADER}</th>" in html
    assert "dp x tp x pp" not in html and "16 x 2 x 2" in html
