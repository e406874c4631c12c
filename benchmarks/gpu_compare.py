"""Predicted against measured one-device training steps (no GPU needed here): the steps
``benchmarks/gpu_step.py`` measured and the profile ``scalesim calibrate`` wrote on the same
device (``benchmarks/gpu_check.sh``), through what a user runs::

    scalesim predict --profile PROFILE --workload SHAPE.json --devices 1 --batch MB \
        --tp 1 --pp 1 --recompute none

and, for reference, the same step from the datasheet at the published default efficiency (what
``--hardware`` gives without a calibration). Prints one row per shape and the mean |error|;
figures in docs/calibration.md ("GPU path").

    python benchmarks/gpu_compare.py PROFILE.json STEPS.json [PROFILE2.json ...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_step import workload_json  # noqa: E402

from scalesim.cli.main import OneLineParser  # noqa: E402
from scalesim.errors import ScalesimError  # noqa: E402
from scalesim.jsonio import read_json  # noqa: E402
from scalesim.predict import predict  # noqa: E402
from scalesim.profiles import resolve_profile  # noqa: E402
from scalesim.schemas import Scenario, ScenarioLayout  # noqa: E402


def predicted_step_s(profile_path: str, row: dict, folder: str, datasheet: bool = False) -> float:
    """The step ``scalesim predict`` gives for the measured shape on one device, s; the
    workload's bytes per parameter as the step ran (fp32 weights and gradients, AdamW)."""
    workload = workload_json(row) | {"param_bytes_per_param": 4.0, "grad_bytes_per_param": 4.0,
                                     "optimizer_bytes_per_param": 8.0}
    path = os.path.join(folder, f"{row['name']}.json")
    with open(path, "w") as f:
        json.dump(workload, f)
    profile = resolve_profile(profile_path, None, path)
    if datasheet:  # the measured device's datasheet at the published default efficiency
        from scalesim.profiles import compute_curve_from_shape

        hardware = profile.hardware.model_copy(update={"peak_tflops": None,
                                                       "kernel_bandwidth_GBps": None})
        curve, _ = compute_curve_from_shape(profile.workload, hardware)
        profile = profile.model_copy(update={"compute": curve, "model_parallel": None,
                                             "hardware": hardware})
    scenario = Scenario(devices=[1], micro_batch=row["micro_batch"],
                        layout=ScenarioLayout(tp=1, pp=1, recompute="none"))
    return predict(profile, scenario)[0].step_time_s


# what gpu_compare reads of gpu_step.py's --out file: the run's, and each step's
RUN_KEYS = ("device", "torch", "date_utc", "steps")
STEP_KEYS = ("name", "params", "micro_batch", "layers", "hidden", "heads", "seq_len", "vocab",
             "flash_attention", "step_s_median")


def measured_steps(path: str) -> dict:
    """gpu_step.py's --out file at ``path``; a missing or garbled one refused in one line
    (``ScalesimError``)."""
    measured = read_json(path)
    steps = measured.get("steps") if isinstance(measured, dict) else None
    if not steps or not isinstance(steps, list) or not all(isinstance(r, dict) for r in steps):
        missing = ["steps"]
    else:
        missing = ([k for k in RUN_KEYS if k not in measured]
                   + sorted({k for row in steps for k in STEP_KEYS if k not in row}))
    if missing:
        raise ScalesimError(f"{path}: not the steps benchmarks/gpu_step.py writes (no "
                            f"{', '.join(repr(k) for k in missing)}); give its --out file")
    return measured


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(prog="python benchmarks/gpu_compare.py",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="the profile scalesim calibrate wrote on the device")
    parser.add_argument("steps", help="the steps benchmarks/gpu_step.py measured (its --out)")
    parser.add_argument("more_profiles", nargs="*", default=[], metavar="profile2",
                        help="more profiles of the same device to compare")
    args = parser.parse_args(argv)
    steps_path, profiles = args.steps, [args.profile, *args.more_profiles]
    measured = measured_steps(steps_path)
    for path in profiles:  # each refused in one line (ScalesimError) before any row is printed
        resolve_profile(path, None, None)
    print(f"device {measured['device']}, torch {measured['torch']}, {measured['date_utc']}")
    with tempfile.TemporaryDirectory() as folder:
        for label, path, datasheet in ([("datasheet, default efficiency", profiles[0], True)]
                                       + [(os.path.join(*p.split(os.sep)[-2:]), p, False) for p in profiles]):
            errors = []
            print(f"\n{label}:")
            for row in measured["steps"]:
                pred = predicted_step_s(path, row, folder, datasheet)
                err = pred / row["step_s_median"] - 1.0
                errors.append(abs(err))
                print(f"  {row['name']:<26} measured {row['step_s_median'] * 1e3:7.1f} ms  "
                      f"predicted {pred * 1e3:7.1f} ms  {err:+6.1%}")
            print(f"  mean |error| {sum(errors) / len(errors):.1%}")


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
