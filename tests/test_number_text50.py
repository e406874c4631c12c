"""Session 50: a number typed as text, as the CLI's flags and the app's share links read it
(``bounds.read_number``, their one reader). Python's int() reads '3_2' as 32 and pydantic the
same, so '--devices 3_2' and a link's 'dmax=3_2' took 32 without a word."""

from __future__ import annotations

import pytest
from cli_harness import refused_line

PRESETS = ["--hardware", "a2-highgpu-8g", "--workload", "bert-large"]


def _link_reads(key: str, value: str):
    """(the control's value, the link's messages but the missing checksum's) of a link giving
    ``key`` the text ``value``."""
    from scalesim.app.state import LINK_VERSION, read_link

    state, _, messages, _ = read_link({"v": str(LINK_VERSION), key: value})
    return getattr(state, key), [m for m in messages if "checksum" not in m]


@pytest.mark.parametrize(("flag", "typed", "digits"), [("--devices", "3_2", "32"),
                                                       ("--global-batch", "1_024", "1024")])
def test_a_flag_with_an_underscore_is_refused_as_no_whole_number(capsys, flag, typed, digits):
    line = refused_line(capsys, ["decide", *PRESETS, flag, typed])
    assert line == (f"scalesim decide: error: argument {flag}: '{typed}' is not a whole number; "
                    f"write it in digits: {digits} (see scalesim decide --help)")


def test_a_float_flag_with_an_underscore_is_refused_as_no_number(capsys):
    line = refused_line(capsys, ["decide", *PRESETS, "--bucket-mib", "1_0.5"])
    assert line == ("scalesim decide: error: argument --bucket-mib: '1_0.5' is not a number; "
                    "write it in digits: 10.5 (see scalesim decide --help)")


def test_a_link_value_with_an_underscore_is_refused_and_the_default_kept():
    assert _link_reads("dmax", "3_2") == (16, ["'dmax=3_2' is not valid (not a whole number; "
                                                "write it in digits: 32); using the default"])
    assert _link_reads("bkt", "1_0.5") == (25.0, ["'bkt=1_0.5' is not valid (not a number; write "
                                                  "it in digits: 10.5); using the default"])
    assert _link_reads("dmax", " 32") == (32, [])  # a number with spaces around: read
    assert _link_reads("cv", "1e-2") == (0.01, [])  # a float in e-notation: read


def test_a_link_whole_number_in_e_notation_says_to_write_it_in_digits_as_the_flag_does(capsys):
    line = refused_line(capsys, ["decide", *PRESETS, "--devices", "1e3"])
    assert "'1e3' is not a whole number; write it in digits: 1000 (see" in line
    assert _link_reads("dmax", "1e3") == (16, ["'dmax=1e3' is not valid (not a whole number; "
                                                "write it in digits: 1000); using the default"])
    # past the largest count plotted (16,384): its bounds, not 1e40's 41 digits to write
    assert _link_reads("dmax", "1e40") == (16, [
        "'dmax=1e40' is not valid (not a whole number; as a number 1e40 is outside 1 <= x <= "
        "16,384 (largest device count)); using the default"])
    assert _link_reads("acc", "") == (1, ["'acc=' is not valid (not a whole number); using the "
                                          "default"])  # no 'leave the flag out': a link's
