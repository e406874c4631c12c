"""The matmul precision of a run: a scenario knob (``Scenario.precision``, ``--precision``, the
app's link key ``pr``), its names, labels and help.

The names live here, below ``scalesim.bounds`` (the knob table) and ``scalesim.schemas``, so both
can read them without importing the presets; what fp8 costs and gains is the layout model's
(docs/model.md §13, "fp8"), each device's fp8 peak ``presets.peak_tflops_of(name, fp8=True)``.
"""

from __future__ import annotations

from typing import Literal, get_args

Precision = Literal["bf16", "fp8"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
DEFAULT_PRECISION = "bf16"
FP8 = "fp8"
# ``ComputeCurve.precision`` of a curve read off a published run's throughput (a workload's
# ``reference``, ``profiles.workload_compute``): that run's own precision and attention kernel,
# whichever they were
PUBLISHED_RUN = "published"
PRECISION_HELP = (
    "the transformer layers' matmul precision (docs/model.md §13, 'fp8'): 'bf16' (default; "
    "bf16/fp16 at the 16-bit peak) or 'fp8' (Transformer Engine, torchao float8: the layers' "
    "weight matmuls at the device's fp8 peak, each paying its operands' casts; the attention "
    "core and the output layer stay 16-bit). A transformer workload on a datasheet profile "
    "only: refused with a profile whose compute was measured (its timings ran at their own "
    "precision) or a device with no fp8 peak, ignored by a parameter-count workload")
# What fp8 does, where a transformer workload runs in it (predict's, sweep's, plan's,
# decide's and goal's notes)
FP8_WORDS = ("precision: fp8 weight matmuls at the device's fp8 peak, each paying its operands' "
             "casts; the attention core and the output layer at the 16-bit peak "
             "(docs/model.md §13, fp8)")


def no_fp8_peak_words(device_name: str) -> str:
    """Why ``device_name`` cannot run fp8, in one clause: plan's and the layout paths' refusals
    (``layout_predict.check_precision``), the fp8 remedy's reason and the app's note."""
    return (f"no fp8 peak is known for '{device_name}' (no fp8 tensor cores, or a device the "
            "datasheet tables do not list)")


# Each precision in a few words, where a choice is shown (the app's control and report)
PRECISION_LABELS = {
    DEFAULT_PRECISION: "bf16 / fp16 (default)",
    FP8: "fp8 weight matmuls (Transformer Engine, torchao float8)",
}
