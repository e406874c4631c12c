"""A null vocabulary takes the one the source's framework uses for the model family
(``validate_parallel.SOURCE_VOCAB``): NeMo's FLOPs callback counts Nemotron's output layer with
256,000 tokens, and NeMo's published Model TFLOP/s column reproduces only with it.
docs/validation.md, "Collected held-out model-parallel runs"."""

import pytest

from scalesim.shipped import validation_path
from scalesim.validate_parallel import (
    DEFAULT_VOCAB,
    case_inputs,
    load_parallel_cases,
    source_vocab_of,
)

NEMO = "NVIDIA/NeMo docs/source/performance/performance_summary.md (added in 08264fe348, 2024-09-14)"


def nemo_model_tflops(layers, hidden, heads, groups, ffn, seq, vocab):
    """Model FLOPs per token of NeMo's FLOPsMeasurementCallback._nemotron (perf_metrics.py at
    08264fe348), without the global batch."""
    return layers * hidden * hidden * (12 + 12 * groups / heads + 12 * ffn / hidden
                                       + 12 * seq / hidden + 6 * vocab / (layers * hidden))


def test_nemos_published_model_tflops_need_nemotrons_256k_vocabulary():
    # NeMo 24.07 table, Nemotron-8B: 12,507 tokens/s/GPU, Model TFLOP/s/GPU 643
    tokens = 12507
    with_256k = nemo_model_tflops(32, 4096, 32, 32, 16384, 4096, 256000) * tokens / 1e12
    with_default = nemo_model_tflops(32, 4096, 32, 32, 16384, 4096, DEFAULT_VOCAB) * tokens / 1e12
    assert with_256k == pytest.approx(643, abs=0.5)
    assert abs(with_default - 643) > 50


def test_which_sources_and_families():
    assert source_vocab_of(NEMO, "Nemotron-22B") == 256000
    assert source_vocab_of(NEMO, "GPT3-5B") == 51200
    assert source_vocab_of(NEMO, "LLAMA3-8B") == 128256
    assert source_vocab_of(NEMO, "Mistral-7B") is None  # a family the map does not name
    assert source_vocab_of("NVIDIA/NeMo performance (2024-06-01)", "Nemotron-8B") is None  # before
    assert source_vocab_of(NEMO.replace("NVIDIA/NeMo", "NVIDIA-NeMo/Megatron-Bridge"),
                           "Nemotron-8B") is None
    assert source_vocab_of("mosaicml/llm-foundry (2024-01-06)", "Nemotron-8B") is None


def test_shipped_cases_get_it_only_where_their_vocabulary_is_null():
    moved = {}
    for name in ("parallel_cases.json", "collected_parallel_cases.json"):
        for case in load_parallel_cases(validation_path(name)):
            flags: list[str] = []
            inputs, _ = case_inputs(case, flags)
            if case.model.vocab is not None:
                assert inputs.vocab == case.model.vocab, case.id
            elif inputs.vocab != DEFAULT_VOCAB:
                moved[case.id] = inputs.vocab
                assert any("framework" in f and "vocab" in f for f in flags), case.id
    assert moved == {"nemo2407_h100_nemotron_8b": 256000, "nemo2407_h100_nemotron_22b": 256000,
                     "nemo2407_h100_nemotron_340b": 256000}
