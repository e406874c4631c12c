"""sweep's dropped note writes each reason's count as its head count: with thousands separators."""

from scalesim.cli.cmd_sweep import _dropped_reasons


def test_each_reasons_count_has_the_heads_separators():
    said = str(_dropped_reasons(131_072 + 2_000, 131_072))
    assert said.startswith("131,072 break a layout rule")
    assert "; 2,000 do not split the global batch" in said
