"""Session 48: a tp past a server, or one that does not divide it, is said in the page's words.

The app's 'Cannot predict' box read 'tp 1024 > 8 GPUs per server ...; use tp <= 8, or ... a
hardware file with devices_per_node a multiple of 1024': 'tp' is no control of the page (its
label is 'Tensor parallel') and the page takes no hardware file (it takes a calibration
profile, whose hardware it predicts on). ``layout.tp_above_server`` and
``layout.tp_not_dividing_server`` are templates (``layout.knob_refusal``): the page says its
label and its own way out; the CLI keeps its line, byte for byte (its ``cli``)."""

from __future__ import annotations

import re

import pytest
from app_harness import cannot_predict_box, open_app, preset_query
from cli_harness import run_cli

from scalesim.layout import tp_above_server, tp_not_dividing_server


@pytest.mark.parametrize("fields, said", [
    ({"hw": "dgx-h100", "wl": "llama3-8b", "tp": 1024}, "Tensor parallel 1024 \\> 8 GPUs"),
    ({"hw": "dgx-h100", "wl": "llama3-8b", "tp": 146}, "Tensor parallel 146 \\> 8 GPUs"),
    ({"hw": "dgx-h100", "wl": "llama3-8b", "tp": 16}, "Tensor parallel 16 \\> 8 GPUs"),
    ({"hw": "dgx-h100", "wl": "llama3-8b", "dpn": 4, "tp": 8}, "Tensor parallel 8 \\> 4 GPUs"),
    ({"hw": "gb200-nvl72", "wl": "llama3-8b", "tp": 16},
     "Tensor parallel 16 does not divide the 72 GPUs"),
    ({"hw": "dgx-h100", "wl": "llama3-8b", "dpn": 6, "tp": 4},
     "Tensor parallel 4 does not divide the 6 GPUs"),
], ids=["tp 1024", "tp 146", "tp 16 (a preset holds it)", "more of the server",
        "not dividing an NVL72 rack", "not dividing 6 a server"])
def test_a_tp_the_server_cannot_hold_is_said_in_the_pages_words(fields, said):
    box = cannot_predict_box(open_app(preset_query(**fields)))
    assert said in box, box
    plain = box.replace("\\", "")  # markdown's escapes ('devices\\_per\\_node')
    assert re.search(r"\btp\b", plain) is None, box  # no abbreviation of the control's label
    assert re.findall(r"\b[a-z]+_[a-z_]+\b", plain) == [], box  # no field of a file
    assert "hardware file" not in box, box
    if "\\>" in said and fields["tp"] > 8:  # past every server of the hardware: its own way
        assert (f"an uploaded calibration profile whose servers hold a multiple of "
                f"{fields['tp']} GPUs") in box, box
    # the line names Tensor parallel itself: not listed again below it
    # the sidebar's label: a GB200 NVL72's server is its rack (session 52)
    per = "Devices per rack" if fields["hw"] == "gb200-nvl72" else "Devices per server"
    assert f"Control to change: {per}" in box or \
        f"Controls to change: {per}, Hardware preset." in box, box


def test_the_cli_keeps_its_lines_of_a_tp_the_server_cannot_hold(capsys):
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--devices", "1024",
                                    "--tp", "1024"])
    assert code == 2 and err == (
        "scalesim predict: error: tp 1024 > 8 GPUs per server (tensor parallelism stays inside "
        "one server); use tp <= 8, or hardware whose server (one NVLink domain) holds 1024 GPUs: "
        "a hardware file with devices_per_node a multiple of 1024\n")
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--devices", "24",
                                    "--tp", "3"])
    assert code == 2 and err == (
        "scalesim predict: error: tp 3 does not divide the 8 GPUs per server; use tp 1, 2, 4 "
        "or 8, or 6 GPUs per server\n")  # refused at every count, before any count's layout
    # the library's line is the CLI's; the template the page's
    assert str(tp_above_server(16, 8)).endswith("a hardware file with devices_per_node a "
                                                "multiple of 16")
    assert tp_not_dividing_server(16, 72).template.startswith("{tp} 16 does not divide")


def test_a_count_past_whole_allocation_units_names_no_hardware_field_on_the_page(capsys):
    """gb200-nvl72 hands out trays of 4 GPUs: a list's 6 is left out in predict's words, which
    named the hardware file's devices_per_allocation on the page, which takes no hardware file;
    the CLI keeps it."""
    at = open_app(preset_query(hw="gb200-nvl72", wl="llama3-8b", grid="list", dlist="6,8"))
    # a sentence, as the page's other notes (was 'left out 6: ...' before session 49)
    (note,) = [i.value for i in at.info if i.value.startswith("Left out 6: ")]
    assert "do not fill whole allocation units of 4 GPUs (the tray or node a scheduler hands " \
           "out, 72 to a rack); give a multiple of 4, e.g. 4 or 8" in note, note
    assert "devices" + "\\_per" not in note and "_per_" not in note, note
    code, _, err = run_cli(capsys, ["predict", "--hardware", "gb200-nvl72", "--workload",
                                    "llama3-8b", "--devices", "6"])
    assert code == 2 and err == (
        "scalesim predict: error: 6 devices do not fill whole allocation units of 4 GPUs (the "
        "hardware's devices_per_allocation: the tray or node a scheduler hands out, 72 to a "
        "rack); give a multiple of 4, e.g. 4 or 8\n")
