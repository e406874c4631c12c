"""Session 49 (follow-up): the Layout expander's caption explains the split in the page's own
labels, not in notation no control shows ('devices = dp x tp x pp; ZeRO over dp is the strategy
above' before session 49: the page has no dp, tp or pp control, and said nothing of cp)."""

from __future__ import annotations

from app_harness import open_app


def test_the_layout_caption_names_the_pages_controls():
    """llama3-8b on a DGX H100 (a transformer workload: the split's caption, not the
    parameter-count one); the caption names the Tensor parallel, Pipeline stages,
    Context-parallel degree, Strategy and Micro-batch controls by their labels."""
    at = open_app({"v": "2", "hw": "dgx-h100", "wl": "llama3-8b", "dmax": "8"})
    caption = next(c.value for c in at.caption if "32 layers, hidden 4096" in c.value)
    assert ("The devices are the data-parallel ranks x Tensor parallel x Pipeline stages x "
            "Context-parallel degree (below); the Strategy above shards over the data-parallel "
            "ranks, and the Micro-batch is per model replica.") in caption, caption
    assert "dp x tp" not in caption and "ZeRO over dp" not in caption, caption
    # each control the caption names is on the page, by that label
    labels = [w.label for kind in (at.number_input, at.selectbox) for w in kind]
    for name in ("Tensor parallel", "Pipeline stages", "Context-parallel degree", "Strategy",
                 "Micro-batch"):
        assert any(label.startswith(name) for label in labels), (name, labels)
