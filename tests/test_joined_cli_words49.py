"""Session 49: ``errors.joined`` kept each part's template but no CLI template, so a CLI that
says a joined refusal again in its words (``in_words_of(..., cli=True)``: main's line for a
``--scenario`` file's settings, ``cli.given_words``) said a part in the page's template."""

from __future__ import annotations

import argparse
import json

from cli_harness import run_cli

from scalesim.cli.given_words import in_given_words
from scalesim.errors import Refusal, ScalesimError, joined
from scalesim.layout import knob_refusal


def test_joined_keeps_each_parts_cli_line():
    """``errors.joined`` kept each part's template but not its CLI line: said again in the
    CLI's words (``in_words_of(..., cli=True)``) a part came out in the page's template."""
    part = knob_refusal("{pp} 3 breaks it", ("pp",), cli="tp x pp = 3 breaks it")
    whole = joined("; ", (part, Refusal("and more")))
    assert str(whole) == "tp x pp = 3 breaks it; and more"
    assert whole.cli_template == "tp x pp = 3 breaks it; and more"  # was '' before session 49
    assert whole.template == "{pp} 3 breaks it; and more"
    assert joined("; ", ("a", "b")).cli_template == ""  # no part has one: none


def test_a_scenario_files_joined_refusal_keeps_the_cli_line(capsys, tmp_path):
    """A list refused by two rules (``count_refusal``: tp x pp = 3 leaves 8 out, the global
    batch 6) is joined of the split's refusal and the other's reason; with pp and the batch
    from a --scenario file, main says the line again in the given words (``in_given_words``).
    Before the fix the joined refusal had no CLI template, so the page's was said: 's.json:
    devices 8 are not divisible by tp 1 x pp 3 = 3; ..., or a split whose product divides 8;
    ...'."""
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"layout": {"pp": 3}, "global_batch": 3}))
    line = ("devices 8 are not divisible by tp x pp = 3; give device counts that are multiples "
            "of it (6 or 24), or a tp x pp that divides 8; at 6 devices, global batch 3 does not "
            "split evenly over dp x accumulation 2")
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--scenario",
                                    str(scenario), "--devices", "6,8"])
    assert (code, err) == (2, f"scalesim predict: error: {line}\n")
    code, _, err = run_cli(capsys, ["predict", "--workload", "llama3-8b", "--pp", "3",
                                    "--global-batch", "3", "--devices", "6,8"])
    assert (code, err) == (2, f"scalesim predict: error: {line}\n")  # by flags: the same
    # the mechanism alone: a joined refusal with a file's setting says the CLI's line
    error = ScalesimError(joined("; ", (knob_refusal("{pp} 3 breaks it", ("pp",),
                                                     cli="tp x pp = 3 breaks it"), "more")))
    args = argparse.Namespace(scenario="s.json", _scenario_settings={"pp": 3})
    assert in_given_words(error, args) == "tp x pp = 3 breaks it; more"
