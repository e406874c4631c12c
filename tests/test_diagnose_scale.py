"""diagnose on large runs files (issue 14): repeated measurements become one median run per
configuration, many distinct runs are thinned to a bounded fit, and time grows about linearly."""

from __future__ import annotations

import numpy as np
import pytest

from scalesim import runs as runs_module
from scalesim.errors import ScalesimError
from scalesim.runs import parse_runs_text, thin
from scalesim.runs_diagnosis import diagnose_runs


def _csv(rows) -> str:
    return "devices,nodes,step_time_s,comm_s,rank_step_times_s\n" + "".join(
        f"{d},{n},{t},{c},{';'.join(str(x) for x in r)}\n" for d, n, t, c, r in rows)


def test_repeats_become_medians_sorted_by_devices():
    text = _csv([
        (4, 1, 0.12, 0.02, [0.12, 0.11, 0.12, 0.13]),
        (1, 1, 0.10, 0.00, [0.10]),
        (4, 1, 0.15, 0.04, [0.15, 0.12, 0.16, 0.11]),
        (1, 1, 0.11, 0.00, [0.11]),
        (4, 1, 0.13, 0.03, [0.13, 0.10, 0.13, 0.12]),
        (1, 1, 0.30, 0.00, [0.30]),
    ])
    runs = parse_runs_text(text, "r.csv")
    assert runs.devices.tolist() == [1, 4]
    assert runs.step_time_s.tolist() == pytest.approx([0.11, 0.13])
    assert runs.optional("comm_s").tolist() == pytest.approx([0.0, 0.03])
    assert runs.rows[1].rank_step_times_s == pytest.approx([0.13, 0.11, 0.13, 0.12])
    assert any("6 rows aggregated into 2 runs" in n for n in runs.notes)


def test_repeated_file_diagnoses_like_its_medians():
    rng = np.random.default_rng(5)
    devices = [1, 2, 4, 8, 16, 32]
    true_step = {d: 0.1 * (1.0 if d <= 8 else 1.25) * (1 + 0.01 * np.log2(d)) for d in devices}
    lines, medians = ["devices,nodes,per_device_batch,step_time_s"], []
    for d in devices:
        times = true_step[d] * rng.uniform(0.9, 1.1, size=7)
        medians.append(f"{d},{max(d // 8, 1)},32,{float(np.median(times))!r}")
        lines += [f"{d},{max(d // 8, 1)},32,{float(t)!r}" for t in rng.permutation(times)]
    order = rng.permutation(len(lines) - 1) + 1
    shuffled = "\n".join([lines[0]] + [lines[i] for i in order]) + "\n"
    repeated = diagnose_runs(parse_runs_text(shuffled, "many.csv"))
    single = diagnose_runs(parse_runs_text("\n".join([lines[0], *medians]) + "\n", "one.csv"))
    assert repeated.cause.key == single.cause.key == "inter_server"
    assert [r["step_time_s"] for r in repeated.table] == pytest.approx(
        [r["step_time_s"] for r in single.table])
    for name, value in single.details["fit"]["parameters"].items():
        assert repeated.details["fit"]["parameters"][name] == pytest.approx(value, rel=1e-6), name


def test_two_configurations_on_one_device_count_are_an_error():
    text = "devices,nodes,samples_per_s,per_device_batch\n1,1,10,8\n2,1,19,8\n2,1,30,16\n"
    with pytest.raises(ScalesimError, match="runs 2 and 3 are both on 2 devices"):
        parse_runs_text(text, "r.csv")


def test_too_many_rows_are_refused_with_the_count(monkeypatch):
    monkeypatch.setattr(runs_module, "MAX_ROWS", 10)
    text = "devices,nodes,samples_per_s\n" + "".join(f"{d},1,{d * 10}\n" for d in range(1, 13))
    with pytest.raises(ScalesimError, match="r.csv: 12 runs, more than the 10 diagnose reads"):
        parse_runs_text(text, "r.csv")


def _distinct(n: int) -> str:
    rng = np.random.default_rng(n)
    return "devices,nodes,samples_per_s\n" + "".join(
        f"{8 * i},{i},{800.0 * i * (1.0 if i == 1 else 0.85) * rng.uniform(0.97, 1.03):.2f}\n"
        for i in range(1, n + 1))


def test_many_distinct_runs_are_thinned_keeping_ends_and_boundary():
    text = "devices,nodes,samples_per_s\n1,1,100\n2,1,199\n4,1,396\n8,1,780\n" + "".join(
        f"{8 * i},{i},{800.0 * i * 0.8:.1f}\n" for i in range(2, 40))
    runs = parse_runs_text(text, "r.csv")
    small = thin(runs, 10)
    assert len(small.rows) <= 10 and small.devices[0] == 1 and small.devices[-1] == 8 * 39
    assert {8, 16} <= set(small.devices.tolist())  # either side of the server boundary
    assert "42 distinct runs" in small.notes[-1]
    assert thin(runs, 100) is runs


def test_diagnosis_fits_at_most_max_fit_runs(monkeypatch):
    """Every fit of the diagnosis (the nominal one and, without --params, its refits at other
    gradient sizes, which count here only where their module is first imported after the patch)
    sees the thinned runs of the table, at most the cap. The cap is lowered to 100 for 600 runs:
    the same thinning as 1,500 runs at the real 1,000, whose time benchmarks/diagnose_scale.py
    measures (its distinct files)."""
    from scalesim import fit_runs as fit_module

    real, seen = fit_module.fit_runs, []

    def counting(runs, *args, **kwargs):
        seen.append(len(runs.rows))
        return real(runs, *args, **kwargs)

    monkeypatch.setattr(fit_module, "fit_runs", counting)
    monkeypatch.setattr(runs_module, "MAX_FIT_RUNS", 100)
    report = diagnose_runs(parse_runs_text(_distinct(600), "big.csv"))
    assert seen and set(seen) == {len(report.table)} and len(report.table) <= 100
    assert any("600 distinct runs" in n for n in report.notes)


def _counting(monkeypatch, owner, name: str, calls: list, size=None) -> None:
    """``owner.name`` now appends ``size(*args)`` (None: 1) to ``calls`` each call."""
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(1 if size is None else size(*args))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_fifty_thousand_rows_are_read_once_each_and_fitted_as_their_medians(monkeypatch):
    """Linear in the rows (the quadratic code took minutes for 20k): each of 50k repeated rows
    has its 3 cells read, is validated and is grouped once, and every fit sees the 8 medians,
    not the rows. Counts, not seconds: benchmarks/diagnose_scale.py measures the time."""
    from scalesim import fit_runs as fit_module

    rng = np.random.default_rng(0)
    devices = [1, 2, 4, 8, 16, 32, 64, 128]
    rows = [f"{d},{max(d // 8, 1)},{100.0 * d * (1.0 if d <= 8 else 0.9) * rng.uniform(0.95, 1.05):.1f}"
            for d in np.repeat(devices, 50_000 // len(devices))]
    text = "devices,nodes,samples_per_s\n" + "\n".join(rows) + "\n"
    cells, validated, grouped, fitted = [], [], [], []
    _counting(monkeypatch, runs_module, "_cell", cells)
    _counting(monkeypatch, runs_module.RunRow, "model_validate", validated)
    _counting(monkeypatch, runs_module, "_group_key", grouped)
    _counting(monkeypatch, fit_module, "fit_runs", fitted, size=lambda runs, *_: len(runs.rows))
    report = diagnose_runs(parse_runs_text(text, "big.csv"))
    assert len(report.table) == len(devices) and report.cause.key == "inter_server"
    assert (len(cells), len(validated), len(grouped)) == (3 * 50_000, 50_000, 50_000)
    assert fitted and set(fitted) == {len(devices)}
