"""DDP's gradient all-reduce carries fp32 gradients under the default framework (session 45):
PyTorch DDP reduces ``param.grad`` in the parameters' dtype, fp32 under ``torch.autocast``, and
Megatron-LM's ``--bf16`` turns ``accumulate_allreduce_grads_in_fp32`` on for its DDP's
``main_grad``; DeepSpeed reduces in ``communication_data_type`` (the 16-bit model dtype) at every
stage. A stated ``reduce_bytes_per_param`` (a model cast to bf16, a Megatron ``--fp16`` run)
wins. docs/model.md §4, "The gradients' dtype on the wire"."""

import numpy as np
import pytest
from step_fixtures import dp8_layout, one_server

from scalesim.model import collectives as coll
from scalesim.model.layout_step import evaluate_layouts
from scalesim.model.memory import DDP
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.step import StepInputs, evaluate

# 8 GPUs of one server, 1 us and 100 GB/s, 1e9 parameters of 2 bytes, one bucket, no overlap
_ONE_BUCKET = one_server(1e9, algorithm=coll.RING, overlap=False, bucket_bytes=1e12,
                         first_bucket_bytes=1e12, strategy=DDP)


def _ring_all_reduce_s(size_bytes):
    # 2 (p - 1) latencies + 2 (p - 1) / p of the bytes over the bus bandwidth, p = 8
    return 2 * 7 * 1e-6 + 2 * 7 / 8 * size_bytes / 100e9


def test_ddp_all_reduces_fp32_gradients_by_hand():
    # fp32: 14 us + 1.75 x 4 GB / 100 GB/s = 70.014 ms, 7 GB sent; was bf16's 35.014 ms, 3.5 GB
    ddp = evaluate(StepInputs(**_ONE_BUCKET))
    assert float(ddp.exposed_comm_s) == pytest.approx(_ring_all_reduce_s(4e9), rel=1e-12)
    assert float(ddp.exposed_comm_s) == pytest.approx(0.070014, rel=1e-12)
    assert float(ddp.comm_bytes) == pytest.approx(2 * 7 / 8 * 4e9, rel=1e-12)
    # a model cast to bf16 (or Megatron's --fp16) states its 2 bytes: 35.014 ms
    cast = evaluate(StepInputs(**_ONE_BUCKET, reduce_bytes_per_param=2.0))
    assert float(cast.exposed_comm_s) == pytest.approx(0.035014, rel=1e-12)
    # DeepSpeed's stage 0 reduces in bf16 (communication_data_type): the wire's 2 bytes
    ds = evaluate(StepInputs(**_ONE_BUCKET, framework=DEEPSPEED))
    assert float(ds.exposed_comm_s) == pytest.approx(_ring_all_reduce_s(2e9), rel=1e-12)
    # memory: PyTorch's autocast holds 4 + 4 + 8 = 16 bytes, the 2 + 2 + 12 counted, and its
    # buckets in the reduce dtype (session 48): 4 more, 20e9; a stated 2-byte reduction's 2,
    # 18e9; DeepSpeed's stage 0 keeps no Reducer buckets, 16e9
    assert float(ddp.memory_bytes) == pytest.approx(20e9, rel=1e-12)
    assert float(cast.memory_bytes) == pytest.approx(18e9, rel=1e-12)
    assert float(ds.memory_bytes) == pytest.approx(16e9, rel=1e-12)


def test_fp32_training_is_not_widened():
    fp32 = {**_ONE_BUCKET, "wire_bytes_per_param": 4.0, "grad_bytes_per_param": 4.0}
    assert float(evaluate(StepInputs(**fp32)).comm_bytes) == pytest.approx(7e9, rel=1e-12)


def test_the_layout_path_reduces_the_same_bytes():
    # the layout step calls the same rule: DDP's exposed exchange at dp 8 doubles from bf16
    # stated to the default fp32 (latency aside), DeepSpeed's stays at the stated bf16's
    x = dp8_layout(0, overlap=False)
    fp32 = float(evaluate_layouts(x).dp_exposed_s)
    bf16 = float(evaluate_layouts(x.replace(reduce_bytes_per_param=2.0)).dp_exposed_s)
    ds = float(evaluate_layouts(x.replace(framework=DEEPSPEED)).dp_exposed_s)
    assert fp32 == pytest.approx(2 * bf16, rel=0.01) and fp32 > 2 * bf16 * 0.99
    assert ds == pytest.approx(bf16, rel=1e-12)
    assert np.isnan(float(x.reduce_bytes_per_param)) and int(x.framework) == FSDP
