"""diagnose without --params: the remedies are judged over the gradient sizes the runs allow
(session 44, ``scalesim.runs_gradient_size``).

A first-day user's runs file (their own 2-process gloo DDP job of 1.585 M parameters, measured at
1 and 2 processes on one host) read without --params priced "Shard optimizer state" at +14.4 %
and "Double the per-process batch" at +74.9 %; with --params 1.585e6, -10.5 % and +42.1 %. The
note said the gains rested on a nominal 1 GB gradient, but the ranked list still presented them
as gains. Now a change that helps by the model's median error at one size the runs allow and
not at another says "depends on size" with no gain, ranked after the remedies; the others keep
their verdict, their band holding every size's gain.
"""

from __future__ import annotations

import json

import diagnose_cases as cases
from cli_harness import run_cli

from scalesim.fit_runs import NOMINAL_GRADIENT_BYTES
from scalesim.runs_gradient_size import GRADIENT_BYTES_TRIED, size_words

RUNS = "devices,nodes,step_time_s,per_device_batch,device\n1,1,0.02522,32,cpu\n2,1,0.06192,32,cpu\n"


def _report(capsys, path, *flags, json_out=True):
    code, out, err = run_cli(capsys, ["diagnose", str(path), *(["--json"] if json_out else []),
                                      *flags])
    assert code == 0, err
    return json.loads(out) if json_out else out


def test_a_remedy_whose_sign_rests_on_the_gradient_size_shows_no_gain(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(RUNS)
    nominal = _report(capsys, path)
    given = _report(capsys, path, "--params", "1.585e6")
    by_key = [{r["key"]: r for r in rep["remedies"]} for rep in (nominal, given)]
    sharding, batch, first = (by_key[0][k] for k in ("sharding", "bigger_batch", "accumulation"))
    # its gain at each size the runs allow: a loss at 10 MB (the job's own 6.3 MB is near),
    # a gain from 100 MB: no verdict without the model's size
    gains = dict((b, g) for b, g in sharding["gain_by_gradient_bytes"])
    assert sorted(gains) == sorted(GRADIENT_BYTES_TRIED)
    assert gains[1e7] < -0.03 and gains[NOMINAL_GRADIENT_BYTES] > 0.1
    assert sharding["verdict"] == "depends on size"
    # the caveat's figure is the JSON's as it prints (-6.49 % sat 0.04 points from '-6.4%', pinned
    # as a literal before session 49), within a point of the -6.5 % docs/diagnose.md quotes
    assert abs(gains[1e7] - (-0.065)) <= 0.01
    assert "give --params" in sharding["caveat"] and f"{gains[1e7]:+.1%} at 10 MB" in sharding["caveat"]
    assert by_key[1]["sharding"]["verdict"] == "loses"  # the model's own size: it loses
    # ranked after the remedies, never first
    verdicts = [r["verdict"] for r in nominal["remedies"]]
    assert verdicts.index("depends on size") > max(i for i, v in enumerate(verdicts)
                                                   if v == "remedy")
    assert nominal["first_remedy"]["key"] == "accumulation" == first["key"]
    # a remedy that helps at every size keeps its gain; its band holds every size's
    assert batch["verdict"] == "remedy"
    assert batch["gain_low"] <= min(g for _, g in batch["gain_by_gradient_bytes"])
    assert batch["gain_high"] >= max(g for _, g in batch["gain_by_gradient_bytes"])
    assert batch["gain_low"] <= by_key[1]["bigger_batch"]["gain"]  # the +42.1 % of --params
    # its ends as the caveat names them, from the JSON: the least and the most gain and their
    # sizes. Pinned as '+42.1% at 10 MB to +76.0% at 100 GB' before session 49, where +76.048 %
    # sat 0.002 points from printing +76.1 %, and 10 MB was the low end over 1 MB by 0.005
    # points (+42.111 against +42.116 %: where the exchange is negligible either way); the
    # figures are checked within a point of the +42.1 and +76.0 % docs/diagnose.md quotes
    low, high = (f(batch["gain_by_gradient_bytes"], key=lambda sg: sg[1]) for f in (min, max))
    assert abs(low[1] - 0.421) <= 0.01 and abs(high[1] - 0.760) <= 0.01
    assert high[0] == 1e11 and low[0] <= 1e7  # the gain grows with the gradient's size
    assert (f"{low[1]:+.1%} at {size_words(low[0])} to {high[1]:+.1%} at "
            f"{size_words(high[0])}") in batch["caveat"]
    assert nominal["details"]["gradient_sizes"] == {"kept_bytes": list(GRADIENT_BYTES_TRIED),
                                                    "ruled_out_bytes": []}
    assert given["details"]["gradient_sizes"] is None
    assert all(r["gain_by_gradient_bytes"] is None for r in given["remedies"])
    (note,) = [n for n in nominal["notes"] if n.startswith("no --params")]
    assert f"nominal gradient of {NOMINAL_GRADIENT_BYTES / 1e9:g} GB" in note
    assert "each gradient size from 1 MB to 100 GB the runs allow" in note
    assert not any(n.startswith("no --params") for n in given["notes"])


def test_the_text_lists_it_under_its_own_heading_without_a_figure(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    path.write_text(RUNS)
    text = _report(capsys, path, json_out=False)
    head = text.index("Depends on the model's size (model, applied alone):")
    line = text[head:].splitlines()[1]
    assert line.split()[0] == "depends" and "Shard optimizer state" in line
    assert "%" not in line.split("Shard")[0]  # no gain, no band before the title
    assert text.index("Other remedies") < head < text.index("Not applicable")


def test_sizes_the_runs_rule_out_are_left_out_and_named():
    """Fixed global batch on a PCIe server (BERT-large): a 1 or 10 MB gradient cannot follow
    the runs (rms residual 2.5 % against 0.06 %), so the remedies are judged from 100 MB."""
    report = cases.diagnosis("comm_growth")
    sizes = report.details["gradient_sizes"]
    assert sizes["ruled_out_bytes"] == [1e6, 1e7] and sizes["kept_bytes"][0] == 1e8
    assert any("(1 MB, 10 MB they rule out)" in n for n in report.notes)
    assert all(r.gain_by_gradient_bytes is None or [b for b, _ in r.gain_by_gradient_bytes]
               == sizes["kept_bytes"] for r in report.remedies)


def test_a_first_remedy_another_would_replace_at_some_size_is_cautioned():
    """BERT-large over 100 Gb/s (the inter-server case): a faster network +256 % at 1 GB, +66 %
    at 10 GB, where accumulating (+119 %) would come first; its caution says so."""
    report = cases.diagnosis("inter_server")
    first = report.first_remedy
    assert first.key == "interconnect" and first.verdict == "remedy"
    assert ("at a gradient of 10 GB, which these runs allow too, the first remedy would be "
            "Accumulate gradients") in first.caveat
    assert first.gain_low <= min(g for _, g in first.gain_by_gradient_bytes)
