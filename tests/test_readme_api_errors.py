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
