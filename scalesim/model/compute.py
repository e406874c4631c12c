"""Compute time of one forward+backward micro-step as a function of per-device micro-batch.

The curve is ``t(b) = overhead_s + per_sample_s * b``: a fixed cost per micro-step (kernel
launches, Python, small layers that do not fill the device) that dominates at small batches,
and a per-sample cost that dominates at large ones (the affine model Pollux fits,
``T_compute = alpha_c + beta_c * b``). Beyond the measured range it extrapolates linearly, which
is right for a device that is already saturated and optimistic only below the smallest point.

Devices of one server share its host: CPU cores, memory bandwidth, PCIe root complexes, power
and cooling. When ``g`` of them compute at once each may be slower than one alone; the model
takes that slowdown as linear in the number of other busy devices of the server,
``t_g = t_alone * (1 + slope * (g - 1))``, with ``slope`` from a calibration that timed one
device alone and all of its server's devices at once.
"""

from __future__ import annotations

import numpy as np

from scalesim.model.fit_error import relative_rmse


def micro_step_s(micro_batch, overhead_s, per_sample_s):
    """Forward+backward time of one micro-step on one device, seconds."""
    return np.asarray(overhead_s, dtype=float) + np.asarray(per_sample_s, dtype=float) * micro_batch


def optimizer_roofline_s(params, param_bytes_per_param, grad_bytes_per_param,
                         optimizer_bytes_per_param, memory_bandwidth_GBps):
    """Optimizer update time of ``params`` parameters on one device, s, as a memory-bound sweep.

    An optimizer step does a few flops per byte (Adam: about 10 per parameter), so it runs at the
    device's memory bandwidth: each parameter and its optimizer state are read and written once
    and its gradient read once, ``params * (2*param + grad + 2*state) bytes / bandwidth``. At the
    full vendor bandwidth this is a lower bound (fused optimizers reach most of it).
    """
    traffic = np.asarray(params, dtype=float) * (
        2.0 * np.asarray(param_bytes_per_param, dtype=float)
        + np.asarray(grad_bytes_per_param, dtype=float)
        + 2.0 * np.asarray(optimizer_bytes_per_param, dtype=float))
    return traffic / (np.asarray(memory_bandwidth_GBps, dtype=float) * 1e9)


# Where the memory-bound estimate would take more than this share of a published run's step
# (per shard, for ZeRO), it is not subtracted from that run's time (set to 0: the run's
# per-sample time keeps whatever its optimizer cost): a guard against a datasheet bandwidth far
# above what the run's optimizer reached, not a measured mechanism (docs/model.md §1,
# docs/validation.md). One setting for the presets (``profiles.compute_curve_from_reference``)
# and the published cases (``validate``).
OPTIMIZER_MAX_SHARE = 0.5


def optimizer_step_of_s(updated_params, params, measured_step_s, param_bytes_per_param,
                        grad_bytes_per_param, optimizer_bytes_per_param, memory_bandwidth_GBps):
    """Optimizer step of a device that updates ``updated_params`` of the model's ``params``, s.

    Where ``measured_step_s`` (the measured step of all ``params`` on one device, s) is given
    (not NaN): ``measured_step_s * updated_params / params``. An optimizer step is a streaming
    pass over each parameter's states (a few flops per byte, ``optimizer_roofline_s``), so its
    time is proportional to the parameters it updates at the rate the measurement ran; a fixed
    cost per step (kernel launches per tensor) is assumed small beside it. NaN: the memory-bound
    sweep of ``updated_params`` (``optimizer_roofline_s``). docs/model.md §13.
    """
    measured = np.asarray(measured_step_s, dtype=float)
    updated = np.asarray(updated_params, dtype=float)
    estimate = optimizer_roofline_s(updated, param_bytes_per_param, grad_bytes_per_param,
                                    optimizer_bytes_per_param, memory_bandwidth_GBps)
    scaled = np.nan_to_num(measured) * updated / np.asarray(params, dtype=float)
    return np.where(np.isnan(measured), estimate, scaled)


def colocation_factor(devices_per_node, slope):
    """Compute-time multiplier (dimensionless, >= 1) with ``devices_per_node`` devices of one
    server busy at once (1 for one device): ``1 + slope * (g - 1)``; ``slope`` is a fraction of
    the alone time per extra busy device. docs/model.md §1 "Co-location"."""
    g = np.asarray(devices_per_node, dtype=float)
    return 1.0 + np.asarray(slope, dtype=float) * np.maximum(g - 1.0, 0.0)


def colocation_slope(slowdown, colocated_devices) -> float:
    """Slope per extra busy device from a measured ``slowdown`` (fraction, e.g. 0.08) with
    ``colocated_devices`` busy at once; 0 when fewer than two were measured together."""
    if colocated_devices < 2:
        return 0.0
    return float(slowdown) / (colocated_devices - 1)


def fit_compute_curve(micro_batch, time_s) -> tuple[float, float, float]:
    """Fit ``overhead_s`` and ``per_sample_s`` (both >= 0) to measured (batch, time) points.

    Non-negative least squares on the relative error, so the small batches (where the overhead
    shows) count as much as the large ones. Returns ``(overhead_s, per_sample_s, rel_rmse)``.
    """
    from scipy.optimize import nnls

    b = np.asarray(micro_batch, dtype=float)
    t = np.asarray(time_s, dtype=float)
    if b.size < 2 or np.unique(b).size < 2:
        raise ValueError("need timings at two or more different micro-batch sizes to fit compute")
    if np.any(t <= 0) or np.any(b <= 0):
        raise ValueError("micro-batch sizes and times must be positive to fit compute")
    design = np.stack([np.ones_like(b), b], axis=1) / t[:, None]
    (overhead, per_sample), _ = nnls(design, np.ones_like(t))
    predicted = overhead + per_sample * b
    rel_rmse = relative_rmse(predicted, t)
    return float(overhead), float(per_sample), rel_rmse
