"""Session 41: `scalesim presets` printed the 1-trillion-parameter GPT as "gpt-1t: 1.01e+03B
params (published 1008B)" (``:.3g`` of 1008); now "1008B", as its published figure. Hand value
(Narayanan et al. 2021, eq. for P): 12 l h^2 + 13 l h + (V + s) h with l = 128, h = 25,600,
V = 51,200, s = 2,048: 1,006,632,960,000 + 42,598,400 + 1,363,148,800 = 1,008,038,707,200
(`param_count` counts 51,200 more, 1,008,038,758,400): 1008B to three significant digits."""

from __future__ import annotations

from cli_harness import run_cli


def test_a_trillion_parameter_preset_is_written_in_billions_without_an_exponent(capsys):
    code, out, _ = run_cli(capsys, ["presets"])
    assert code == 0
    line = next(s for s in out.splitlines() if s.startswith("  gpt-1t: "))
    assert line.startswith("  gpt-1t: 1008B params (published 1008B), 128 layers")
    assert "e+" not in out  # no parameter count, nor any other figure, in exponent form
    assert "  llama3-405b: 406B params (published 405B)" in out  # three digits, unchanged
