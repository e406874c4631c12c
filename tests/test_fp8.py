"""fp8 runs (docs/model.md §13, fp8): the layers' weight matmuls at the fp8 peak on 1-byte
operands, each paying the casts of its operands (torchao's float8 roofline, dynamic tensorwise
scaling, amax fused; under sequence parallelism on the sharded tokens), and the output layer and
attention core at the 16-bit peak."""

import pytest
from test_recompute_early_stop import SMALL

from scalesim.model import transformer as tf
from scalesim.model.layout_step import LayoutInputs, evaluate_layouts
from scalesim.model.matmul import fp8_cast_s
from scalesim.shipped import validation_path
from scalesim.validate_parallel import case_inputs, load_parallel_cases

# SMALL's layer (h 1024, 8 heads, f 4096, not gated) on 2 x 1024 = 2048 tokens per micro-batch;
# its four weight matmuls as (N out, K in): qkv (3072, 1024), projection (1024, 1024),
# up (4096, 1024), down (1024, 4096)
#   forward  4 M sum K = 4 x 2048 x 7168 = 58,720,256; 5 sum KN = 5 x 12,582,912 = 62,914,560
#   backward 4 M sum N = 4 x 2048 x 9216 = 75,497,472; 3 sum KN = 37,748,736
FORWARD_CAST_BYTES = 58_720_256 + 62_914_560
BACKWARD_CAST_BYTES = 75_497_472 + 37_748_736
# the fp8 matmuls read their operands at 1 byte instead of 2: sum (MK + KN) = 2048 x 7168 +
# 12,582,912 = 27,262,976 bytes fewer per pass over the four, forward and twice backward
OPERAND_BYTES_SAVED = 27_262_976
MICRO_STEPS = 4 * 4  # 4 layers x 4 micro-batches
BYTES_PER_S = 1e12  # SMALL's memory bandwidth, 1000 GB/s


def test_cast_bytes_by_hand():
    # down projection: M 2048, N 1024, K 4096
    fwd, bwd = fp8_cast_s(2048, 1024, 4096, 1e12)
    assert float(fwd) == pytest.approx((4 * 2048 * 4096 + 5 * 4096 * 1024) / 1e12, rel=1e-12)
    assert float(bwd) == pytest.approx((4 * 2048 * 1024 + 3 * 4096 * 1024) / 1e12, rel=1e-12)
    assert float(fwd) == pytest.approx(5.4525952e-5, rel=1e-12)


def test_casts_in_the_step_by_hand():
    none = {**SMALL, "recompute": tf.RECOMPUTE_NONE}
    bf16 = evaluate_layouts(LayoutInputs(**none))
    fp8 = evaluate_layouts(LayoutInputs(**none, fp8=True))  # same peak: casts and bytes differ
    casts = (FORWARD_CAST_BYTES + BACKWARD_CAST_BYTES) / BYTES_PER_S * MICRO_STEPS
    saved = OPERAND_BYTES_SAVED / BYTES_PER_S * MICRO_STEPS  # per pass over the four matmuls
    assert float(fp8.compute_s) - float(bf16.compute_s) == pytest.approx(casts - 3 * saved,
                                                                        rel=1e-9)
    # full recompute reruns the forward's casts and matmuls; PyTorch's early stop not the down
    # projection's (its operands: 2048 x 4096 + 4096 x 1024 bytes fewer)
    full = evaluate_layouts(LayoutInputs(**SMALL, fp8=True))
    full16 = evaluate_layouts(LayoutInputs(**SMALL))
    rerun = FORWARD_CAST_BYTES / BYTES_PER_S * MICRO_STEPS
    assert float(full.compute_s) - float(full16.compute_s) == pytest.approx(
        casts + rerun - 4 * saved, rel=1e-9)
    stop = evaluate_layouts(LayoutInputs(**SMALL, fp8=True, recompute_early_stop=True))
    stop16 = evaluate_layouts(LayoutInputs(**SMALL, recompute_early_stop=True))
    down_forward = (4 * 2048 * 4096 + 5 * 4096 * 1024) / BYTES_PER_S * MICRO_STEPS
    down_saved = (2048 * 4096 + 4096 * 1024) / BYTES_PER_S * MICRO_STEPS
    assert float(stop.compute_s) - float(stop16.compute_s) == pytest.approx(
        casts + rerun - down_forward - 4 * saved + down_saved, rel=1e-9)
    # a 16-bit run pays none: the flag alone changes nothing else
    assert float(fp8.mfu) < float(bf16.mfu)
    assert float(fp8.memory_bytes) == float(bf16.memory_bytes)


def test_sequence_parallelism_casts_the_sharded_tokens_by_hand():
    # tp 2: the column-parallel matmuls' inputs (qkv, up: K 1024) and the row-parallel ones'
    # output gradients (projection, down: N 1024) are cast on 1024 of the 2048 tokens before
    # their all-gather: 4 x 1024 x 1024 bytes fewer each, 16,777,216 in all per layer and
    # micro-batch; nothing else of fp8 depends on sequence parallelism
    def fp8_cost(sp: bool) -> float:
        base = {**SMALL, "recompute": tf.RECOMPUTE_NONE, "tp": 2, "sequence_parallel": sp}
        return (float(evaluate_layouts(LayoutInputs(**base, fp8=True)).compute_s)
                - float(evaluate_layouts(LayoutInputs(**base)).compute_s))

    assert fp8_cost(False) - fp8_cost(True) == pytest.approx(
        16_777_216 / BYTES_PER_S * MICRO_STEPS, rel=1e-9)


def test_output_layer_at_the_16_bit_peak_by_hand():
    # the output layer's three matmuls per micro-batch: 3 x 2 x 2048 x 50368 x 1024
    # = 3 x 211,258,703,872 FLOP, at 1e14 instead of 2e14 FLOP/s, x 4 micro-batches
    base = {**SMALL, "recompute": tf.RECOMPUTE_NONE, "peak_flops_per_s": 200e12, "fp8": True}
    at_fp8 = evaluate_layouts(LayoutInputs(**base, peak16_flops_per_s=200e12))
    at_16 = evaluate_layouts(LayoutInputs(**base, peak16_flops_per_s=100e12))
    attention = 3.5 * 4 * 2048 * 1024 * 1024 * (1 / 1e14 - 1 / 2e14) * MICRO_STEPS  # its core
    logits = 3 * 211_258_703_872 * (1 / 1e14 - 1 / 2e14) * 4
    assert float(at_16.compute_s) - float(at_fp8.compute_s) == pytest.approx(
        logits + attention, rel=1e-9)


def test_validation_marks_fp8_runs():
    cases = load_parallel_cases(validation_path("parallel_cases.json"))
    seen = set()
    for case in cases:
        x, _ = case_inputs(case, [])
        assert bool(x.fp8) == (case.precision == "fp8"), case.id
        if case.precision == "fp8":
            assert x.peak16_flops_per_s * 2 == pytest.approx(x.peak_flops_per_s, rel=1e-3)
        seen.add(bool(x.fp8))
    assert seen == {True, False}
