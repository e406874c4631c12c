"""The layout model's optimizer term (``LayoutInputs.optimizer_step_s``,
``compute.optimizer_step_of_s``): a measured step of all Ψ parameters on one device becomes
measured x Ψ_local / Ψ on a device that updates Ψ_local of them; NaN keeps the memory-bound
estimate. docs/model.md §16.

Hand-computed shard sizes of the H200 calibration's gpt (8 layers, hidden 1024, 16 heads, ffn
4096, vocabulary 50304, 153,331,712 parameters): a layer's matmul weights 4h^2 + 2hf =
12,582,912 plus 4h = 4,096 of norms, 12,587,008; a stage of pp 2 holds 4 layers and the
embedding (50,304 x 1,024 = 51,511,296): 101,859,328, a tp-2 rank half of it, 50,929,664.
"""

from __future__ import annotations

import numpy as np
import pytest

from scalesim import builtin_gpt
from scalesim.model.compute import optimizer_step_of_s
from scalesim.model.layout_step import evaluate_layouts
from scalesim.plan import Setting, setting_inputs
from scalesim.presets import HARDWARE

PARAMS = 153_331_712
MEASURED_S = 3.90069e-3  # the H200 profile's measured step (all parameters, one device)
BYTES = 2 * 4 + 4 + 2 * 8  # fp32 weights read and written, gradient read, two moments r/w
BANDWIDTH_GBPS = 3350.0  # dgx-h100's H100 SXM


def _inputs(**layout):
    shape = builtin_gpt.shape_of(1024, 8, 1024, 50304, True)
    setting = Setting(shape, HARDWARE["dgx-h100"], 64, params=PARAMS, param_bytes_per_param=4.0,
                      grad_bytes_per_param=4.0, optimizer_bytes_per_param=8.0)
    return setting_inputs(setting, **{k: np.asarray(v) for k, v in layout.items()})


# dp, tp, pp, zero; parameters each device updates, by hand
ROWS = [(1, 1, 1, 0, PARAMS), (4, 1, 1, 1, PARAMS / 4), (4, 1, 1, 0, PARAMS),
        (2, 2, 1, 1, PARAMS / 4), (2, 2, 1, 0, PARAMS / 2), (1, 2, 2, 0, 50_929_664),
        (2, 2, 2, 3, 50_929_664 / 2)]
# Megatron-Core's rows (ZeRO-1, and DDP at tp or pp > 1) clip their fp32 gradients by default
# (session 47, docs/model.md §4): norm 4 + scale 4 + 4 on the 28 B update, 40 / 28 of the sweep
MEGATRON = np.array([False, True, False, True, True, True, False])
# (PyTorch DDP's row over 4 ranks also copies its gradients into the buckets and back, at the
# device's bandwidth whatever the optimizer measured: in both computes compared, session 56)
SWEPT = np.where(MEGATRON, 40 / 28, 1.0)


def test_a_measured_step_scales_with_the_parameters_each_device_updates():
    """compute(measured T) - compute(measured 0) = T x updated / Ψ (x 40/28 on Megatron-Core's
    rows), row by row in one call."""
    dp, tp, pp, zero, updated = (np.array(c) for c in zip(*ROWS, strict=True))
    x = _inputs(dp=dp, tp=tp, pp=pp, zero=zero, micro_batch=1)
    with_t = evaluate_layouts(x.replace(optimizer_step_s=MEASURED_S)).compute_s
    with_0 = evaluate_layouts(x.replace(optimizer_step_s=0.0)).compute_s
    np.testing.assert_allclose(with_t - with_0, MEASURED_S * updated / PARAMS * SWEPT,
                               rtol=1e-9)


def test_nan_keeps_the_memory_bound_estimate_row_by_row():
    """NaN rows: the roofline of the updated parameters (updated x 28 B / 3,350 GB/s; 40 B on
    Megatron-Core's rows); measured rows beside them in the same call: the scaled step."""
    dp, tp, pp, zero, updated = (np.array(c) for c in zip(*ROWS, strict=True))
    x = _inputs(dp=dp, tp=tp, pp=pp, zero=zero, micro_batch=1)
    mixed = np.where(np.arange(len(ROWS)) % 2 == 0, np.nan, MEASURED_S)
    got = evaluate_layouts(x.replace(optimizer_step_s=mixed)).compute_s
    with_0 = evaluate_layouts(x.replace(optimizer_step_s=0.0)).compute_s
    expected = np.where(np.isnan(mixed), updated * BYTES / (BANDWIDTH_GBPS * 1e9),
                        MEASURED_S * updated / PARAMS) * SWEPT
    np.testing.assert_allclose(got - with_0, expected, rtol=1e-9)
    default = evaluate_layouts(x).compute_s  # absent: the estimate, as before
    np.testing.assert_allclose(default - with_0,
                               updated * BYTES * SWEPT / (BANDWIDTH_GBPS * 1e9), rtol=1e-9)


def test_optimizer_step_of_s_broadcasts_and_is_finite():
    got = optimizer_step_of_s(np.array([[PARAMS], [PARAMS / 8]]), PARAMS,
                              np.array([np.nan, MEASURED_S]), 4.0, 4.0, 8.0, 4800.0)
    assert got.shape == (2, 2) and np.all(np.isfinite(got))
    assert got[0, 1] == pytest.approx(MEASURED_S) and got[1, 1] == pytest.approx(MEASURED_S / 8)
    assert got[0, 0] == pytest.approx(PARAMS * BYTES / 4800e9)  # 0.8944 ms, the estimate
