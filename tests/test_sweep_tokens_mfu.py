"""`sweep` writes predict --json's tokens_per_s and mfu of a transformer's rows (session 45
audit: it had neither column), from the same layout result; a workload with no shape has
neither, as predict's rows leave them null."""

import csv
import io
import json

import pytest
from cli_harness import run_cli

SPLIT = ["--workload", "gpt-1.7b", "--hardware", "dgx-h100", "--devices", "8,16"]


def _json(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    return json.loads(out)


def test_sweep_rows_carry_predicts_tokens_and_mfu(capsys):
    swept = _json(capsys, ["sweep", *SPLIT, "--tp-values", "1,2", "--format", "json"])
    assert len(swept) == 4
    for tp in (1, 2):
        predicted = _json(capsys, ["predict", *SPLIT, "--tp", str(tp), "--json"])
        rows = [r for r in swept if r["tp"] == tp]
        for s, p in zip(rows, predicted, strict=True):
            assert s["devices"] == p["devices"]
            assert s["tokens_per_s"] == pytest.approx(p["tokens_per_s"], rel=1e-12)
            assert s["mfu"] == pytest.approx(p["mfu"], rel=1e-12)
            # by hand: tokens are samples x the shape's 2,048 tokens a sequence
            assert s["tokens_per_s"] == pytest.approx(s["samples_per_s"] * 2048, rel=1e-12)
            assert 0.0 < s["mfu"] < 1.0
    code, out, _ = run_cli(capsys, ["sweep", *SPLIT, "--format", "csv"])
    header = next(csv.reader(io.StringIO(out)))
    assert code == 0 and header[-2:] == ["tokens_per_s", "mfu"]


def test_a_workload_without_a_shape_has_neither_column(capsys):
    predicted = _json(capsys, ["predict", "--devices", "8,16", "--json"])
    assert all(r["tokens_per_s"] is None and r["mfu"] is None for r in predicted)
    swept = _json(capsys, ["sweep", "--devices", "8,16", "--format", "json"])
    assert swept and all("tokens_per_s" not in r and "mfu" not in r for r in swept)
