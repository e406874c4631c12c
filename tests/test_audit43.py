"""Session 43's adversarial audit of flag combinations and odd files: each finding, fixed, pinned."""

from __future__ import annotations

import json
import math

import pytest
from cli_harness import run_cli


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_count_no_cp_degree_divides_beside_counts_it_does_gets_a_note(capsys):
    """``plan --cp 2 --devices 1,8``: 8 devices split with cp 2, one device does not. Before, the
    note of the count without a layout unpacked an empty split list (``fewest_replicas``): a
    ValueError traceback. Now the plan runs and the count's note says why and what to give."""
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--global-batch", "64", "--cp", "2", "--devices", "1,8"])
    assert code == 0, err
    note = next(line for line in out.splitlines() if "split of devices 1 " in line)
    assert note.startswith("note: no dp x tp x pp x cp split of devices 1 with cp 2")
    assert "give --cp degrees that divide it" in note
    code, out, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                      "--global-batch", "64", "--cp", "2", "--devices", "1,8",
                                      "--json"])
    assert code == 0, err
    plan = json.loads(out)
    assert plan["layouts"] and all(r["devices"] == 8 for r in plan["layouts"])
    one, eight = plan["by_count"]
    assert one["best"] is None and "with cp 2" in one["note"] and eight["best"]["cp"] == 2
    # one count alone keeps its one-line refusal
    code, _, err = run_cli(capsys, ["plan", "--workload", "llama3-8b", "--hardware", "dgx-h100",
                                    "--global-batch", "64", "--cp", "2", "--devices", "1"])
    assert code == 2 and "no dp x tp x pp x cp split of devices 1 with cp 2" in _one_line(err)


def test_runs_no_fitted_band_can_hold_print_no_numpy_overflow_warning(tmp_path, capsys):
    """A runs file whose last row is a million devices at 5 s a step, beside 1-32 GPUs that
    scale: a fitted parameter's standard error (in log) passes ~360, and exp(Z95 se) overflowed
    in ``diagnosis.pinned``: exit 0 under numpy's 'RuntimeWarning: overflow encountered in exp'
    (two lines of source on the user's terminal). Now the band factor is inf in silence and
    the parameter reads as not pinned."""
    import warnings

    import diagnose_cases

    from scalesim.diagnosis import band_factor, pinned
    from scalesim.fit_runs import Z95

    text = diagnose_cases.to_csv(diagnose_cases.inter_server()).strip()
    path = tmp_path / "runs.csv"
    path.write_text(text + "\n1048576,131072,5,32,1\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, ["diagnose", str(path)])
        assert band_factor(400.0) == float("inf") and not pinned(400.0)
    assert code == 0, err
    assert "1048576" in out.replace(",", "")
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert band_factor(0.1) == pytest.approx(math.exp(Z95 * 0.1), rel=1e-12)


def _llama_plan(**changes):
    from scalesim.plan import plan
    from scalesim.presets import HARDWARE, get_transformer

    args = {"devices": [8], "global_batch": 64, **changes}
    return plan(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], args.pop("devices"),
                args.pop("global_batch"), **args)


def test_plan_of_the_python_api_takes_a_numpy_device_array():
    """README's ``plan(shape, hardware, devices, global_batch)`` with ``np.array([8, 16])``:
    before, a ValueError ('truth value of an array ... is ambiguous'); now the same ranking as
    the list, and floats that are whole numbers read as counts."""
    import numpy as np

    as_list = _llama_plan(devices=[8, 16])
    for devices in (np.array([8, 16]), [8.0, 16.0], (np.int64(8), np.int64(16))):
        rows = _llama_plan(devices=devices)
        assert [(r.devices, r.dp, r.tp, r.pp, r.step_time_s) for r in rows] == [
            (r.devices, r.dp, r.tp, r.pp, r.step_time_s) for r in as_list]


@pytest.mark.parametrize("changes, says", [
    # before: ValueError / TypeError / ZeroDivisionError / RuntimeWarning tracebacks
    ({"devices": [[8, 16]]}, "devices: expected a flat list of numbers, got a nested list"),
    ({"devices": "np2d"}, "devices: expected a flat list of numbers, got an array of shape (1, 2)"),
    ({"devices": "np0"}, "devices: give one or more device counts"),
    ({"devices": [float("nan")]}, "devices: nan is not a whole number"),
    ({"devices": [2**40]}, "devices: 1,099,511,627,776 is outside 1 <= x <= 1,048,576"),
    ({"global_batch": float("inf")}, "global_batch: inf is not a whole number"),
    ({"global_batch": 64.5}, "global_batch: 64.5 is not a whole number"),
    ({"cp_values": (0,)}, "cp_values: 0 is outside 1 <="),
    ({"cp_values": ()}, "cp_values: give one or more context-parallel degrees"),
    # before: ranked in silence with a wrong number
    ({"top": -1}, "top -1: give a whole number of layouts to list, 1 or more"),
    ({"jitter_cv": float("nan")}, "jitter_cv: nan is not a finite number"),
    ({"params": float("nan")}, "params: nan is not a finite number"),
    ({"optimizer_bytes_per_param": -12.0}, "optimizer_bytes_per_param: -12 is outside 0 <="),
    ({"wire_bytes_per_param": float("nan")}, "wire_bytes_per_param: nan is not a finite number"),
])
def test_plan_of_the_python_api_refuses_odd_numbers_by_name(changes, says):
    """Each was a traceback other than ScalesimError, a garbled refusal ('no dp x tp x pp x cp
    split of devices nan'), or a ranking: ``top=-1`` listed all layouts but the last (1,024
    of 1,025), ``jitter_cv=nan`` took the straggler wait out (step 6.32 s for 6.44),
    ``optimizer_bytes_per_param=-12`` ranked at 22.0 GiB a device for 70.0, ``wire=nan``
    exposed no exchange. Now a ScalesimError naming the argument and its bounds (the bounds
    table's quantity)."""
    import numpy as np

    from scalesim.errors import ScalesimError

    arrays = {"np2d": np.array([[8, 16]]), "np0": np.array([], dtype=int)}
    if isinstance(changes.get("devices"), str):
        changes = {"devices": arrays[changes["devices"]]}
    with pytest.raises(ScalesimError) as refused:
        _llama_plan(**changes)
    assert says in str(refused.value)


def test_a_sweep_axis_of_two_dimensions_is_refused():
    """``sweep(profile, base, {"micro_batch": np.array([[1, 2]])})``: before, a result whose
    micro_batch and nodes columns were (1, 2) arrays beside one-row columns (a malformed table,
    no error). Now refused by ``bounds.check_values``, the one check of a list of numbers."""
    import numpy as np

    from scalesim.errors import ScalesimError
    from scalesim.profiles import default_profile
    from scalesim.schemas import Scenario
    from scalesim.sweep import sweep

    with pytest.raises(ScalesimError, match="sweep axis 'micro_batch': expected a flat list"):
        sweep(default_profile(), Scenario(devices=[8]), {"micro_batch": np.array([[1, 2]])})
    flat = sweep(default_profile(), Scenario(devices=[8]), {"micro_batch": np.array([1, 2])})
    assert flat.columns["micro_batch"].tolist() == [1, 2]
