"""One house style for a throughput in the CLI's text (session 42): ``figures.throughput``,
four significant digits, thousands separated, the unit in the column's header. Before, plan
wrote '5.406e+05' tokens/s, predict '12613874.2' sequences/s, decide '17.11 sequences of 8192
tokens/s' beside amount's '1,234'; a sentence's figure (``figures.rate``) now writes the same
digits beside the unit."""

from __future__ import annotations

import json
import re

import pytest
from cli_harness import run_cli

from scalesim.figures import speedup, throughput


@pytest.mark.parametrize("value, text", [
    (519.1234, "519.1"), (17.114, "17.11"), (4016.2, "4,016"), (140900.3, "140,900"),
    (12613874.2, "12,610,000"), (0.51912, "0.5191"), (999.96, "1,000"), (0.0, "0"),
    (float("nan"), "n/a"),
])
def test_throughput_is_four_significant_digits_thousands_separated(value, text):
    assert throughput(value) == text


def _table(out: str, head: str) -> list[str]:
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(head))
    return lines[i:lines.index("", i)]


def test_predict_column_holds_from_one_to_100000_devices(capsys):
    """The default profile at 1, 8 and 100,000 devices; the last row reads 12,610,000: DDP's
    bucket copies (session 56, docs/model.md §4), 336e6 x 8 B / 1,555 GB/s = 1.73 ms of compute
    (61.65 -> 63.37 ms), make the step 253.70 ms, 3.2e6 / 0.25370 s = 12,613,443. It read
    12,700,000 in sessions 48-55 and 12,610,000 before: session 48's straggler stretch,
    docs/model.md §3, hides the exchange behind the last device's backward, s = 1 + 3.193 ms /
    55.17 ms = 1.0579, so of T_b = 36.78 ms the exchange's tail (after the first two buckets,
    27.26 of 672 MB) hides (s - 1) T_b (1 - 27.26/672) x (1 - contention 0.159) = 1.717 ms more:
    a 253.69 ms step 251.97 ms, 3.2e6 / 0.25197 s."""
    code, out, err = run_cli(capsys, ["predict", "--devices", "1,8,100000", "--json"])
    rows = json.loads(out)
    assert code == 0 and isinstance(rows[-1]["samples_per_s"], float)  # JSON stays raw
    code, out, err = run_cli(capsys, ["predict", "--devices", "1,8,100000"])
    table = _table(out, "devices nodes")
    end = table[0].index("sequences/s") + len("sequences/s")
    assert len({len(line) for line in table}) == 1  # every row as wide as the header
    cells = [line[:end].split()[-1] for line in table[1:]]
    assert cells == [throughput(r["samples_per_s"]) for r in rows]
    assert cells[-1] == "12,610,000" and all("e" not in c for c in cells)


def test_plan_writes_tokens_per_s_without_an_exponent(capsys):
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-70b", "--hardware",
                                      "dgx-h100", "--devices", "64,128", "--global-batch", "1024"])
    assert code == 0, err
    head = next(line for line in out.splitlines() if line.lstrip().startswith("#  GPUs"))
    first = out.splitlines()[out.splitlines().index(head) + 1]
    end = head.index("tokens/s") + len("tokens/s")
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", first[:end].split()[-1]), first
    assert not re.search(r"\de[+-]\d", out.split("note:")[0])
    assert re.search(r"\b1,1\d\d tokens/s, 100\.0%", out)


def test_a_sentences_throughput_is_written_as_the_tables(capsys):
    """Session 42: ``figures.rate`` (decide's cells and sentences, the app's remedy words) wrote
    ``amount``'s '8.18 sequences of 8192 tokens/s' for the split llama3-70b takes on 64 H100s,
    where predict's column for the same layout says '8.177': one number, two spellings. Now
    ``rate`` writes ``throughput``'s digits beside the unit. (8.178 since session 46: FSDP
    ZeRO-3's optimizer step sweeps 28 B a parameter, not 30, 7,826.74 -> 7,826.06 ms a step.)"""
    from scalesim.figures import rate, throughput

    for value in (0.012345, 8.17709, 19.5, 1234.4, 140_912.0, 12_613_874.2):
        assert rate(value, "images") == f"{throughput(value)} images/s"
    assert rate(8.17709, "tokens") == "8.177 tokens/s" and rate(19.5, "x") == "19.5 x/s"
    argv = ["--workload", "llama3-70b", "--hardware", "dgx-h100", "--devices", "64"]
    code, out, err = run_cli(capsys, ["decide", *argv, "--json"])
    assert code == 0, err
    (split,) = [o for o in json.loads(out)["options"] if o["key"] == "split_model"]
    layout = split["changes"]["layout"]
    assert (layout["tp"], layout["pp"], split["changes"]["strategy"]) == (4, 1, "zero3")
    code, text, err = run_cli(capsys, ["decide", *argv])
    assert code == 0, err
    (row,) = [x for x in text.splitlines() if x.startswith("Split the model")]
    cell = f"{throughput(split['samples_per_s'])} sequences of 8192 tokens/s"
    assert cell == "8.178 sequences of 8192 tokens/s" and f"  {cell}  " in row
    code, out, err = run_cli(capsys, ["predict", *argv, "--tp", "4", "--strategy", "zero3",
                                      "--accumulation", "4", "--sequence-parallel"])
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.split()[:1] == ["64"]]
    assert "8.178" in line.split()  # predict's sequences/s column: the same spelling


@pytest.mark.parametrize("ratio, text", [
    (1.0, "1.00"), (7.744, "7.74"), (901.356, "901.36"), (999.996, "1,000"), (1000.0, "1,000"),
    (90136.03, "90,136"), (0.001, "0.001"), (float("inf"), "n/a"),
])
def test_a_speedup_is_two_decimals_then_whole_and_separated(ratio, text):
    assert speedup(ratio) == text


def test_predicts_speedup_column_is_separated_at_100000_devices(capsys):
    """Session 43: the speed-up column read '90136.03' at 100,000 devices beside the
    separated '12,610,000' of its samples/s column; now '90,136' (``figures.speedup``), and a
    row on few devices keeps its two decimals ('1.00')."""
    code, out, err = run_cli(capsys, ["predict", "--devices", "1,8,100000", "--json"])
    rows = json.loads(out)
    code, out, err = run_cli(capsys, ["predict", "--devices", "1,8,100000"])
    assert code == 0, err
    table = _table(out, "devices nodes")
    end = table[0].index("speedup") + len("speedup")
    assert len({len(line) for line in table}) == 1
    cells = [line[:end].split()[-1] for line in table[1:]]
    assert cells == [speedup(r["speedup"]) for r in rows]
    assert rows[-1]["speedup"] > 1e4 and re.fullmatch(r"\d{1,3}(,\d{3})+", cells[-1]), cells
    assert cells[0] == "1.00"
