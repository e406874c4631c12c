"""Small wording fixes of session 46's CLI audit: a count of one takes the singular noun, and a
malformed JSON file's line says what to do about it."""

import pytest

from scalesim.device_nouns import nouns_for
from scalesim.errors import ScalesimError
from scalesim.jsonio import parse_json_text
from scalesim.plan import nothing_fits_words


def test_nothing_fits_on_one_device_is_singular_and_several_plural():
    nouns = nouns_for("A100")
    one = nothing_fits_words([1], "dp1", 100e9, 80e9, nouns)
    several = nothing_fits_words([1, 2], "dp2", 100e9, 80e9, nouns)
    assert one.startswith("nothing fits on 1 device:"), one
    assert several.startswith("nothing fits on 1,2 devices:"), several


def test_malformed_json_says_where_and_what_to_do():
    with pytest.raises(ScalesimError) as err:
        parse_json_text('{"a": 1,, "b": 2}', "run.json")
    line = str(err.value)
    assert line.startswith("run.json: not valid JSON (line 1, column 9: ")
    assert line.endswith("mend it there, or give the JSON file scalesim wrote")
    with pytest.raises(ScalesimError) as cut:
        parse_json_text('{"a": [1, 2', "cut.json")
    assert "cut short" in str(cut.value) and "mend it there" not in str(cut.value)
