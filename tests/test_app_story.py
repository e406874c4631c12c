"""The first view tells the story; charts are readable (contrast, words, one colour per meaning)."""

from __future__ import annotations

import json

from scalesim.app.charts import (
    MUTED_TEXT_COLOUR,
    PALETTE,
    TEXT_COLOUR,
    all_charts,
    chart_text,
    throughput_chart,
)
from scalesim.app.plan import make_plan, story
from scalesim.app.state import default_state, preset_profile


def _contrast(hex_colour: str) -> float:
    """WCAG contrast ratio of a colour on white."""
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    lum = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    return 1.05 / (lum + 0.05)


def _plan(**changes):
    state = default_state().model_copy(update={"cbs": 4096.0, "train": 1e9, "price": 4.0,
                                               **changes})
    return make_plan(preset_profile(state), state)


def test_the_first_view_shows_one_server_and_the_knee_at_sixteen():
    state = default_state()
    plan = make_plan(preset_profile(state), state)
    assert [r.devices for r in plan.rows] == [1, 2, 4, 8, 16]
    assert plan.focus.devices == 16
    text = story(plan)
    assert text.startswith("**What this shows:** throughput grows almost linearly to 8 devices")
    assert "16 devices" in text and "**What to do:**" in text
    spec = json.dumps(throughput_chart(plan).to_dict())
    assert '"type": "log"' not in spec  # a short range reads on linear axes


def test_chart_text_has_at_least_4_5_to_1_contrast_and_every_chart_has_words():
    plan = _plan()
    for colour in (TEXT_COLOUR, MUTED_TEXT_COLOUR, PALETTE["knee"]):
        assert _contrast(colour) >= 4.5, colour
    for name, chart in all_charts(plan).items():
        spec = json.dumps(chart.to_dict())
        assert f'"labelColor": "{MUTED_TEXT_COLOUR}"' in spec, name
        assert chart_text(plan, name), name


def test_one_colour_per_meaning():
    assert len(set(PALETTE.values())) == len(PALETTE)
