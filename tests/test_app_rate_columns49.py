"""Session 49: the page's throughput columns read as the CLI writes the same run.

Llama 3 405B on 64 H200s (tp 8 x pp 8, micro-batch 1) runs at about 0.21 sequences/s
(``predict``: '0.2075'). The Hours & cost tab formatted its samples/s column '%.0f' (the run read
'0'), the Scaling curve's and Layouts' tables '%.1f' ('0.2'). Every throughput column now takes
``table_columns.RATE_FORMAT``, ``figures.throughput``'s four significant digits."""

from __future__ import annotations

import json

import pytest
from app_harness import open_app, preset_query
from cli_harness import run_cli
from scalesim.app.table_columns import RATE_FORMAT

from scalesim.figures import THROUGHPUT_DIGITS, throughput

FIELDS = dict(hw="dgx-h200", wl="llama3-405b", tp=8, pp=8, mb=1, grid="list", dlist="64",
              price=4.0, train=1e6)
UNIT = "sequences of 8192 tokens/s"
BEFORE = {"cost": "%.0f", "curve": "%.1f"}  # the columns' formats before this fix


def _cli_rate(capsys) -> float:
    code, out, err = run_cli(capsys, ["predict", "--hardware", "dgx-h200", "--workload",
                                      "llama3-405b", "--tp", "8", "--pp", "8", "--batch", "1",
                                      "--devices", "64", "--json"])
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["fits"]
    return row["samples_per_s"]


def test_the_rate_format_is_the_cli_throughputs_significant_digits():
    assert RATE_FORMAT == f"%.{THROUGHPUT_DIGITS}g" == "%.4g"
    # Python's %g and Streamlit's (sprintf-js: Number(x.toPrecision(4))) agree from 1e-4 to
    # 1e4: 0.20752645 -> '0.2075' (4 significant digits), where '%.0f' wrote '0'
    assert RATE_FORMAT % 0.20752645 == throughput(0.20752645) == "0.2075"
    assert (BEFORE["cost"] % 0.20752645, BEFORE["curve"] % 0.04) == ("0", "0.0")


@pytest.mark.parametrize("tab", ["curve", "cost", "layouts"])
def test_a_run_below_one_sample_a_second_reads_its_cli_figure_in_every_table(tab, capsys):
    rate = _cli_rate(capsys)
    assert rate < 0.5  # the Cost tab's '%.0f' wrote it '0'
    at = open_app({**preset_query(**FIELDS), "tab": tab})
    tables = [(d.value, json.loads(d.proto.columns)) for d in at.dataframe]
    shown = [(t, c) for t, c in tables if UNIT in t.columns]
    assert shown, [list(t.columns) for t, _ in tables]
    for table, config in shown:
        assert config[UNIT]["type_config"]["format"] == RATE_FORMAT
        if tab != "layouts":  # the Layouts tab ranks other layouts than the sidebar's
            assert rate in list(table[UNIT])
            assert RATE_FORMAT % rate == throughput(rate) != "0"
