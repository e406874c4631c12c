"""Session 44: every refusal of a value a user sets through a knob of the knob table
(``bounds.KNOBS``, ``bounds.LAYOUT_KNOBS``) names that knob in ``ScalesimError.knobs``, not
only predict's (session 43): plan's, sweep's, goal's, decide's and remedies', and the CLI's own
checks of its flags. One row a raising site: what triggers it, a piece of its message (so the
row is known to reach that site, and the wording is unchanged) and the knobs it must name."""

from __future__ import annotations

import json

import pytest

from scalesim.bounds import REFUSABLE
from scalesim.errors import ScalesimError
from scalesim.training_time import TRAINING_LENGTH_KNOBS

LLAMA = ("dgx-h100", "llama3-8b")
BERT = ("a2-highgpu-8g", "bert-large")  # a parameter count: no transformer shape


def _profile(which=LLAMA):
    from scalesim.profiles import resolve_profile

    return resolve_profile(None, *which)


def _scenario(**fields):
    from scalesim.schemas import Scenario, ScenarioLayout

    layout = fields.pop("layout", None)
    return Scenario(**fields, layout=None if layout is None else ScenarioLayout(**layout))


def _plan_at(devices, global_batch, scenario=None, which=LLAMA, **kwargs):
    from scalesim.layout_predict import plan_at

    return lambda: plan_at(_profile(which), scenario or _scenario(), devices, global_batch,
                           **kwargs)


def _plan(global_batch=64, **kwargs):
    from scalesim.plan import plan
    from scalesim.presets import HARDWARE, get_transformer

    return lambda: plan(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], [8], global_batch,
                        **kwargs)


def _setting_mismatch(global_batch=16, **layout):
    """``evaluate_layout`` of a layout whose framework settings or batch are not its setting's
    (the setting's: global batch 16, the default recompute style, no tp or p2p overlap)."""
    from scalesim.layout import ParallelLayout
    from scalesim.plan import Setting, evaluate_layout
    from scalesim.presets import HARDWARE, get_transformer

    setting = Setting(get_transformer("llama3-8b"), HARDWARE["dgx-h100"], 16)
    return lambda: evaluate_layout(setting, ParallelLayout(global_batch=global_batch, **layout))


GOAL_BASE = {"devices": [8], "train_samples": 10**9, "price_per_device_hour": 3.0}


def _seek(which=LLAMA, max_devices=64, goal_layout=None, **fields):
    from scalesim.goal import seek

    return lambda: seek(_profile(which), _scenario(**{**GOAL_BASE, **fields}), 3.6e6, 1e9,
                        max_devices, layout=goal_layout)


def _sweep(axes, which=LLAMA, **fields):
    from scalesim.sweep import plan_sweep

    return lambda: plan_sweep(_profile(which), _scenario(**{"devices": [8], **fields}), axes)


def _cli(*argv):
    """The command's run on ``argv`` (its parse as main's), raising what it refuses."""
    from scalesim.cli.main import build_parser

    def run():
        args = build_parser().parse_args(list(argv))
        return args._run(args)
    return run


def _call(function, *args):
    return lambda: function(*args)


def _imported(path: str):
    module, name = path.rsplit(".", 1)
    return getattr(__import__(module, fromlist=[name]), name)


SWEEP_CLI = ("sweep", "--hardware", "dgx-h100", "--workload", "llama3-8b", "--devices", "8")
GOAL_CLI = ("goal", "--hardware", "dgx-h100", "--workload", "llama3-8b", "--deadline", "30d",
            "--budget", "1000000")
PREDICT_CLI = ("predict", "--hardware", "dgx-h100", "--workload", "llama3-8b", "--devices", "8")

# site: (what raises, a piece of its message, the knobs named)
SITES = {
    # plan: the planner's search (plan --devices/--global-batch/--cp, the app's Layouts tab)
    "plan: cp divides no count": (
        _plan_at([8], 64, cp_values=(3,)), "no dp x tp x pp x cp split", ("cp",)),
    "plan: 2 x cp does not split the sequence": (
        _plan_at([3], 63, cp_values=(3,)), "context parallelism cuts each sequence",
        ("cp", "seq_len")),
    "plan: counts that fill no whole servers": (
        _plan_at([12], 96), "do not fill whole servers of 8", ("devices", "devices_per_node")),
    "plan: no device count": (_plan_at([], 64), "give one or more device counts", ("devices",)),
    "plan: a device count out of bounds": (_plan_at([0], 64), "devices: 0 is outside",
                                           ("devices",)),
    "plan: a global batch out of bounds": (_plan(global_batch=0), "global_batch: 0 is outside",
                                           ("global_batch",)),
    "plan: no cp degree": (_plan_at([8], 64, cp_values=()), "cp_values: give one or more",
                           ("cp",)),
    "plan: a cp degree out of bounds": (_plan_at([8], 64, cp_values=(0,)), "cp_values: 0",
                                        ("cp",)),
    "plan: every split has more replicas than divide the batch": (
        _plan_at([1024], 3), "every valid split has", ("global_batch", "devices")),
    "plan: too many micro-steps": (
        _plan_at([8], 2**40), "micro-steps; add devices or lower the global batch",
        ("devices", "global_batch")),
    "plan: nothing fits": (
        _plan_at([8], 8, which=("dgx-a100", "gpt-145.6b")), "every ZeRO stage, recompute",
        ("devices",)),
    "plan: fp8 on a device without an fp8 peak": (
        _call(lambda: _imported("scalesim.plan.fp8_peak_ratio")("Tesla V100-SXM2 16GB")),
        "precision fp8:", ("precision",)),
    "plan: slow device rank": (_plan(slow_device=-1), "slow_device -1", ("slow_device",)),
    "plan: slow factor": (_plan(slow_factor=0.0), "slow_factor: 0", ("slow_factor",)),
    "plan: ZeRO framework": (_plan(zero_framework="x"), "zero_framework 'x'",
                             ("zero_framework",)),
    "plan: gradient sync": (_plan(grad_sync="x"), "grad_sync 'x'", ("grad_sync",)),
    "plan: DeepSpeed's gradient sync": (
        _plan(zero_framework="deepspeed", grad_sync="once-per-step"), "DeepSpeed",
        ("grad_sync", "zero_framework")),
    "plan: bucket": (_plan(bucket_mib=0.0), "bucket_mib: 0", ("bucket_mib",)),
    "plan: memory margin": (_plan(memory_margin=0.9), "memory_margin: 0.9", ("memory_margin",)),
    "plan: algorithm": (_plan(algorithm="x"), "algorithm 'x'", ("algorithm",)),
    "plan: recompute style": (_plan(recompute_style="x"), "recompute_style 'x'",
                              ("recompute_style",)),
    "plan: a layout's global batch not the setting's": (
        _setting_mismatch(global_batch=32), "layout global_batch 32", ("global_batch",)),
    "plan: a layout's recompute style not the setting's": (
        _setting_mismatch(recompute_style="early-stop"), "layout recompute_style",
        ("recompute_style",)),
    "plan: a layout's tp overlap not the setting's": (
        _setting_mismatch(tp=2, tp_overlap=True), "layout tp_overlap", ("tp_overlap",)),
    "plan: a layout's pipeline send overlap not the setting's": (
        _setting_mismatch(pp=2, schedule="interleaved", virtual_stages=2, p2p_overlap=False),
        "layout p2p_overlap", ("p2p_overlap",)),
    # goal
    "goal: a fixed global batch": (_seek(global_batch=64, devices=[8]), "varies the per-device",
                                   ("global_batch",)),
    "goal: no training length": (_seek(train_samples=None), "needs a training length",
                                 TRAINING_LENGTH_KNOBS),
    "goal: no price": (_seek(which=("dgx-h200", "llama3-8b"), price_per_device_hour=None),
                       "needs a price", ("price_per_device_hour",)),  # the H200 lists none
    "goal: search range": (_seek(max_devices=0), "max_devices: 0", ("max_devices",)),
    "goal: an unknown layout mode": (_seek(goal_layout="x"), "layout 'x'", ("goal_layout",)),
    "goal: search of a parameter count": (_seek(which=BERT, goal_layout="search"),
                                          "layout search:", ("goal_layout",)),
    "goal: a split no count runs": (_seek(layout={"tp": 8, "pp": 4, "schedule": "1f1b"},
                                          max_devices=16),
                                    "can run the layout", ("tp", "pp", "max_devices")),
    # session 45: a tp past the server is predict's refusal (no max_devices runs it)
    "goal: a tp past a server": (_seek(layout={"tp": 16}, max_devices=16), "use tp <= 8, or "
                                 "hardware whose server", ("tp", "devices_per_node", "hardware")),
    # sweep (the library's axes and the CLI's)
    "sweep: an axis not a list": (_sweep({"bucket_mib": "x"}), "expected a list of values",
                                  ("bucket_mib",)),
    "sweep: an axis without values": (_sweep({"tp": []}), "has no values", ("tp",)),
    "sweep: a named axis of numbers": (_sweep({"strategy": [1]}), "expected names",
                                       ("strategy",)),
    "sweep: an unknown name": (_sweep({"strategy": ["zero9"]}), "unknown strategy 'zero9'",
                               ("strategy",)),
    "sweep: a switch axis of numbers": (_sweep({"overlap": [1]}), "expected true/false",
                                        ("overlap",)),
    "sweep: an axis value out of bounds": (_sweep({"bucket_mib": [0]}), "bucket_mib': 0",
                                           ("bucket_mib",)),
    "sweep: per-device and global batches": (
        _sweep({"micro_batch": [1], "global_batch": [8]}), "not both",
        ("micro_batch", "global_batch")),
    "sweep: DeepSpeed with once-per-step only": (
        _sweep({"zero_framework": ["deepspeed"], "grad_sync": ["once-per-step"]}),
        "every row pairs --zero-framework-values deepspeed with --grad-sync-values "
        "once-per-step", ("zero_framework", "grad_sync")),
    "sweep: split axes of a parameter count": (_sweep({"tp": [1, 2]}, which=BERT),
                                               "--tp-values splits the model", ("tp",)),
    "sweep: a layout axis of a parameter count": (
        _sweep({"attention_kernel": ["flash2"]}, which=BERT), "needs a transformer workload",
        ("attention_kernel",)),
    "sweep: no global batch splits": (
        _sweep({"global_batch": [3]}, which=BERT, devices=[2]), "no combination of the sweep",
        ("global_batch", "devices", "accumulation")),
    "sweep: a one-value setting no row runs": (
        _sweep({"tp": [1]}, layout={"schedule": "gpipe"}), "means nothing on every row",
        ("schedule",)),
    "sweep: sequence lengths of a parameter count": (
        _sweep({"seq_len": [1024]}, which=BERT), "--seq-len-values needs", ("seq_len",)),
    "sweep: a sequence length 2 x cp does not divide": (
        _sweep({"seq_len": [1001]}, layout={"cp": 2}), "is not divisible by 2 x --cp 2",
        ("seq_len", "cp")),
    "sweep CLI: a flag and its axis": (
        _cli(*SWEEP_CLI, "--bucket-mib", "25", "--bucket-mib-values", "25,50"),
        "--bucket-mib and --bucket-mib-values", ("bucket_mib",)),
    "sweep CLI: both batch axes": (
        _cli(*SWEEP_CLI, "--batch-values", "1,2", "--global-batch-values", "64"),
        "give --batch-values or --global-batch-values", ("micro_batch", "global_batch")),
    "sweep CLI: per-device batches with a global batch": (
        _cli(*SWEEP_CLI, "--batch-values", "1,2", "--global-batch", "64"),
        "--batch-values sweeps weak scaling", ("global_batch",)),
    "sweep CLI: global batches with a per-device batch": (
        _cli(*SWEEP_CLI, "--global-batch-values", "64", "--batch", "2"),
        "--global-batch-values sweeps strong scaling", ("micro_batch",)),
    # goal's CLI
    "goal CLI: device counts": (_cli(*GOAL_CLI, "--devices", "8"), "--devices is not used",
                                ("devices",)),
    "goal CLI: a strategy": (_cli(*GOAL_CLI, "--strategy", "zero1"), "--strategy is not used",
                             ("strategy",)),
    "goal CLI: a global batch": (_cli(*GOAL_CLI, "--global-batch", "64"),
                                 "--global-batch is not used", ("global_batch",)),
    "goal CLI: no training length": (_cli(*GOAL_CLI, "--price", "3"),
                                     "goal needs a training length", TRAINING_LENGTH_KNOBS),
    "goal CLI: no price": (_cli(*GOAL_CLI[:2], "dgx-h200", *GOAL_CLI[3:], "--train-samples",
                                "1000000000"), "goal needs a price", ("price_per_device_hour",)),
    # predict's CLI and the scenario flags every command reads
    "predict CLI: a price with nothing to price": (
        _cli(*PREDICT_CLI, "--price", "3"), "--price needs a training length",
        ("price_per_device_hour", *TRAINING_LENGTH_KNOBS)),
    "predict CLI: a critical batch alone": (
        _cli(*PREDICT_CLI, "--critical-batch", "1000"), "go together",
        ("critical_batch_size", "min_samples_to_quality")),
    "CLI: loader workers without an input pipeline": (
        _cli(*PREDICT_CLI, "--loader-workers", "4"), "--loader-workers 4", ("loader_workers",)),
    "CLI: a slow device without a factor": (
        _cli(*PREDICT_CLI, "--slow-device", "3"), "--slow-device RANK and --slow-factor F",
        ("slow_device", "slow_factor")),
    "CLI: epochs without a dataset size": (
        _cli(*PREDICT_CLI, "--epochs", "3"), "--epochs and --dataset-size go together",
        ("train_samples",)),
    "CLI: epochs beside train samples": (
        _cli(*PREDICT_CLI, "--epochs", "3", "--dataset-size", "1000", "--train-samples", "5"),
        "not both", ("train_samples",)),
    "CLI: epochs x dataset size out of bounds": (
        _cli(*PREDICT_CLI, "--epochs", "1000000", "--dataset-size", "2000000000000"),
        "--epochs x --dataset-size", ("train_samples",)),
    "CLI: a combination the scenario refuses": (
        _cli(*PREDICT_CLI, "--strategy", "zero3", "--zero-framework", "deepspeed", "--pp", "2"),
        "DeepSpeed refuses ZeRO-2/3", ("strategy", "pp", "zero_framework")),
    # decide, remedies, predict's server rule and billing (library callers)
    "decide: no devices": (_call(lambda: _imported("scalesim.decision.decide")(
        _profile(), _scenario(), 0)), "devices must be 1 or more", ("devices",)),
    "remedies: no devices": (_call(lambda: _imported("scalesim.remedies.rank_remedies")(
        _profile(), _scenario(), 0)), "devices must be 1 or more", ("devices",)),
    "remedies: time without a training length": (
        _call(lambda: _imported("scalesim.remedies.rank_remedies")(
            _profile(), _scenario(), 8, objective="time")),
        "objective 'time' needs a training length", TRAINING_LENGTH_KNOBS),
    "predict: a device count below 1": (_call(lambda: _imported("scalesim.predict.layout")(
        [0], 8)), "device counts must be 1 or more", ("devices",)),
    "billing: an instance size below 1": (
        _call(lambda: _imported("scalesim.billing.check_sizes")([0])), "instance_sizes 0",
        ("instance_sizes",)),
    "billing: an instance size larger than a server": (
        _call(lambda: _imported("scalesim.billing.job_sizes")([16], None, 8)), "16",
        ("instance_sizes",)),
}


@pytest.mark.parametrize("site", list(SITES))
def test_each_refusal_names_the_knobs_of_the_values_it_refuses(site):
    raises, words, knobs = SITES[site]
    with pytest.raises(ScalesimError) as caught:
        raises()
    assert words in str(caught.value), str(caught.value)
    assert caught.value.knobs == knobs, (str(caught.value), caught.value.knobs)
    assert set(knobs) <= set(REFUSABLE)


def test_a_refusal_with_knobs_is_the_same_one_line_on_the_command_line(capsys):
    """Knobs are no part of the message: the CLI still prints its one line and exits 2."""
    from cli_harness import run_cli

    code, out, err = run_cli(capsys, [*SWEEP_CLI, "--batch-values", "1,2", "--global-batch",
                                      "64"])
    assert (code, out) == (2, "")
    assert err == ("scalesim sweep: error: --batch-values sweeps weak scaling; drop "
                   "--global-batch\n")
    code, out, err = run_cli(capsys, [*GOAL_CLI, "--price", "3", "--json"])
    assert code == 2 and "goal needs a training length" in err and len(err.splitlines()) == 1
    assert json.dumps(out) == '""'
