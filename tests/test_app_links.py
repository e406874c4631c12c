"""Links a manager can open: the public address, a short v2 link, the receiver's banner."""

from __future__ import annotations

from app_harness import open_app


def test_the_share_link_uses_the_public_url_and_warns_on_localhost(monkeypatch):
    monkeypatch.setenv("SCALESIM_PUBLIC_URL", "https://planner.example.com/")
    at = open_app({"v": "2", "strat": "zero3"})
    link = at.code[0].value
    assert link.startswith("https://planner.example.com/?v=2&")
    assert "strat=zero3" in link and len(link) < 300
    assert not any("localhost" in c.value for c in at.caption)
    monkeypatch.setenv("SCALESIM_PUBLIC_URL", "http://localhost:8501/")
    at = open_app()
    assert any("opens only here" in c.value for c in at.caption)


def test_the_receiver_sees_a_banner_and_can_compare_with_their_settings():
    at = open_app({"v": "2", "strat": "zero3", "at": "2026-11-30"})
    banner = at.info[0].value
    assert banner.startswith("Shared what-if from 2026-11-30, ")
    at.toggle(key="compare_shared").set_value(True)
    at.sidebar.selectbox(key="k_strat").set_value("ddp")
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["what-if"]) == ["shared", "mine"]
    throughput = table.columns[2]
    assert table.iloc[0][throughput] != table.iloc[1][throughput]  # zero3 vs ddp


def test_a_link_without_a_date_has_no_banner_and_a_bad_date_is_ignored():
    assert not any("Shared what-if" in i.value for i in open_app({"v": "2"}).info)
    assert not any("Shared what-if" in i.value for i in open_app({"v": "2", "at": "<b>"}).info)


def test_a_link_the_model_cannot_predict_keeps_the_page_working():
    """llama3-8b with tp 3 (no plotted count is a multiple of 3): one error box saying why and
    how to fix it, and the page below it (decision, headline, tabs) for the link's other
    controls without the split; before, the page stopped at the error."""
    at = open_app({"v": "9", "wl": "llama3-8b", "tp": "3", "dmax": "64"})
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    # predict's line (session 44: the app's own 'no device count is a multiple of tp 3 x pp 1';
    # session 48: tp 3 divides no server of 8, refused before any count's rule, in the page's
    # label: 'tp 3 does not divide ...; use tp 1, 2, 4 or 8' before session 48's 341c488)
    assert len(errors) == 1 and ("Tensor parallel 3 does not divide the 8 GPUs per server; use "
                                 "Tensor parallel 1, 2, 4 or 8, or 6 GPUs per server") in errors[0]
    assert "with Tensor parallel at its default" in errors[0]
    assert at.subheader and len(at.metric) == 4 and len(at.tabs) == 8
    assert any(c.value.startswith("Chart in words: No device count runs.")  # none fits unsplit
               and " and 64 (7 in all) devices, so the chart has no point there." in c.value
               for c in at.caption)  # the link's 64 devices kept
    assert at.query_params["tp"] in ("3", ["3"])  # the link still says what was asked


def test_a_control_the_model_cannot_predict_keeps_the_last_good_what_if():
    at = open_app({"v": "9", "wl": "llama3-8b", "tp": "2", "dmax": "64"})
    before = [(m.label, m.value) for m in at.metric]
    at.sidebar.number_input(key="k_tp").set_value(3)
    at.run()
    assert not at.exception
    assert any("the last what-if that could be predicted" in e.value for e in at.error)
    assert [(m.label, m.value) for m in at.metric] == before


def test_a_links_problems_are_one_box_with_the_fix():
    at = open_app({"v": "9", "dmax": "99999", "mb": "abc"})
    assert len(at.warning) == 1
    text = at.warning[0].value
    assert text.startswith("Share link: 2 problems: (1) 'dmax=99999'") and "(2) 'mb=abc'" in text
    assert "set the controls in the sidebar" in text


def test_a_focus_the_link_cannot_plot_is_said_not_dropped_silently():
    at = open_app({"v": "9", "focus": "12"})
    assert at.session_state["app_state"].focus is None
    assert "'focus=12' is not one of the device counts plotted (1, 2, 4, 8 and 16)" in (
        at.warning[0].value)


def test_a_focus_the_controls_stop_plotting_is_said_in_the_sidebar():
    at = open_app({"v": "9", "focus": "8"})
    at.sidebar.select_slider(key="k_dmax").set_value(4)
    at.run()
    assert not at.exception
    assert at.session_state["app_state"].focus is None
    assert any(i.value.startswith("Device count 8 is no longer plotted") for i in at.sidebar.info)


def test_a_link_from_a_newer_version_says_what_to_do_once():
    """A newer link's box (v14 when written) said `... (ask the sender for a link from this
    version). To fix it: ... or ask the sender for a new link.`: the same advice twice."""
    at = open_app({"v": "19", "mb": "64"})
    assert len(at.warning) == 1
    text = at.warning[0].value
    assert text == ("Share link: this link is in format v19, made by a newer scalesim; this "
                    "scalesim reads v1 to v18 links, so it shows the defaults. To fix it: set the "
                    "controls in the sidebar (the link follows them), or ask the sender for a new "
                    "link.")
    assert text.count("ask the sender") == 1 and text.count("fix") == 1


def test_an_empty_device_list_on_the_my_list_grid_is_said_on_the_page():
    at = open_app({"v": "9", "grid": "list"})
    assert not at.exception
    assert any(i.value.startswith("Device counts is empty; showing powers of two up to 16")
               for i in at.info)


def test_comparing_with_a_shared_link_that_cannot_run_says_so():
    """Session 31 audit: the toggle re-planned the shared what-if (tp 3 on llama3-8b) outside
    any try and the page stopped on a ScalesimError."""
    at = open_app({"v": "12", "wl": "llama3-8b", "tp": "3", "at": "2025-01-01"})
    at.toggle(key="compare_shared").set_value(True)
    at.run()
    assert not at.exception
    assert any(w.value.startswith("The shared what-if cannot be predicted") for w in at.warning)


def test_links_the_planner_refuses_fast_keep_the_page():
    """A link of 1024 NICs x 10 Tbit/s (each in bounds, the product past 100 TB/s) raised a
    pydantic traceback; pp 4 x 100,000 virtual stages hung in the stage words (square in
    pp x v) before the layout's check refused it."""
    for query, says in (
        ({"v": "12", "inter": "roce", "nics": "1024", "gbit": "10000"},
         "1024 NICs x 10000 Gbit/s gives a bus bandwidth"),
        ({"v": "12", "wl": "llama3-70b", "pp": "4", "sched": "interleaved", "vs": "100000",
          "dmax": "64"}, "Cannot predict this scenario"),
    ):
        at = open_app(query)
        assert not at.exception
        assert any(says in e.value for e in at.error), [e.value for e in at.error]


def test_a_focus_the_plan_left_out_says_which_count_is_shown():
    """focus=1 with tp 2 (1 device is no multiple of 2): the page showed 16 devices without a
    word while the link said focus=1 (session 31 audit)."""
    at = open_app({"v": "12", "hw": "dgx-h100", "wl": "llama3-8b", "tp": "2", "mb": "1",
                   "focus": "1"})
    assert not at.exception
    # a sentence, as the page's other notes (was 'focus 1 ...', no full stop, before session 49)
    assert any(i.value.startswith("Focus 1 device is not among the counts predicted")
               and i.value.endswith("showing 16 devices.") for i in at.info)


def test_an_old_link_with_a_later_scenario_b_is_said_and_ignored():
    """`?v=2&b=fp8` was read as v12's fp8 scenario B in silence (session 31 audit), while other
    later values (rs=op-sac before v8) were ignored with a message."""
    from scalesim.app.state import decode_query

    state, _, messages = decode_query({"v": "2", "b": "fp8", "hw": "dgx-h100",
                                       "wl": "llama3-8b"})
    assert state.b == "best"
    assert messages == ["ignored b=fp8: a v2 link has no such scenario B (it opens with the "
                        "best remedy)"]
    state, _, messages = decode_query({"v": "7", "b": "attention_kernel"})
    assert state.b == "attention_kernel" and messages == []


def test_the_fallback_box_names_the_layout_control_it_dropped_not_a_split_never_made():
    """ZeRO-3 with shard group 3 on the list 4, 8, 16 (3 divides no dp: on powers of two 1 and
    2 run, within the group, since session 43): the page below the error box is the what-if with
    the shard group at its default. Before, the box said 'this what-if without its model split
    (tp 1, pp 1)' of a what-if that had no split (tp 1, pp 1 already); it names the control it
    set back, and the split where there was one."""
    at = open_app({"v": "9", "hw": "dgx-h100", "wl": "gpt-7.5b", "strat": "zero3", "sg": "3",
                   "grid": "list", "dlist": "4,8,16"})
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    # the page's control and the ranks in words (session 49; was 'shard group 3 does not
    # divide dp 4, 8 or 16', notation no control of the page shows)
    assert len(errors) == 1 and ("Shard group (HSDP) 3 does not divide the 4, 8 or 16 "
                                 "data-parallel ranks") in errors[0]
    assert "model split" not in errors[0]
    assert "Below: this what-if with Shard group (HSDP) at its default until" in errors[0]
    assert len(at.metric) == 4
    both = open_app({"v": "9", "wl": "llama3-8b", "tp": "3", "sg": "3", "dmax": "64"})
    errors = [e.value for e in both.error if e.value.startswith("Cannot predict")]
    # the error names tp alone: the shard group is kept (and said to be ignored under ddp)
    assert "Below: this what-if with Tensor parallel at its default until" in errors[0]
    assert any(i.value.startswith("Shard group (HSDP) ignored") for i in both.info)


def test_a_fixed_global_batch_no_count_splits_is_an_error_box_not_weak_scaling_in_silence():
    """Global batch 24 on 16 devices (predict refuses it). Before, the page showed weak scaling
    at the profile's per-device batch of 32 (global batch 512) under a blue note among the
    notes, while its decision card, headline and link spoke of the fixed batch; now one error
    box says why and what is shown below it, as a model split that no count takes: the link
    with the control the error names, the global batch, at its default (session 42; it was
    weak scaling at the per-device batch, which dropped the fixed batch as well)."""
    at = open_app({"v": "2", "grid": "list", "dlist": "16", "mode": "strong", "gb": "24"})
    errors = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    # the page's controls by their labels (session 49; was '... over 16 devices x 1
    # accumulation')
    assert len(errors) == 1 and ("Global batch 24 does not split evenly over 16 devices x "
                                 "Gradient accumulation 1") in errors[0]
    assert "Below: this what-if with Global batch at its default until" in errors[0]
    assert not any("weak scaling instead" in i.value for i in at.info)
    assert len(at.metric) == 4 and at.query_params["gb"] in ("24", ["24"])
