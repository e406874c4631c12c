"""Transformer sizes against the papers' own formulas and tables."""

import pytest
from pydantic import ValidationError

from scalesim.model import transformer as tf
from scalesim.presets import TRANSFORMERS, transformer_workload
from scalesim.schemas import TransformerShape, Workload

GPT_ROWS = [  # Narayanan 2021 Table 1: (name, layers, hidden, published billions)
    ("gpt-1.7b", 24, 2304, 1.7), ("gpt-3.6b", 30, 3072, 3.6), ("gpt-7.5b", 36, 4096, 7.5),
    ("gpt-18.4b", 40, 6144, 18.4), ("gpt-39.1b", 48, 8192, 39.1), ("gpt-76.1b", 60, 10240, 76.1),
    ("gpt-145.6b", 80, 12288, 145.6), ("gpt-310.1b", 96, 16384, 310.1),
    ("gpt-529.6b", 105, 20480, 529.6), ("gpt-1t", 128, 25600, 1008.0),
]


@pytest.mark.parametrize("name,layers,hidden,billions", GPT_ROWS)
def test_gpt_parameter_count_is_narayanans_formula_and_table(name, layers, hidden, billions):
    shape = TRANSFORMERS[name][0]
    v, s = 51200, 2048
    formula = 12 * layers * hidden**2 * (1 + 13 / (12 * hidden) + (v + s) / (12 * layers * hidden))
    assert shape.param_count() == pytest.approx(formula + 2 * hidden, rel=1e-12)  # + final LN
    # Table 1 prints one decimal (1.7B is 1.65B counted: within 3%)
    assert shape.param_count() / 1e9 == pytest.approx(billions, rel=0.03)


def test_llama3_8b_counts_by_hand():
    shape = TRANSFORMERS["llama3-8b"][0]
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    mlp = 3 * 4096 * 14336
    expected = 32 * (attn + mlp + 2 * 4096) + 2 * 128256 * 4096 + 4096
    assert shape.param_count() == expected == 8_030_261_248  # Meta's "8B" (8.03B on the hub)


def test_bert_large_is_one_model():
    """bert-large names one model: the transformer preset (plan, diagnose) and the workload
    preset (predict, sweep, the app) at one shape, sequence 128 (pre-training phase 1, Devlin
    et al. 2018 appendix A.2; the workload's DLE reference). By hand (L 24, h 1024, a 16,
    V 30522, s 128): parameters 12Lh^2 + 13Lh + (V + s)h + 2h = 333,697,024, within 5 % of
    Devlin's 340M (which also counts 512 positions, the pooler and the masked-LM head) and of
    DLE's 336M; activations per sequence L s h (34 + 5 a s / h) = 138,412,032 bytes."""
    from scalesim.presets import BERT_LARGE, WORKLOADS
    from scalesim.schemas import PARAMS_TOLERANCE

    shape, published, source = TRANSFORMERS["bert-large"]
    workload = WORKLOADS["bert-large"]
    assert shape is BERT_LARGE and shape.seq_len == 128 and "phase 1" in source
    L, h, a, V, s = 24, 1024, 16, 30522, 128
    assert (shape.layers, shape.hidden, shape.heads, shape.vocab) == (L, h, a, V)
    counted = 12 * L * h**2 + 13 * L * h + (V + s) * h + 2 * h
    assert shape.param_count() == counted == 333_697_024
    for params in (published, workload.params):
        assert abs(params / counted - 1) <= PARAMS_TOLERANCE
    assert published == 340e6  # Devlin's label, shown beside the count by `scalesim presets`
    assert transformer_workload("bert-large").params == counted  # one model, as plan counts it
    assert workload.activation_bytes_per_sample == L * s * h * (34 + 5 * a * s / h) == 138_412_032
    assert "plan and diagnose --workload bert-large use the same shape" in workload.source


def test_a_name_in_both_preset_tables_is_one_model():
    """A workload preset that shares its name with a transformer preset carries that shape's
    size: its parameters within the workload schema's 5 % of the shape's count, and that
    shape's activation bytes per sequence (every layer's, no recompute)."""
    from scalesim.presets import WORKLOADS
    from scalesim.schemas import PARAMS_TOLERANCE

    shared = set(WORKLOADS) & set(TRANSFORMERS)
    assert shared
    for name in shared:
        shape, workload = TRANSFORMERS[name][0], WORKLOADS[name]
        assert abs(workload.params / shape.param_count() - 1) <= PARAMS_TOLERANCE, name
        assert workload.activation_bytes_per_sample == shape.layers * tf.activation_bytes_per_layer(
            1, shape.seq_len, shape.hidden, shape.heads, shape.kv_of(), shape.ffn_of(),
            shape.gated_mlp, flash_attention=shape.flash_attention), name


def test_narayanan_eq3_is_model_flops_plus_full_recompute():
    # Eq. 3 per iteration = tokens x (model FLOPs + recompute FLOPs) per token for his GPT
    L, h, a, s, V, B = 96, 12288, 96, 2048, 51200, 1536
    args = (L, h, a, a, 4 * h, False)
    per_token = (tf.model_flops_per_token(*args, s, V)
                 + tf.recompute_flops_per_token(tf.RECOMPUTE_FULL, *args, s))
    assert B * s * per_token == pytest.approx(tf.narayanan_flops_per_iteration(B, s, L, h, V),
                                              rel=1e-12)
    # by hand: 96 B s l h^2 (1 + s/6h + V/16lh)
    by_hand = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    assert tf.narayanan_flops_per_iteration(B, s, L, h, V) == pytest.approx(by_hand)
    # without recompute the paper's 72 B s l h^2 (1 + s/6h + V/12lh)
    assert B * s * tf.model_flops_per_token(*args, s, V) == pytest.approx(
        72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h)), rel=1e-12)


def test_selective_recompute_adds_the_attention_core():
    extra = tf.recompute_flops_per_token(tf.RECOMPUTE_SELECTIVE, 10, 1024, 16, 16, 4096, False, 512)
    assert extra == 10 * 4 * 512 * 1024
    assert tf.recompute_flops_per_token(tf.RECOMPUTE_NONE, 10, 1024, 16, 16, 4096, False, 512) == 0


@pytest.mark.parametrize("t", [1, 2, 8])
def test_korthikanti_table2(t):
    s, b, h, a = 2048, 4, 12288, 96
    sbh = s * b * h
    shape = (b, s, h, a, a, 4 * h, False, t)
    act = tf.activation_bytes_per_layer
    assert act(*shape, False, tf.RECOMPUTE_NONE) == pytest.approx(
        sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert act(*shape, True, tf.RECOMPUTE_NONE) == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    assert act(*shape, False, tf.RECOMPUTE_SELECTIVE) == pytest.approx(sbh * (10 + 24 / t))
    assert act(*shape, True, tf.RECOMPUTE_SELECTIVE) == pytest.approx(sbh * 34 / t)
    assert act(*shape, False, tf.RECOMPUTE_FULL) == pytest.approx(2 * sbh)


def test_korthikanti_no_parallelism_is_eq1():
    s, b, h, a = 2048, 1, 4096, 32
    assert tf.activation_bytes_per_layer(b, s, h, a, a, 4 * h, False) == pytest.approx(
        s * b * h * (34 + 5 * a * s / h))
    flash = tf.activation_bytes_per_layer(b, s, h, a, a, 4 * h, False, flash_attention=True)
    assert flash == pytest.approx(s * b * h * 34)


def test_workload_params_must_match_shape():
    shape = TRANSFORMERS["gpt-7.5b"][0]
    Workload(name="ok", params=7.5e9, transformer=shape)
    with pytest.raises(ValidationError, match="disagrees with the transformer shape"):
        Workload(name="bad", params=9e9, transformer=shape)
    assert transformer_workload("llama3-70b").transformer.gated_mlp


def test_shape_checks_heads():
    with pytest.raises(ValidationError, match="not divisible by heads"):
        TransformerShape(layers=2, hidden=100, heads=3, seq_len=8, vocab=10)
    with pytest.raises(ValidationError, match="kv_heads"):
        TransformerShape(layers=2, hidden=96, heads=8, kv_heads=3, seq_len=8, vocab=10)


def test_old_workload_without_shape_still_loads():
    w = Workload.model_validate({"schema_version": "scalesim-workload/1", "name": "x", "params": 1e6})
    assert w.transformer is None
