"""Session 60: what a user's own transformer workloads showed in the planner (docs/reliability.md,
"Session 60"): uneven interleaved chunks' activation peak, a fix that named tp values the
model's heads refuse, and the params tolerance at its edge."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalesim.cli.main import main
from scalesim.figures import GIB_BYTES
from scalesim.layout import INTERLEAVED
from scalesim.model.pipeline_schedule import microbatches_in_flight
from scalesim.pipeline_stages import interleaved_held_layers, interleaved_peak_layers, stage_split
from scalesim.profiles import load_workload
from scalesim.schemas import Workload

LLAMA2_70B = {
    "name": "llama2-70b", "params": 68976648192, "micro_batch": 1,
    "transformer": {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
                    "ffn_hidden": 28672, "gated_mlp": True, "seq_len": 4096, "vocab": 32000,
                    "tied_embeddings": False, "learned_positions": False, "biases": False,
                    "layernorm": False, "flash_attention": True},
}


def _megatron_replay(chunk_layers, pp, v, m, rank):
    """Megatron-LM's interleaved order played step by step (warm-up forwards, then one forward
    and one backward each, then the cool-down backwards): the most layers of activations held."""
    local = [chunk_layers[c * pp + rank] for c in range(v)]
    n = m * v
    warm = min(2 * (pp - rank - 1) + (v - 1) * pp, n)
    held = peak = 0
    forwards = backwards = 0

    def chunk(k, forward):
        c = (k % (pp * v)) // pp
        return c if forward else v - 1 - c

    for _ in range(warm):
        held += local[chunk(forwards, True)]
        forwards += 1
        peak = max(peak, held)
    while forwards < n:
        held += local[chunk(forwards, True)]
        forwards += 1
        peak = max(peak, held)
        held -= local[chunk(backwards, False)]
        backwards += 1
    return peak


@pytest.mark.parametrize(("layers", "pp", "v", "m"), [
    (80, 8, 8, 64), (96, 8, 5, 64), (80, 8, 6, 16), (64, 8, 8, 64), (48, 4, 3, 8), (10, 2, 2, 1)])
def test_the_interleaved_peak_is_megatrons_order_played_out(layers, pp, v, m):
    chunks = stage_split(layers, pp, v).chunks
    for rank in range(pp):
        assert interleaved_peak_layers(layers, pp, v, m, rank) == _megatron_replay(
            chunks, pp, v, m, rank)


def test_uneven_chunks_hold_more_than_the_stage_times_the_chunks_in_flight():
    """80 layers over pp 8 x v 8: rank 0's chunks hold 2, 2, 1, 1, 1, 1, 1, 1 layers; with 64
    micro-batches it runs 2 x 7 + 7 x 8 = 70 warm-up forwards, and its peak is 103
    layer-micro-batches (the two heavy chunks in flight first), where its 10 layers x 71/8
    chunks in flight said 88.75. Equal chunks (64 layers) give exactly that product: 8 x 71/8."""
    assert stage_split(80, 8, 8).chunks[0::8] == (2, 2, 1, 1, 1, 1, 1, 1)
    assert interleaved_peak_layers(80, 8, 8, 64, 0) == 103
    assert 10 * float(microbatches_in_flight(INTERLEAVED, 8, 64, 8)) == pytest.approx(88.75)
    assert interleaved_peak_layers(64, 8, 8, 64, 0) == 71 == 8 * 71 / 8
    held = interleaved_held_layers(np.array([80, 64, 80]), 8, 8, 64, np.array([0, 0, 7]))
    assert held.tolist() == [103.0, 71.0, float(interleaved_peak_layers(80, 8, 8, 64, 7))]


def test_a_layout_whose_uneven_chunks_overflow_an_h100_is_not_planned_as_fitting(tmp_path,
                                                                                 capsys):
    """Llama 2 70B at global batch 512 on 128 H100s: dp 8 x tp 2 x pp 8, interleaved 8, no
    recompute was planned first at 80.0 GiB, 'fits'; its rank 0 holds 103 layer-micro-batches
    of activations, 57 GiB, not 49, so it needs about 88 GiB."""
    path = tmp_path / "llama2-70b.json"
    path.write_text(json.dumps(LLAMA2_70B))
    assert main(["predict", "--workload", str(path), "--hardware", "dgx-h100", "--devices",
                 "128", "--batch", "1", "--accumulation", "64", "--tp", "2", "--pp", "8",
                 "--schedule", "interleaved", "--virtual-stages", "8", "--strategy", "zero2",
                 "--recompute", "none", "--sequence-parallel", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    # 73.8 GiB before (88.75 layer-micro-batches), 14.25 more of 0.555 GiB each now
    assert row["global_batch"] == 512
    assert 81 * GIB_BYTES < row["memory_bytes"] < 83 * GIB_BYTES and not row["fits"]


def test_a_tp_fix_names_only_tps_the_models_heads_allow(tmp_path, capsys):
    """64 heads (8 kv) on servers of 6: tp 3 and 6 divide the server but not the heads, and
    were named as the fix, then refused."""
    path = tmp_path / "llama2-70b.json"
    path.write_text(json.dumps(LLAMA2_70B))
    assert main(["predict", "--workload", str(path), "--gpus-per-node", "6", "--devices", "6",
                 "--tp", "4"]) == 2
    err = capsys.readouterr().err
    assert "use tp 1 or 2, or 4 GPUs per server" in err and "3" not in err.split("use tp")[1]


def test_params_exactly_at_the_tolerance_pass():
    w = load_workload("llama3-8b")
    counted = w.transformer.param_count()
    for factor in (1.05, 0.95):
        Workload.model_validate({**w.model_dump(), "params": counted * factor})
    with pytest.raises(ValueError, match="more than 5%"):
        Workload.model_validate({**w.model_dump(), "params": counted * 1.0501})
