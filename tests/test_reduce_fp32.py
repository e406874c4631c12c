"""FSDP's gradient reduce-scatter in float32 while the parameters are gathered in bf16 (FSDP
``MixedPrecision(param_dtype=bf16, reduce_dtype=float32)``; Composer's DEFAULT mixed precision
from v0.16.4): the reductions move 4 bytes per parameter, the gathers 2. docs/model.md §16,
docs/validation.md ("FSDP's float32 gradient reduction")."""

import numpy as np
import pytest

from scalesim.model.memory import DDP, ZERO1, ZERO2, ZERO3
from scalesim.model.sharding import DEEPSPEED, FSDP
from scalesim.model.zero_exchange import exchange, reduce_wire_ratio
from scalesim.shipped import validation_path
from scalesim.validate_parallel import case_inputs, load_parallel_cases, reduce_fp32_of

SHARD_BYTES = 2.0 * 1e9  # 1 G parameters at 2 bytes


def _ring(size_bytes):  # 10 us + 100 GB/s: seconds of a reduce-scatter or all-gather
    return 1e-5 + np.asarray(size_bytes, dtype=float) / 100e9


def _all_reduce(size_bytes):
    return 2.0 * _ring(size_bytes)


def _total(strategy, framework, reduce_bytes, k=4):
    _, total, _ = exchange(strategy, framework, SHARD_BYTES, 8, 10, k, 1.0, 2.0, False,
                           _all_reduce, _ring, 2.0, reduce_bytes_per_param=reduce_bytes)
    return float(total)


def test_ratio_defaults_to_one():
    assert reduce_wire_ratio(2.0) == 1.0
    assert reduce_wire_ratio(2.0, np.nan) == 1.0
    assert reduce_wire_ratio(2.0, 4.0) == 2.0


@pytest.mark.parametrize("strategy", [ZERO2, ZERO3])
def test_fsdp_reduce_scatter_doubles_and_gathers_stay_by_hand(strategy):
    # serial: 10 blocks a micro-batch; a block's gather moves 0.2 GB, its reduce 0.2 (bf16) or
    # 0.4 GB (fp32): 10 x (1e-5 + 2e-3) = 20.1 ms, or 10 x (1e-5 + 4e-3) = 40.1 ms a reduce
    k = 4
    gathers = (2 if strategy == ZERO3 else 1) * k * 10 * (1e-5 + 0.2e9 / 100e9)
    bf16 = gathers + k * 10 * (1e-5 + 0.2e9 / 100e9)
    fp32 = gathers + k * 10 * (1e-5 + 0.4e9 / 100e9)
    assert _total(strategy, FSDP, None, k) == pytest.approx(bf16)
    assert _total(strategy, FSDP, np.nan, k) == pytest.approx(bf16)
    assert _total(strategy, FSDP, 4.0, k) == pytest.approx(fp32)


@pytest.mark.parametrize("strategy, framework", [(DDP, FSDP), (ZERO1, FSDP), (ZERO1, DEEPSPEED),
                                                 (ZERO3, DEEPSPEED)])
def test_every_gradient_reduction_follows_the_reduce_dtype(strategy, framework):
    # the gradients' collectives double, the parameters' gathers (if any) do not
    bf16, fp32 = _total(strategy, framework, None), _total(strategy, framework, 4.0)
    assert bf16 < fp32 <= 2.0 * bf16 * (1 + 1e-9)
    if strategy == DDP:  # gradients only
        assert fp32 == pytest.approx(2.0 * bf16, rel=1e-3)  # DDP buckets: latency aside


def test_which_sources_reduce_in_fp32():
    foundry = "mosaicml/llm-foundry scripts/train/benchmarking/README.md"
    assert reduce_fp32_of(f"{foundry} (added in commit 5e85bd62d, 2024-01-06)")
    assert not reduce_fp32_of(f"{foundry} (added in commit b2a43a147, 2023-10-19)")  # 0.16.3?
    assert not reduce_fp32_of(f"{foundry} (present since commit 300cc5c58, 2023-05-03)")  # PURE
    assert not reduce_fp32_of(foundry)  # no date: not known
    assert reduce_fp32_of("pytorch/torchtitan benchmarks/x.md (added in 820504e20, 2025-06-13)")
    assert not reduce_fp32_of("pytorch/torchtitan benchmarks/x.md (2024-06-01)")  # not checked
    assert not reduce_fp32_of("NVIDIA/NeMo docs/source/performance/x.md (2024-09-14)")


def test_shipped_cases_get_it_only_for_llmfoundrys_january_2024_table_and_torchtitan():
    picked = 0
    for name in ("parallel_cases.json", "collected_parallel_cases.json"):
        for case in load_parallel_cases(validation_path(name)):
            flags: list[str] = []
            inputs, _ = case_inputs(case, flags)
            expected = (case.group == "llmfoundry_h100_bf16_2024_large"
                        or case.group.startswith("torchtitan_"))
            picked += expected
            assert (inputs.reduce_bytes_per_param == 4.0) is expected, case.id
            assert np.isnan(inputs.reduce_bytes_per_param) is not expected, case.id
            assert any("float32" in f for f in flags) is expected, case.id
    assert picked == 18 + 2 + 26  # llm-foundry 2024 (public), torchtitan public and collected


def test_one_rule_states_the_validators_reduce_bytes_and_its_flags():
    """Session 46: ``stated_reduce`` gives the bytes and the flags saying why from one rule:
    ``case_inputs`` states both as it gives them, and ``stated_reduce_bytes`` (the planner
    benchmark's, over ZeRO stages) its bytes at each stage."""
    from scalesim.validate_parallel import (
        BF16_MAIN_GRAD_WORDS,
        FP16_MAIN_GRAD_WORDS,
        REDUCE_FP32_WORDS,
        stated_reduce,
        stated_reduce_bytes,
    )

    every = {REDUCE_FP32_WORDS, BF16_MAIN_GRAD_WORDS, FP16_MAIN_GRAD_WORDS}
    said = {2.0: 0, 4.0: 0}
    for name in ("parallel_cases.json", "collected_parallel_cases.json"):
        for case in load_parallel_cases(validation_path(name)):
            flags: list[str] = []
            inputs, _ = case_inputs(case, flags)
            got, words = stated_reduce(case, case.layout.zero)
            np.testing.assert_equal(inputs.reduce_bytes_per_param, got)
            assert [f for f in flags if f in every] == list(words), case.id
            assert bool(words) is not np.isnan(got), case.id
            said[got] = said.get(got, 0) + 1
            np.testing.assert_equal(stated_reduce_bytes(case, np.arange(4)),
                                    [stated_reduce(case, z)[0] for z in range(4)])
    assert said[2.0] > 0 and said[4.0] > 0, said
    # both 2-byte reasons at once: an fp16-mixed run from a source with bf16 main grads
    nemo = {c.id: c for c in load_parallel_cases(validation_path(
        "collected_parallel_cases.json"))}["nemo2407_h100_llama2_70b"]
    fp16 = nemo.model_copy(update={"precision": "fp16-mixed"})
    assert stated_reduce(fp16, 1) == (2.0, (BF16_MAIN_GRAD_WORDS, FP16_MAIN_GRAD_WORDS))
    assert stated_reduce(fp16, 0) == (2.0, (FP16_MAIN_GRAD_WORDS,))
    got, words = stated_reduce(fp16, 2)
    assert np.isnan(got) and words == ()
