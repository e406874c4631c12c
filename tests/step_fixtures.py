"""Inputs the by-hand data-parallel tests share (imported as ``from step_fixtures import ...``,
as ``cli_harness`` is): ``one_server``, ``StepInputs``' keywords for 8 GPUs of one server, and
``dp8_layout``, ``LayoutInputs`` of ``test_collective_waits``' GPT at dp 8 on its A100 server,
and ``dp8_states``, what that layout holds a parameter."""

from __future__ import annotations

from test_collective_waits import GPT, HW

from scalesim.model.layout_step import LayoutInputs, LayoutResult, evaluate_layouts


def one_server(params: float, **changes) -> dict:
    """``StepInputs`` keywords: 8 devices of one server, links of 1 us and 100 GB/s busbw
    (intra and inter), one sample a micro-step of 1 s (backward 2/3 s), no accumulation,
    overhead or optimizer step, ``params`` parameters of 2 bytes on the wire; ``changes``
    (keyword: value) replace or add to these."""
    return dict(devices=8, devices_per_node=8, micro_batch=1, accumulation=1, overhead_s=0.0,
                per_sample_s=1.0, optimizer_step_s=0.0, backward_fraction=2 / 3, params=params,
                wire_bytes_per_param=2.0, intra_latency_s=1e-6, intra_busbw_GBps=100.0,
                inter_latency_s=1e-6, inter_busbw_GBps=100.0) | changes


def dp8_layout(zero: int, **changes) -> LayoutInputs:
    """GPT 1.65B (``test_collective_waits.GPT``) on its A100 server (``HW``) at dp 8, ZeRO stage
    ``zero``, one sequence a micro-batch, global batch 8, no pipeline, no recompute;
    ``changes`` (``LayoutInputs`` fields) replace any of these."""
    base = dict(dp=8, tp=1, pp=1, cp=1, zero=zero, micro_batch=1, global_batch=8, schedule=0,
                virtual_stages=1, recompute=0, sequence_parallel=False)
    return LayoutInputs(**{**GPT, **HW, **{**base, **changes}})


def dp8_states(zero: int, **changes) -> tuple[LayoutInputs, LayoutResult, float, float]:
    """``dp8_layout(zero, **changes)``, its result, and the bytes a parameter of its gradients
    and of all its states (weights, gradients and optimizer) that a device holds."""
    x = dp8_layout(zero, **changes)
    r = evaluate_layouts(x)
    psi = float(x.params)
    return x, r, float(r.grads_bytes) / psi, float(
        r.weights_bytes + r.grads_bytes + r.optimizer_bytes) / psi
