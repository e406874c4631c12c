"""Session 50: the notes saying why one more server (the decision card's) or more devices (the
plan's) were not compared quoted their refusal in an f-string, so its template was lost and the
page said the CLI's notation ('global batch 8 ... x 1 accumulation steps'); now each keeps it
(``errors.within``, ``errors.in_words_of``) and names the page's controls."""

from __future__ import annotations

from app_harness import open_app

# 8 devices at a fixed global batch of 8: one more server (16 devices) takes 8 / 16 = half a
# sample each, and no added count (16, 24, 32: one to three servers of 8 more) divides 8
QUERY = {"v": "9", "mode": "strong", "gb": "8", "grid": "list", "dlist": "8"}


def _shown(at) -> list[str]:
    """The page's info boxes and captions, Markdown escapes dropped."""
    return [e.value.replace("\\", "") for e in (*at.info, *at.caption)]


def test_the_more_devices_note_names_the_pages_controls():
    """Was 'More devices (8 -> 16) not compared: global batch 8 does not split evenly over 16
    devices x 1 accumulation steps; pick a global batch divisible by devices x accumulation:
    16.' (the nearest batch 16 x 1 divides: 16); the page's arrow since session 51."""
    (box,) = [t for t in _shown(open_app(QUERY)) if "not compared" in t and "More" in t]
    assert box == ("More devices (8 → 16) not compared: Global batch 8 does not split evenly "
                   "over 16 devices x Gradient accumulation 1; pick one divisible by their "
                   "product: 16."), box


def test_the_cards_one_more_server_note_names_the_pages_controls():
    """Was 'One more server not compared: global batch 8 does not split evenly over any of 16,
    24 and 32 devices x 1 accumulation steps; pick a global batch divisible by devices x
    accumulation.'"""
    (caption,) = [t for t in _shown(open_app(QUERY)) if "One more server not compared" in t]
    assert ("One more server not compared: Global batch 8 does not split evenly over any of 16, "
            "24 and 32 devices x Gradient accumulation 1; pick one divisible by their "
            "product.") in caption, caption
    assert "accumulation steps" not in caption


def test_a_split_models_note_says_its_data_parallel_ranks_in_words():
    """tp 8 x pp 2 from 64 devices at global batch 4: the counts tried, 80 to 192, are dp 5 to
    12 (80 / 16 = 5 ... 192 / 16 = 12). The CLI's line keeps 'dp 5, 6, ...' byte for byte
    (``test_review_merges19b``); the page's says the ranks in words."""
    from scalesim.app.named_controls import control_namer
    from scalesim.app.state import AppState
    from test_review_merges19b import _ctx

    from scalesim.decision import _splits_nowhere
    from scalesim.device_nouns import GPU_NOUNS
    from scalesim.errors import in_words_of

    why = _splits_nowhere(_ctx(64, 8, 2, 4), 8, 16)
    assert str(why).startswith("global batch 4 does not split evenly over any of 80, 96, ")
    page = in_words_of(why, control_namer(AppState(), GPU_NOUNS))
    assert page == ("Global batch 4 does not split evenly over any of 80, 96, 112, 128, 144, "
                    "160, 176 and 192 devices (5, 6, 7, 8, 9, 10, 11 and 12 data-parallel "
                    "ranks) x Gradient accumulation 1; pick one divisible by their product"), page
