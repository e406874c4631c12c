"""A refusal of a scenario or layout value names the knobs it is about in a field of its own
(``ScalesimError.knobs``, session 43), set where the check raises, so the app's fallback sets
back those controls without reading the message. The message, its pickling and the CLI's line
stay as they were."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

from scalesim.bounds import REFUSABLE, validation_knobs
from scalesim.errors import Refusal, ScalesimError, knobs_of
from scalesim.layout import ParallelLayout, layout_problems
from scalesim.schemas import Scenario, ScenarioLayout

ROOT = Path(__file__).resolve().parents[1]


def test_the_message_is_the_line_alone_and_pickles_with_its_knobs():
    exc = ScalesimError("tp 16 > 8 GPUs per server; use tp <= 8", knobs=("tp",))
    assert str(exc) == "tp 16 > 8 GPUs per server; use tp <= 8"
    assert exc.args == ("tp 16 > 8 GPUs per server; use tp <= 8",)
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), str(back), back.args, back.knobs) == (
        ScalesimError, str(exc), exc.args, ("tp",))


def test_an_error_without_knobs_pickles_as_before():
    """No instance state where no knob is named: the reduction is (class, args), as a plain
    ValueError's, so an error pickled by an older scalesim reads the same."""
    exc = ScalesimError("unknown hardware 'x'")
    assert exc.__reduce__() == (ScalesimError, ("unknown hardware 'x'",))
    assert exc.knobs == () and pickle.loads(pickle.dumps(exc)).knobs == ()


def test_a_refusal_is_a_plain_line_in_the_error_and_gives_it_its_knobs():
    rule = Refusal("shard group 3 does not divide dp 4", ("shard_group",))
    exc = ScalesimError(rule)
    assert type(exc.args[0]) is str and str(exc) == rule
    assert exc.knobs == ("shard_group",)
    assert ScalesimError(rule, knobs=("tp",)).knobs == ("tp",)  # given knobs win
    assert knobs_of("a plain line") == () and knobs_of(ValueError("x")) == ()


@pytest.mark.parametrize("layout, knobs", [
    # a rule of both, and of the hardware where another preset's server holds tp (session 46)
    (ParallelLayout(tp=16, global_batch=8), ("tp", "devices_per_node", "hardware")),
    (ParallelLayout(tp=3, global_batch=8), ("tp", "devices_per_node")),  # tp 3 divides no 8
    (ParallelLayout(dp=4, zero=3, shard_group=3, global_batch=8), ("shard_group",)),
    (ParallelLayout(pp=2, schedule="interleaved", global_batch=2), ("schedule", "virtual_stages")),
    (ParallelLayout(pp=4, schedule="interleaved", virtual_stages=2, global_batch=2),
     # 2 micro-batches, pp 4: no virtual stages fix it (session 48)
     ("accumulation", "pp", "schedule")),
    # 32 layers: pp 64's fix is 'use pp <= 32' alone (session 46: virtual stages 1 not named),
    # pp 16 x virtual stages 4's 'use pp <= 8 or virtual_stages <= 2'
    (ParallelLayout(pp=64, schedule="1f1b", global_batch=64), ("pp",)),
    (ParallelLayout(pp=16, schedule="interleaved", virtual_stages=4, global_batch=16),
     ("pp", "virtual_stages")),
    (ParallelLayout(cp=2, global_batch=1), ("cp", "seq_len")),
    (ParallelLayout(dp=3, global_batch=4), ("global_batch", "micro_batch")),
])
def test_each_layout_rule_names_the_knobs_its_fix_changes(layout, knobs):
    problems = layout_problems(layout, 8, layers=32, heads=32, kv_heads=8, seq_len=1001)
    assert problems and knobs_of(problems[0]) == knobs, problems


def test_a_validator_refusal_reaches_the_validation_error_with_its_knobs():
    with pytest.raises(ValidationError) as caught:
        Scenario(strategy="zero3", zero_framework="deepspeed", layout=ScenarioLayout(pp=2))
    assert validation_knobs(caught.value.errors()) == ("strategy", "pp", "zero_framework")
    with pytest.raises(ValidationError) as caught:  # a field out of bounds: its location
        Scenario(layout=ScenarioLayout(tp=0))
    assert validation_knobs(caught.value.errors()) == ("tp",)


def _knob_literals(tree: ast.AST):
    """Every name a source gives as knobs: ``knobs=(...)`` and ``Refusal(text, (...))``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        given = [k.value for k in node.keywords if k.arg == "knobs"]
        if isinstance(node.func, ast.Name) and node.func.id == "Refusal" and len(node.args) > 1:
            given.append(node.args[1])
        for value in given:
            for elt in ast.walk(value):
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    yield node.lineno, elt.value


def test_every_knob_a_refusal_names_is_in_the_knob_table():
    """A misspelt knob would name no control and the page would fall back wider in silence."""
    files = [*sorted((ROOT / "scalesim").rglob("*.py")), *sorted((ROOT / "app").glob("*.py"))]
    found = [(f.name, line, name) for f in files if "knobs" in (text := f.read_text())
             for line, name in _knob_literals(ast.parse(text))]
    assert len(found) >= 30, found  # the checks of layout, predict, the app and the validators
    assert [x for x in found if x[2] not in REFUSABLE] == []


def test_the_controls_a_line_names_travel_with_its_refusal_rewording_and_pickle():
    """Session 44: ``controls_named`` says which knobs' controls the line names in its caller's
    words (the app's ``controls_to_change`` then names only the others, without reading the
    text); a Refusal gives it to its error, ``reworded`` and pickling keep it."""
    rule = Refusal("raise Largest device count", ("devices", "global_batch"), ("devices",))
    exc = ScalesimError(rule)
    assert (exc.knobs, exc.controls_named) == (("devices", "global_batch"), ("devices",))
    back = pickle.loads(pickle.dumps(exc.reworded("plan: " + str(exc))))
    assert (str(back), back.knobs, back.controls_named) == (
        "plan: raise Largest device count", ("devices", "global_batch"), ("devices",))
    assert ScalesimError("x", knobs=("tp",)).controls_named == ()
