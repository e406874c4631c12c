"""Session 41: README said bad input makes "the Python API raise `scalesim.ScalesimError`, a
`ValueError`", but a schema field out of its bounds (`Scenario(micro_batch=-1)`) raises pydantic's
`ValidationError`, no ScalesimError: `except scalesim.ScalesimError` missed it. The README now
names both; both are ValueErrors, so `except ValueError` catches every refusal."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

import scalesim
from scalesim.predict import predict
from scalesim.profiles import default_profile
from scalesim.schemas import Scenario

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_a_field_out_of_bounds_raises_validation_error_a_value_error_as_readme_says():
    with pytest.raises(pydantic.ValidationError) as field:
        Scenario(devices=[8], micro_batch=-1)
    assert isinstance(field.value, ValueError)
    assert not isinstance(field.value, scalesim.ScalesimError)
    assert ("`Scenario(micro_batch=-1)`, raises pydantic's `ValidationError`, also a "
            "`ValueError`" in " ".join(README.split()))


def test_a_scenario_the_model_refuses_raises_scalesim_error():
    """12 devices on 8-GPU servers: a valid field, refused by predict in its own words."""
    with pytest.raises(scalesim.ScalesimError, match="do not fill whole servers of 8"):
        predict(default_profile(), Scenario(devices=[12]))


def test_readme_knobs_example_is_the_refusals():
    """Session 51: README gave ``("tp",)`` as the knobs of ``tp 16 > 8 GPUs per server``, the
    tuple before session 44 added the server's size and the presets that hold tp (the refusal's
    other ways out); the README's tuple and words are now the refusal's own."""
    import ast
    import re

    from scalesim.profiles import resolve_profile
    from scalesim.schemas import ScenarioLayout

    said = re.search(r"\(`(\(.*?\))` for `(tp 16 > 8 GPUs per server)`", " ".join(README.split()))
    assert said, "README no longer quotes the knobs example: update this test"
    profile = resolve_profile(None, "dgx-a100", "gpt-7.5b")
    with pytest.raises(scalesim.ScalesimError) as refused:
        predict(profile, Scenario(devices=[16], micro_batch=1, layout=ScenarioLayout(tp=16)))
    assert str(refused.value).startswith(said.group(2))
    assert refused.value.knobs == ast.literal_eval(said.group(1))
