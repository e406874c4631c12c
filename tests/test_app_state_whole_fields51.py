"""AppState's number validator reads one table built at import (``state.WHOLE_FIELDS``,
session 51; before, ``whole_field`` worked each field's type out again at every validation):
each number field by its kind, none of text, a choice or on/off; a link's text read as the
CLI reads a flag's ('3_2' is no number, '12.5' no whole one)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from scalesim.app.state import WHOLE_FIELDS, AppState


def test_the_table_holds_each_number_field_by_its_kind():
    assert WHOLE_FIELDS["dmax"] is True and WHOLE_FIELDS["mb"] is True  # int, int | None
    assert WHOLE_FIELDS["bkt"] is False and WHOLE_FIELDS["price"] is False  # float, | None
    assert not {"hw", "tab", "strat", "ovl"} & set(WHOLE_FIELDS)  # text, choices, on/off


@pytest.mark.parametrize("field, text, read", [("dmax", "32", 32), ("bkt", "12.5", 12.5)])
def test_a_number_text_is_read_by_its_fields_kind(field, text, read):
    assert getattr(AppState.model_validate({field: text}), field) == read


@pytest.mark.parametrize("field, text, said", [
    ("dmax", "3_2", "not a whole number; write it in digits: 32"),
    ("bkt", "3_2", "not a number; write it in digits: 32"),
    ("dmax", "12.5", "not a whole number"),
])
def test_a_text_the_cli_refuses_is_refused_in_its_words(field, text, said):
    with pytest.raises(ValidationError, match=said):
        AppState.model_validate({field: text})
