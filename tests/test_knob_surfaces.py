"""The layout knobs on every surface that takes a layout (session 41): ``--p2p-overlap`` (one
row of ``bounds.LAYOUT_KNOBS``, docs/model.md §15 "Interleaved sends overlap compute") as a
sweep axis, ``--p2p-overlap-values on,off``, whose rows are predict's; refused in one line
where it cannot change a row."""

from __future__ import annotations

import pytest
from cli_harness import run_cli

from scalesim.layout import P2P_OVERLAP_NEEDS_INTERLEAVED
from scalesim.predict import predict
from scalesim.profiles import resolve_profile
from scalesim.schemas import Scenario, ScenarioLayout
from scalesim.sweep import sweep

# Llama 3 8B on 4 GPUs of a DGX H100, one sequence a micro-batch, 8 micro-batches a step, two
# virtual stages where the rows pipeline (tests/test_p2p_overlap_knob.py's scenario)
WORKLOAD = ["--workload", "llama3-8b", "--hardware", "dgx-h100"]


def test_the_send_overlap_is_a_sweep_axis_with_the_rows_predict_gives():
    """``--pp-values 1,4 --p2p-overlap-values on,off``: pp 4 x v 2 inside one server, m = 8.
    One send t = 2 us + 8192 x 4096 x 2 B / 370 GB/s = 183.4 us; blocking charges the m v = 16
    steady chunks' 32 sends whole, overlapped only the contention share c (0.159), so the off
    row's step is the on row's + 32 t (1 - c) = 4.935 ms, its exposed communication too, and
    every other column equal. The pp 1 rows do not pipeline: on and off are one row. Each row
    equals predict's of its scenario. Before: 'axes: cannot sweep ['p2p_overlap']'."""
    profile = resolve_profile(None, "dgx-h100", "llama3-8b")
    base = Scenario(devices=[4], micro_batch=1, accumulation=8,
                    layout=ScenarioLayout(virtual_stages=2))
    cols = sweep(profile, base, {"pp": [1, 4], "p2p_overlap": [True, False]}).columns
    rows = {(int(pp), bool(on)): i for i, (pp, on) in
            enumerate(zip(cols["pp"], cols["p2p_overlap"], strict=True))}
    assert len(rows) == 4
    c = profile.hardware.comm_compute_contention
    t = 2e-6 + 8192 * 4096 * 2 / 370e9
    on, off = rows[4, True], rows[4, False]
    for name in ("step_time_s", "exposed_comm_s"):
        assert cols[name][off] - cols[name][on] == pytest.approx(32 * t * (1 - c), rel=1e-9)
    for name in ("compute_s", "bubble_s", "straggler_s", "memory_bytes"):
        assert cols[name][off] == cols[name][on], name
    assert cols["step_time_s"][rows[1, True]] == cols["step_time_s"][rows[1, False]]
    for (pp, overlap), i in rows.items():
        split = ScenarioLayout(pp=pp, virtual_stages=2 if pp > 1 else 1,
                               p2p_overlap=overlap or pp == 1)
        want = predict(profile, base.model_copy(update={"layout": split}))[0].step_time_s
        assert cols["step_time_s"][i] == pytest.approx(want, rel=1e-12), (pp, overlap)


@pytest.mark.parametrize(("argv", "words"), [
    (["--devices", "8"], "sweep axis p2p_overlap needs a transformer workload"),
    ([*WORKLOAD, "--devices", "4", "--pp", "4"], P2P_OVERLAP_NEEDS_INTERLEAVED),
    ([*WORKLOAD, "--devices", "4", "--pp", "4", "--virtual-stages", "2", "--accumulation", "8",
      "--p2p-overlap", "off"], "--p2p-overlap and --p2p-overlap-values both set p2p_overlap"),
])
def test_the_axis_is_refused_in_one_line_where_it_changes_nothing(capsys, argv, words):
    """A parameter count (no pipeline schedule), no row interleaving (pp 4, one chunk a stage:
    its sends block either way), and the axis beside its one-value flag: exit 2, one line."""
    code, out, err = run_cli(capsys, ["sweep", *argv, "--p2p-overlap-values", "on,off"])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert words in err, err
    if "virtual" in words:  # the fix names the axis's value, not the one-value flag
        assert "drop 'off' from --p2p-overlap-values" in err, err
