"""Session 44's walk of the app after the GB200 allocation unit, fp32 main grads and goal's
refinement: an engineer on gb200-nvl72 with llama3-70b at 128-512 GPUs, a manager's share links,
and bad values typed in the sidebar. What the walk found wrong, pinned here
(docs/reliability.md, Session 44)."""

from __future__ import annotations

import json

import pytest
from app_harness import open_app, run_clean

from scalesim.cli.main import main
from scalesim.decision import ASSUMPTIONS, CPU_ASSUMPTIONS

# decide at 512 GB200 GPUs, llama3-70b tp 4 x pp 4, ZeRO-1, micro-batch 1, 1e8 samples at $10 a
# GPU-hour, critical batch 1,024: the card recommends running on 6 racks of 72 (432 GPUs)
GB200_70B = ["decide", "--hardware", "gb200-nvl72", "--workload", "llama3-70b", "--devices",
             "512", "--tp", "4", "--pp", "4", "--batch", "1", "--strategy", "zero1",
             "--train-samples", "1e8", "--price", "10", "--critical-batch", "1024"]


def test_fewer_servers_on_several_racks_does_not_say_one_server(capsys):
    """The fewer-servers option on 6 racks was assumed 'on one server, no inter-server link';
    its 6 racks exchange over that link. One server kept keeps those words
    (test_fewer_servers)."""
    assert main([*GB200_70B, "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    (fewer,) = [o for o in card["options"] if o["key"] == "fewer_servers"]
    assert fewer["title"].startswith("Run on 6 racks (512 -> 432 devices)")  # servers before 52
    assert fewer["assumption"].startswith(
        ASSUMPTIONS["fewer_servers_several"].replace("inter-server", "inter-rack"))
    assert card["recommendation"].startswith("Run on 6 racks")
    assert "on one server" not in card["assumption"] and "on one rack" not in card["assumption"]
    assert "the inter-rack link among them" in card["assumption"]
    assert "on one server" in ASSUMPTIONS["fewer_servers"]  # the one-server words unchanged
    assert "one host" not in CPU_ASSUMPTIONS["fewer_servers_several"]


# the engineer's page: 128 and 256 GB200 GPUs, llama3-70b tp 4 x pp 4, ZeRO-1, micro-batch 1
GB200_LINK = {"v": "18", "hw": "gb200-nvl72", "wl": "llama3-70b", "grid": "list",
              "dlist": "128,256", "tp": "4", "pp": "4", "mb": "1", "strat": "zero1"}


@pytest.mark.parametrize("key, value, named, back", [
    # the line names its control itself in the app's words (session 47: the sequence note
    # through the knob table), so no 'Control to change' repeats it (controls_to_change)
    ("k_seq", 2**30, "scenario: Sequence length 1,073,741,824: the model cannot", 8192),
    # tp 1024 > 72 GPUs per server: a rule of both (test_a_tp_past_a_server_names_both_...);
    # the line names Tensor parallel itself (session 48)
    ("k_tp", 1024, " Control to change: Devices per rack. Below: the last", 4),  # its label
    # the split's line names Tensor parallel and Pipeline stages itself (session 49; before,
    # 'tp x pp' and all three controls listed after it)
    ("k_pp", 100_000, "not divisible by Tensor parallel 4 x Pipeline stages 100000 = 400,000; "
     "give device counts that are multiples of it (400,000), or a split whose product divides "
     "128. Control to change: Device counts. Below:", 4),
])
def test_a_typed_value_the_model_refuses_names_its_controls_and_the_page_keeps_working(
        key, value, named, back):
    """A value within a control's bounds that the model cannot predict (the largest sequence
    length, tp or pp a number input takes): the page's 'Cannot predict this scenario' box fell
    back to the last what-if naming no control ('--seq-len 1,073,741,824: ...' the CLI's flag
    alone); it names them as the Goal and Layouts tabs' refusals do (controls_to_change), and
    the page shows the last good what-if, then this one again once the value is set back
    (``back``: the sequence length typed as the model's own, 8,192)."""
    at = open_app(GB200_LINK)
    before = [m.value for m in at.metric]
    at.sidebar.number_input(key=key).set_value(value)
    run_clean(at)
    (box,) = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert named in box, box
    assert box.count("Sequence length") == 1 or key != "k_seq", box  # said once
    assert [m.value for m in at.metric] == before  # the last good what-if, shown
    at.sidebar.number_input(key=key).set_value(back)
    run_clean(at)
    assert not [e for e in at.error if e.value.startswith("Cannot predict")]
    assert [m.value for m in at.metric] == before


@pytest.mark.parametrize("key, field, value, link", [
    ("k_seq", "seq", 4096, {}), ("k_slow", "slow", 100, {"sf": "2"}),
    ("k_cbs", "cbs", 2048.0, {}), ("k_dl", "dl", 240.0, {}),
    ("k_ebw", "ebw", 50.0, {"inter": "custom", "ebw": "400"})])
def test_an_input_whose_label_says_empty_can_be_emptied_again(key, field, value, link):
    """'Sequence length (...; empty: the model's own)', 'Slow GPU rank (empty: none)', the
    critical batch, the deadline: once a number was typed, emptying the input gave its smallest
    value (Streamlit's default 'min' keeps an input clearable only while it starts empty):
    sequence length 1 token (29.5 % efficiency at 256 GPUs for 21.7 %), rank 0 slowed, a
    deadline of one second. Emptied now, the field is None and the page is the link's again."""
    at = open_app({**GB200_LINK, **link})
    start = at.session_state["app_state"]
    before = [m.value for m in at.metric]
    at.sidebar.number_input(key=key).set_value(value)
    run_clean(at)
    assert getattr(at.session_state["app_state"], field) == value
    at.sidebar.number_input(key=key).set_value(None)
    run_clean(at)
    assert getattr(at.session_state["app_state"], field) is None
    assert at.session_state["app_state"] == start.model_copy(update={field: None})
    if getattr(start, field) is None:
        assert [m.value for m in at.metric] == before


@pytest.mark.parametrize("typed, why", [
    ("abc", "'abc' is not a whole number"),
    ("0", "0 is outside 1 \\<= x \\<= 1,048,576 devices"),
    ("1e3", "'1e3' is not a whole number; write it in digits: 1000"),
    ("72-1", "range '72-1' must start at 1 or more and end at or above its start")])
def test_a_device_list_that_does_not_parse_is_an_error_named_as_the_sidebar_labels_it(typed, why):
    """A typed device list the planner cannot read was a blue info box among the notes, calling
    the control 'device list' beside a sidebar that labels it 'Device counts (e.g. ...)': now an
    error box (as a refused typed value), named as its label starts; the page goes on with powers
    of two and the report keeps the line (``Plan.refusals``)."""
    at = open_app({"v": "18", "grid": "list", "dlist": "8,16"})
    at.sidebar.text_input(key="k_dlist").set_value(typed)
    run_clean(at)
    (box,) = [e.value for e in at.error]
    assert box.startswith(f"Device counts: {why}") and box.endswith("; showing powers of two")
    assert at.sidebar.text_input(key="k_dlist").label.startswith(box.split(":")[0])
    assert not [i.value for i in at.info if "Device counts" in i.value or "device list" in i.value]
    from scalesim.app.plan import make_plan
    from scalesim.app.report import report_html

    plan = make_plan(at.session_state["profile"], at.session_state["app_state"])
    assert [r.devices for r in plan.rows] == [1, 2, 4, 8, 16]
    assert plan.refusals == [box.replace("\\", "")]
    assert "Device counts: " in report_html(plan, "http://x")


def test_every_sidebar_control_is_named_in_messages_as_its_label_starts():
    """'Controls to change: Device list' and the bandwidths', latencies', slow factor's and focus's
    names were other words than their sidebar labels: each control a message names
    (``FIELD_LABELS``) is now named as the label the sidebar shows starts (one table,
    ``control_labels.CONTROLS``)."""
    from scalesim.app.control_labels import in_words
    from scalesim.app.state import FIELD_LABELS

    from scalesim.device_nouns import GPU_NOUNS

    at = open_app({"v": "18", "grid": "list", "dlist": "8,16", "strat": "zero3",
                   "inter": "custom", "intra": "custom", "slow": "1"})
    drawn = [w for kind in ("number_input", "text_input", "selectbox", "radio", "select_slider",
                            "checkbox", "toggle")
             for w in getattr(at.sidebar, kind) if (w.key or "")[2:] in FIELD_LABELS]
    assert len(drawn) >= 30
    wrong = [(w.key, w.label) for w in drawn
             if not w.label.startswith(in_words(FIELD_LABELS[w.key[2:]], GPU_NOUNS))]
    assert wrong == []


def test_a_tp_past_a_server_names_both_its_controls():
    """With Devices per server 1 and tp 4 the box named only "Tensor parallel": the rule
    'tp <= devices per server' is of both values (``layout.tp_above_server``'s knobs, the one
    refusal predict, counts_that_run and layout_problems raise)."""
    at = open_app({"v": "18", "wl": "llama3-8b", "grid": "list", "dlist": "8,16"})
    at.sidebar.number_input(key="k_dpn").set_value(1)
    run_clean(at)
    at.sidebar.number_input(key="k_tp").set_value(4)
    run_clean(at)
    (box,) = [e.value for e in at.error if e.value.startswith("Cannot predict")]
    assert "Tensor parallel 4 \\> 1 GPUs per server" in box  # the line names it (session 48)
    assert " Control to change: Devices per server. Below:" in box, box
