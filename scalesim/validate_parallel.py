"""Predict published model-parallel training runs (format ``scalesim-parallel-cases/1``).

The format and its anchor rule are in scalesim/data/validation/parallel_cases.md: cases are grouped
by system and software stack; in each group the one anchor case pins the device's sustained
matmul efficiency (the share of the datasheet peak, solved so the model reproduces the anchor's
published number); every other case is predicted from its own description (transformer shape,
hardware, layout) by ``model.layout_step.evaluate_layouts`` with the one set of documented
defaults below (``DEFAULTS``), no per-case tuning. A null field gets its default and a flag.
docs/validation.md has the method and the results.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from scalesim.attention_kernel import FLASH2_KERNEL, VENDOR_KERNEL
from scalesim.bounds import bound, bounded
from scalesim.case_words import (
    DEFAULT_GBIT_PER_NIC,
    DEFAULT_INTER_KIND,
    INTRA_NODE_ALIASES,
    NICS_PER_GPU,
    PC_WORDS,
    default_gbit_per_nic,
    intra_preset,
)
from scalesim.errors import ScalesimError, excerpt, in_words_of
from scalesim.figures import GIB_BYTES
from scalesim.jsonio import read_json
from scalesim.layout import (
    SCHEDULES,
    ZERO_STAGE_HELP,
    ParallelLayout,
    interleaves,
    layout_problems,
    split_words,
    unrunnable_split,
)
from scalesim.model.layout_step import LayoutInputs, LayoutResult, evaluate_layouts
from scalesim.model.overlap import GPU_COMM_CONTENTION
from scalesim.model.stragglers import DEVICE_SPEED_CV
from scalesim.model.transformer import RECOMPUTE, parameter_count
from scalesim.plan import PARTS
from scalesim.predict import nvls_busbw_ratio
from scalesim.presets import (
    ATTENTION_ON_A100_EFFICIENCY,
    FLASH2_ON_HOPPER_EFFICIENCY,
    INTRA_LINKS,
    attention_efficiency_of,
    device_memory_of,
    inter_link,
    intra_link,
    memory_bandwidth_of,
    peak_tflops_of,
    server_tray,
)
from scalesim.schemas import StrictModel, check_heads
from scalesim.validate import (
    CaseFile,
    CaseName,
    Skipped,
    abs_error_figures,
    cube_mesh_note,
    none_read,
    parse_case_list,
    read_case_list,
    read_gpu_name,
)

FORMAT = "scalesim-parallel-cases/1"

# --- one set of documented defaults (docs/validation.md, "Model-parallel cases")
# The network defaults (a null kind, NIC count, line rate) are case_words' (DEFAULT_INTER_KIND,
# NICS_PER_GPU, DEFAULT_GBIT_PER_NIC), shared with the data-parallel format.
DEFAULT_VOCAB = 51200  # a null vocabulary: GPT-2's 50,257 BPE tokens padded as Megatron-LM pads
# them (Narayanan et al. 2021 use V = 51,200)
# A null vocabulary where the framework the source names states one for the model family:
# NeMo's FLOPsMeasurementCallback, which computes the 'Model TFLOP / sec / GPU' column of NeMo's
# performance tables (nemo/collections/common/metrics/perf_metrics.py, commit 30cf60cdbd,
# 2024-08-04, "log TFLOPs"), counts the output layer with LLM_VOCAB_SIZE_MAP
# (nemo/collections/common/parts/perf_metrics_utils.py at 08264fe348): gpt3 51,200, llama2
# 32,000, llama3 128,256, nemotron 256,000, mixtral 32,000. The NeMo 24.07 table's Model TFLOP
# column is tokens/s x that formula for every row (Nemotron-8B 12,507 tok/s -> 642.7 against the
# published 643 with 256,000; 579.8 with 51,200). Keyed on the source and on the family's name in
# the case's model name (lower case, '-' and '.' dropped); dated from the map's commit.
SOURCE_VOCAB = {"NVIDIA/NeMo": ((2024, 8, 4), (("nemotron", 256000), ("gpt3", 51200),
                                               ("llama2", 32000), ("llama3", 128256),
                                               ("mixtral", 32000)))}
# A GPU none of the datasheet tables (presets.PEAK_TFLOPS, MEMORY_BANDWIDTH_GBPS) lists is
# predicted, flagged, rather than refused with its whole file: the group's anchor pins the
# efficiency against whatever peak is used, so a nominal 16-bit peak serves (only peak x
# efficiency enters the compute, as layout_predict.NOMINAL_PEAK_FLOPS); fp8 at twice it, the
# ratio of every listed GPU with fp8 (H100, H200, GB200, B200, MI300X datasheets); the memory
# bandwidth at the peak over 250 FLOP per byte, near the listed training GPUs' ratios (H100 SXM
# 989 / 3.35 = 295, B200 2250 / 7.7 = 292, MI300X 1307 / 5.3 = 247, A100 40GB 312 / 1.555 = 201),
# which sets the memory-bound kernels' share of the step the anchor cannot pin.
UNLISTED_PEAK_TFLOPS = 1000.0
FP8_PEAK_RATIO = 2.0
UNLISTED_FLOP_PER_BYTE = 250.0
DEFAULT_MICRO_BATCH = 1
DEFAULT_RECOMPUTE = "none"  # a null recompute: none (Megatron-Core's default)
FLASH_ATTENTION_FROM_YEAR = 2022  # sources from 2022 on use fused (flash) attention (Dao 2022)
# The fused attention kernel where the case does not state it: Transformer Engine's (cuDNN fused
# attention, DotProductAttention) in NVIDIA's Megatron-Core stacks (sources naming NeMo or
# Megatron); elsewhere a FlashAttention-2-class kernel (torchtitan calls PyTorch's SDPA, whose
# default backend on H100 is flash: pytorch/pytorch#138522, #142132; llm-foundry's attn_impl is
# flash-attn or its Triton kernel). presets.attention_efficiency_of says what each sustains.
VENDOR_ATTENTION_SOURCES = ("NVIDIA/NeMo", "NVIDIA-NeMo", "Megatron")
# FSDP's backward prefetch where the case does not state it: the default of the framework the
# source names. Composer (MosaicML llm-foundry's trainer) defaults to BACKWARD_POST
# (composer/trainer/mosaic_fsdp_utils.py, 2023: fsdp_config.get('backward_prefetch',
# 'BACKWARD_POST')); PyTorch FSDP itself, FSDP2 (torchtitan) and Megatron prefetch before.
BACKWARD_PREFETCH_POST_SOURCES = ("mosaicml/llm-foundry",)
# Full recompute by PyTorch's non-reentrant checkpoint with early stop (torch >= 2.1: the
# recomputation ends once the last tensor saved for backward is back, so the MLP's down
# projection is not rerun; docs/model.md §13): sources naming a repository, dated on or after
# the day its published runs were on torch >= 2.1. llm-foundry checkpoints each MPTBlock
# non-reentrantly (activation_checkpointing_reentrant: false in every
# scripts/train/yamls/pretrain/mpt-*.yaml; Composer wraps it in
# checkpoint_wrapper(CheckpointImpl.NO_REENTRANT)); its benchmark tables of commit b2a43a147
# (2023-10-19) were run by that commit's scripts/train/benchmarking/sweep.sh ("To reproduce table
# results, first run ./sweep.sh", the README), whose every H100 and A100 80GB run uses
# IMAGE="mosaicml/pytorch:2.1.0_cu121-python3.10-ubuntu20.04" (line 5): torch 2.1.0; the
# repository required torch >= 2.1 from commit 2017c0282 (2023-12-07). The spring-2023 tables
# (300cc5c58, 2023-05-03) pin torch==1.13.1. Megatron-LM recomputes with its own reentrant
# CheckpointFunction: the whole forward. torchtitan's full AC wraps each block in
# ptd_checkpoint_wrapper(module, preserve_rng_state=False) (torchtitan/parallelisms/
# parallelize_llama.py line 234 at 9dec370, 2024-12-26; torchtitan/models/llama3/
# parallelize_llama.py line 238 at 820504e, 2025-06-13), whose default checkpoint_impl is
# CheckpointImpl.NO_REENTRANT, on PyTorch nightlies (>= 2.1): early stop, eager or compiled (the
# compiled partitioner recomputes only what backward reads, which excludes the down projection's
# output as well). The date is that of the earlier of the two commits the published runs name.
RECOMPUTE_EARLY_STOP_SOURCES = {"mosaicml/llm-foundry": (2023, 10, 19),
                                "pytorch/torchtitan": (2024, 12, 26)}
# torchtitan's per-op selective checkpoint for the runs a source calls "selective": sources
# naming a repository, dated on or after the day its configs first stated it. torchtitan's
# selective AC with selective_ac_option = 'op' (the policy of commit 2c8cec2bf, 2024-02-29,
# "Saves output of all compute ops, except every second mm") is what its Llama 3 configs set
# from 2db26cf34 (2024-04-22): train_configs/llama3_8b.toml there, at 9dec370 (the December 2024
# runs) and torchtitan/models/llama3/train_configs/llama3_8b.toml at 820504e (June 2025 async-TP
# page, "per op SAC") and e7c0cae (the Trainy runs) all read mode = 'selective',
# selective_ac_option = 'op'. Applied to selective recompute only (docs/model.md §11).
RECOMPUTE_OP_SAC_SOURCES = {"pytorch/torchtitan": (2024, 4, 22)}
# FSDP's gradient reduce-scatter in float32 (4 bytes per parameter; the parameters still gathered
# in bf16): sources naming a repository, dated on or after the day its published runs were on a
# framework that reduces in float32. llm-foundry's benchmark tables print "MP Mode" DEFAULT for
# every row since commit b2a43a147 (submit_benchmarks.py does not forward its
# --fsdp_config_mixed_precision; mod_parameters' fsdp_config_mixed_precision='DEFAULT', line 268
# at 5e85bd62d), and Composer's get_mixed_precision maps DEFAULT to MixedPrecision(param_dtype=
# bf16, reduce_dtype=torch.float32, buffer_dtype=bf16) from v0.16.4 (composer commit d745fcb1b,
# 2023-10-10, "patch default"; composer/trainer/mosaic_fsdp_utils.py at v0.16.4, v0.17.0-v0.17.2;
# before it reduce_dtype None, i.e. the bf16 param_dtype); PyTorch FSDP casts each gradient to
# reduce_dtype before its reduce-scatter (torch/distributed/fsdp/_runtime_utils.py,
# _post_backward_hook). The January-2024 table (commit 5e85bd62d, 2024-01-06) ran llm-foundry's
# main (submit_benchmarks.py run_config: git_branch 'main'), whose setup.py then required
# mosaicml>=0.17.1 (613457a1c, 2023-11-27) or >=0.17.2 (1c4ebbf4e, 2024-01-03): float32. The
# October-2023 tables ran the v0.3.0 branch (run_config at b2a43a147), which allows
# mosaicml>=0.16.3,<0.17: 0.16.3 reduces in bf16, 0.16.4 in float32, so which one ran is not
# known and they keep the default; the spring-2023 tables say PURE (bf16 reduce). torchtitan
# wraps FSDP2 in MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=float32) with
# training.mixed_precision_reduce "float32", its default and only choice at every commit its
# benchmark pages name (torchtitan/config_manager.py: choices=["float32"] at 9dec370, 2024-12-26;
# Literal["float32"] at 820504e and e7c0cae; parallelize_llama.py line 91 at 9dec370).
REDUCE_FP32_SOURCES = {"mosaicml/llm-foundry": (2024, 1, 6), "pytorch/torchtitan": (2024, 12, 26)}
# Megatron-Core's distributed optimizer (ZeRO-1) holds its main_grad buffer in the gradients'
# reduce dtype, fp32 by the framework's default (memory.MAIN_GRAD_BYTES, docs/model.md §4).
# NVIDIA's performance recipes turn it to bf16: Megatron-Bridge's perf configs set
# cfg.ddp.grad_reduce_in_fp32 = False, NeMo 2.0's fp8 perf scripts
# recipe.trainer.plugins.grad_reduce_in_fp32 = False, and the NeMo 1.x launcher's example scripts
# +training.model.optim.grad_sync_dtype=bf16 (megatron_base_model.py then sets
# grad_reduce_in_fp32 = grad_sync_dtype == 'fp32'), except its Nemotron scripts, which drop it
# (79f92438, 2024-04-10): those keep the default. With fp32 main grads the published H100 rows of
# Llama 3 70B and 405B would need 81 of 80 GiB. Sources naming a repository; models whose names
# hold an excepted family keep the default.
BF16_MAIN_GRAD_SOURCES = {"NVIDIA-NeMo/Megatron-Bridge": (), "NVIDIA/NeMo": ("nemotron",)}
TP_OVERLAP_FROM_YEAR = 2024  # Megatron-Core + Transformer Engine runs overlap tp collectives
# with the matmuls (userbuffers; on in NeMo / Megatron-Bridge performance recipes)
# the interleaved schedule's sends overlap compute (Megatron-Core's overlap_p2p_comm): set for
# interleaved layouts by NeMo's launcher configs of 2024 (llama2_70b.yaml: overlap_p2p_comm
# true, batch_p2p_comm false), NeMo 2.0's MegatronCommOverlapCallback and Megatron-Bridge's
# comm_overlap.py (pp > 1 and vp > 1), and by Megatron-LM's training arguments
# (--no-overlap-p2p-communication turns it off); Narayanan 2021's Megatron-LM sent blocking
P2P_OVERLAP_FROM_YEAR = 2024
EFFICIENCY_BOUNDS = (0.02, 1.0)  # where the anchor's efficiency is searched
TARGETS = {"median_abs_pct": 5.0, "mean_abs_pct": 8.0, "max_abs_pct": 20.0}

DEFAULTS = {
    "inter_node_kind": DEFAULT_INTER_KIND,
    "nics_per_node": "one per GPU",
    "gbit_per_nic": DEFAULT_GBIT_PER_NIC,
    "vocab": "the model family's in the framework the source names ("
             + "; ".join(f"{repo} from {y:04d}-{m:02d}-{d:02d}: "
                         + ", ".join(f"{fam} {v:,}" for fam, v in families)
                         for repo, ((y, m, d), families) in SOURCE_VOCAB.items())
             + f"), else {DEFAULT_VOCAB:,}",
    "micro_batch": DEFAULT_MICRO_BATCH,
    "recompute": DEFAULT_RECOMPUTE,
    "sequence_parallel": "true when tp > 1",
    "virtual_stages": "1 (interleaved without a count: 2)",
    "schedule": "1f1b when pp > 1, else none",
    "architecture": "gated MLP when ffn_hidden != 4 hidden (then Llama conventions: RMSNorm, "
                    "no biases, untied output, rotary); else GPT conventions (LayerNorm, biases, "
                    "tied, learned positions)",
    "flash_attention": f"sources dated {FLASH_ATTENTION_FROM_YEAR} or later",
    "tp_overlap": f"sources dated {TP_OVERLAP_FROM_YEAR} or later",
    "p2p_overlap": f"the interleaved schedule's sends overlap compute for sources dated "
                   f"{P2P_OVERLAP_FROM_YEAR} or later (Megatron-Core's overlap_p2p_comm), "
                   "blocking before",
    "attention_kernel": f"fused attention: {VENDOR_KERNEL} for sources naming "
                        + " or ".join(VENDOR_ATTENTION_SOURCES) + f" (Transformer Engine), else "
                        f"{FLASH2_KERNEL} (FlashAttention-2 class: on Hopper its attention core "
                        f"sustains {FLASH2_ON_HOPPER_EFFICIENCY} of the 16-bit peak); either "
                        f"kernel on A100: {ATTENTION_ON_A100_EFFICIENCY:.3f} (FlashAttention-2's "
                        "forward and backward maxima, as Transformer Engine runs it there); "
                        "elsewhere the matmuls' efficiency",
    "fsdp_reduce_fp32": "FSDP reduce-scatters gradients in float32 (4 bytes per parameter) for "
                        "sources of " + ", ".join(f"{r} dated {y:04d}-{m:02d}-{d:02d} or later"
                                                  for r, (y, m, d) in REDUCE_FP32_SOURCES.items())
                        + " (Composer's DEFAULT mixed precision since v0.16.4; torchtitan's "
                        "mixed_precision_reduce), else in the gathered 16-bit dtype",
    "recompute_early_stop": "full recompute skips the MLP's down projection for sources of "
                            + ", ".join(f"{r} dated {y:04d}-{m:02d}-{d:02d} or later"
                                        for r, (y, m, d) in RECOMPUTE_EARLY_STOP_SOURCES.items())
                            + " (PyTorch non-reentrant checkpoint, early stop, torch >= 2.1)",
    "recompute_op_sac": "selective recompute is torchtitan's per-op selective checkpoint for "
                        "sources of " + ", ".join(f"{r} dated {y:04d}-{m:02d}-{d:02d} or later"
                                                  for r, (y, m, d) in
                                                  RECOMPUTE_OP_SAC_SOURCES.items())
                        + " (selective_ac_option 'op'), else Korthikanti's attention-core recompute",
    "peak": "datasheet dense 16-bit peak of the GPU (fp8: the fp8 peak for weight matmuls, the "
            "16-bit peak for the attention core); a GPU no table lists: a nominal "
            f"{UNLISTED_PEAK_TFLOPS:g} TFLOP/s (fp8 {FP8_PEAK_RATIO:g}x), flagged (the anchor "
            "absorbs its scale)",
    "memory_bandwidth": "datasheet memory bandwidth of the GPU; unlisted: the 16-bit peak over "
                        f"{UNLISTED_FLOP_PER_BYTE:g} FLOP per byte, flagged",
    "intra_node": "the format's names, nvlink-v100 read as the presets' nvlink2",
    "device_memory": "the size in the GPU's name ('A100 40GB'), else its datasheet size "
                     "(presets.device_memory_of); a layout that would not fit is flagged",
    "comm_compute_contention": GPU_COMM_CONTENTION,
    "device_speed_cv": DEVICE_SPEED_CV,
    "bytes_per_param": "weights 2, gradients 2 (wire 2), optimizer 12 (mixed-precision Adam)",
    "tflops_per_gpu": "hardware FLOPs (model + recomputation), as Narayanan 2021 Eq. 3",
}


# ---------------------------------------------------------------------------- the file format
class _Strict(StrictModel):
    numbers_as_text = True  # a published case's "1.3e9" is that number (schemas._Strict)


class PCModel(_Strict):
    name: str
    layers: int = bounded("layers")
    hidden: int = bounded("model_width")
    heads: int = bounded("model_width")
    kv_heads: int | None = bounded("model_width", None)
    ffn_hidden: int | None = bounded("model_width", None)
    seq_len: int = bounded("seq_len")
    vocab: int | None = bounded("vocab", None)
    params: float | None = bounded("params", None)

    @model_validator(mode="after")
    def _heads_divide(self) -> PCModel:
        check_heads(self.hidden, self.heads, self.kv_heads)
        return self


class PCInterNode(_Strict):
    kind: Literal["infiniband", "roce", "ethernet"] | None = None
    nics_per_node: int | None = bounded("nics_per_node", None)
    gbit_per_nic: float | None = bounded("gbit_per_nic", None)


class PCHardware(_Strict):
    gpu: str
    gpus_per_node: int = bounded("devices_per_node")
    intra_node: str
    inter_node: PCInterNode | None = None


def allocation_of(hw: PCHardware) -> int | None:
    """The allocation unit of a case's servers, devices: its GPU's compute tray where one
    divides the server (GB200 NVL72: 4 of the rack's 72, ``presets.ALLOCATION_DEVICES``), else
    None (the server is the unit; docs/model.md §12)."""
    return server_tray(hw.gpu, hw.gpus_per_node)


class PCLayout(_Strict):
    devices: int = bounded("devices")
    dp: int = bounded("devices")
    tp: int = bounded("tp_degree")
    pp: int = bounded("pp_degree")
    cp: int = bounded("devices", 1)
    ep: int = bounded("devices", 1)
    zero: int = Field(ge=0, le=3, description=ZERO_STAGE_HELP)
    micro_batch: int | None = bounded("micro_batch", None)
    global_batch: int = bounded("global_batch")
    schedule: Literal["none", "gpipe", "1f1b", "interleaved", "zb"] | None = None
    virtual_stages: int | None = bounded("virtual_stages", None)
    recompute: Literal["none", "selective", "full"] | None = None
    sequence_parallel: bool | None = None


# The quantity of the bounds table (scalesim.bounds) each published metric is a value of.
METRIC_QUANTITY = {"tflops_per_gpu": "peak_tflops", "step_time_s": "positive_duration_s",
                   "tokens_per_s_per_gpu": "samples_per_s", "samples_per_s": "samples_per_s"}


class PCMeasured(_Strict):
    metric: Literal["tflops_per_gpu", "step_time_s", "tokens_per_s_per_gpu", "samples_per_s"]
    value: float = Field(gt=0, description="the metric's value, in its unit (TFLOP/s per GPU, "
                         "s, tokens/s per GPU or samples/s); bounded as METRIC_QUANTITY says")
    mfu: float | None = bounded("fraction", None, "model FLOPs utilisation as published (a "
                                "share, not a percentage; not used by the model)")

    @model_validator(mode="after")
    def _value_in_bounds(self) -> PCMeasured:
        why = bound(METRIC_QUANTITY[self.metric]).problem(self.value)
        if why is not None:
            raise ValueError(f"value of metric {self.metric}: {why}")
        return self


class ParallelCase(_Strict):
    id: CaseName
    group: CaseName
    anchor: bool
    source: str
    trust: Literal["high", "medium", "low"]
    notes: str = ""
    model: PCModel
    hardware: PCHardware
    precision: Literal["bf16-mixed", "fp16-mixed", "fp8", "fp32"] | None = None
    layout: PCLayout
    measured: PCMeasured
    WORDS: ClassVar[dict] = PC_WORDS  # other spellings and null defaults (case_words)
    _read_flags: tuple[str, ...] = PrivateAttr(default=())  # the reader's (read_case_list)


# Every hardware.intra_node this reader takes: the format's names, then the other presets.
INTRA_NODE_NAMES = tuple(dict.fromkeys(("nvswitch-a100", "nvswitch-h100", "nvl72-gb200",
                                        *INTRA_NODE_ALIASES, "nvswitch-v100", "pcie3", "pcie4",
                                        *INTRA_LINKS)))


def _check_parallel_case(case: ParallelCase, where: str) -> None:
    lay = case.layout
    if lay.dp * lay.tp * lay.pp * lay.cp != lay.devices:
        product = lay.dp * lay.tp * lay.pp * lay.cp
        raise ScalesimError(f"{where}: devices {lay.devices} != "
                            f"{split_words(lay.dp, lay.tp, lay.pp, lay.cp)} = {product}: a layout "
                            "splits every device once; give layout.devices the product, or "
                            "the degrees the run used")
    # Refused: fewer than one micro-batch per replica, or a fraction of a head per tensor-
    # parallel rank (Megatron-Core asserts whole heads). A global batch that dp x micro-batch
    # does not divide but fills it at least once is predicted as published, with a layout note:
    # frameworks with a microbatching engine run it (llm-foundry's README: "a total batch size of
    # 48, and a micro batch of 11, means we will accumulate gradients across microbatches of 11,
    # 11, 11, 11, 4"), the same tokens as the model's fractional micro-step count.
    micro = lay.micro_batch if lay.micro_batch is not None else DEFAULT_MICRO_BATCH
    short = lay.global_batch < lay.dp * micro
    problems = (unrunnable_split(lay.global_batch, lay.dp, micro) if short else [])
    problems += unrunnable_split(tp=lay.tp, heads=case.model.heads)
    # the case file's fields, not flags; a line with the CLI's own says it ('dp 4', a field)
    problems = [in_words_of(p, str, cli=True) for p in problems]
    if problems:
        raise ScalesimError(f"{where}: {'; '.join(problems)}: no framework runs that layout; "
                            "check the case's layout and model against its source")
    # A GPU the datasheet table lists without an fp8 peak has no fp8 tensor cores (A100, V100):
    # an fp8 run on it is a transcription error, not an unlisted GPU (UNLISTED_PEAK_TFLOPS)
    if (case.precision == "fp8" and peak_tflops_of(case.hardware.gpu) is not None
            and peak_tflops_of(case.hardware.gpu, True) is None):
        raise ScalesimError(f"{where}: precision fp8 on GPU '{case.hardware.gpu}', whose "
                            "datasheet lists no fp8 peak (no fp8 tensor cores); check the case's "
                            "precision and GPU against its source")
    if intra_preset(case.hardware.intra_node) not in INTRA_LINKS:
        raise ScalesimError(f"{where}: unknown hardware.intra_node "
                            f"'{excerpt(case.hardware.intra_node)}'; use one of "
                            f"{', '.join(INTRA_NODE_NAMES)}")


HINT = " (see scalesim/data/validation/parallel_cases.md)"


def _anchor_problem(where: str, group: str, anchors: int) -> str:
    return (f"{where}: group '{group}' has {anchors} anchor cases; the anchor rule needs exactly "
            "one")


def _anchor_lost(where: str, group: str, anchor_id: str, how: str) -> str:
    """The reason of a case whose group's anchor case is listed as skipped (``how``: unread,
    not predicted): nothing else may pin the group's efficiency."""
    return (f"{where}: group '{group}' has its anchor case {anchor_id!r} {how} (see its "
            "reason), so nothing pins the group's efficiency: not predicted")


def _anchors_per_group(cases: list[ParallelCase]) -> dict[str, int]:
    """How many of ``cases`` each group marks as its anchor (the rule: exactly one)."""
    anchors: dict[str, int] = {}
    for c in cases:
        anchors[c.group] = anchors.get(c.group, 0) + int(c.anchor)
    return anchors


def parse_parallel_cases(data, what: str = "parallel cases file") -> list[ParallelCase]:
    """Validate parsed JSON as ``scalesim-parallel-cases/1``, every case read; one-line errors."""
    cases = parse_case_list(data, FORMAT, ParallelCase, what, HINT, _check_parallel_case)
    for group, anchors in _anchors_per_group(cases).items():
        if anchors != 1:
            raise ScalesimError(_anchor_problem(what, group, anchors))
    return cases


def read_parallel_cases(data, what: str = "parallel cases file") -> CaseFile[ParallelCase]:
    """A ``scalesim-parallel-cases/1`` file read case by case (``read_case_list``). A group
    without exactly one read anchor case cannot be predicted: its cases are skipped, naming the
    unreadable anchor where the file has one; a file none of whose cases can be predicted
    raises its one-line error."""
    read = read_case_list(data, FORMAT, ParallelCase, what, HINT, _check_parallel_case)
    raw = data["cases"]
    anchors = _anchors_per_group(read.cases)
    # the unreadable cases that say they anchor a group: the group's name -> its Skipped
    lost = {raw[s.position]["group"]: s for s in read.skipped
            if isinstance(raw[s.position], dict) and raw[s.position].get("anchor") is True
            and isinstance(raw[s.position].get("group"), str)}
    cases, skipped = [], list(read.skipped)
    for c in read.cases:
        n = anchors[c.group]
        if n == 1:
            cases.append(c)
            continue
        where = f"{what}: case {c.id!r}"
        if n == 0 and c.group in lost:
            why = _anchor_lost(where, c.group, lost[c.group].id, "unread")
        else:
            why = _anchor_problem(where, c.group, n)
        skipped.append(Skipped(id=c.id, reason=why))
    if not cases:
        raise none_read(what, skipped, read.total)
    return CaseFile(cases=cases, skipped=skipped, total=read.total, ignored=read.ignored)


def load_parallel_cases(path: str | Path) -> list[ParallelCase]:
    return parse_parallel_cases(read_json(path), str(path))


# ---------------------------------------------------------------------------- case -> inputs
def _year(source: str) -> int | None:
    years = [int(y) for y in re.findall(r"\b(20\d\d)\b", source)]
    return years[0] if years else None


def _date(source: str) -> tuple[int, int, int] | None:
    """The first ISO date (YYYY-MM-DD) the source names, else None."""
    found = re.search(r"\b(20\d\d)-(\d\d)-(\d\d)\b", source)
    return tuple(int(g) for g in found.groups()) if found else None


def _named_since(source: str, since_by_repo: dict) -> bool:
    """Whether ``source`` names a repository of ``since_by_repo`` and its first ISO date is on
    or after that repository's day."""
    date = _date(source)
    return date is not None and any(repo in source and date >= since
                                    for repo, since in since_by_repo.items())


def recompute_early_stop_of(source: str) -> bool:
    """Whether a source's full recompute is PyTorch's non-reentrant checkpoint with early stop:
    it names a repository of ``RECOMPUTE_EARLY_STOP_SOURCES`` and is dated on or after the day
    that repository's published runs were on torch >= 2.1."""
    return _named_since(source, RECOMPUTE_EARLY_STOP_SOURCES)


def recompute_op_sac_of(source: str) -> bool:
    """Whether a source's selective recompute is torchtitan's per-op selective checkpoint: it
    names a repository of ``RECOMPUTE_OP_SAC_SOURCES`` and is dated on or after that day."""
    return _named_since(source, RECOMPUTE_OP_SAC_SOURCES)


def reduce_fp32_of(source: str) -> bool:
    """Whether a source's FSDP reduces gradients in float32: it names a repository of
    ``REDUCE_FP32_SOURCES`` and is dated on or after that repository's day."""
    return _named_since(source, REDUCE_FP32_SOURCES)


def bf16_main_grad_of(source: str, model_name: str) -> bool:
    """Whether a source's Megatron-Core runs reduce, and so hold, their gradients in bf16
    (``BF16_MAIN_GRAD_SOURCES``): it names such a repository and the model is not one of its
    excepted families."""
    name = model_name.lower()
    return any(repo in source and not any(f in name for f in excepted)
               for repo, excepted in BF16_MAIN_GRAD_SOURCES.items())


REDUCE_FP32_WORDS = (
    "FSDP mixed precision not stated in the format: gradients reduce-scattered in float32 "
    "assumed (the framework's reduce dtype for this source: llm-foundry's Composer DEFAULT "
    "from v0.16.4, torchtitan's mixed_precision_reduce)")
BF16_MAIN_GRAD_WORDS = (
    "gradient dtype not stated: the distributed optimizer's main grads held and reduced in bf16 "
    "assumed (NVIDIA's performance recipes set grad_reduce_in_fp32 False / grad_sync_dtype "
    "bf16), not the framework's fp32")
# Megatron-LM's --fp16 keeps its main grads (DDP's and the distributed optimizer's buffer) in
# fp16: only --bf16 turns accumulate_allreduce_grads_in_fp32 on (arguments.py)
FP16_MAIN_GRAD_WORDS = (
    "precision fp16-mixed: gradients held and reduced in fp16 (Megatron-LM's --fp16 leaves "
    "accumulate_allreduce_grads_in_fp32 off), not the fp32 of bf16 training")


def stated_reduce(case: ParallelCase, zero: int) -> tuple[float, tuple[str, ...]]:
    """Bytes per parameter the validator states for the gradients' reduction of ``case`` at
    ZeRO stage ``zero`` (NaN where the framework's default applies) and the flags saying why:
    4 where the source's FSDP reduces in float32 (zero >= 2, ``reduce_fp32_of``); 2 where its
    Megatron-Core runs hold bf16 main grads (zero 1, ``bf16_main_grad_of``) or it trains in
    fp16-mixed (zero <= 1: Megatron-LM's ``--fp16`` leaves accumulate_allreduce_grads_in_fp32
    off; the two may both hold). One rule for ``case_inputs`` and, through
    ``stated_reduce_bytes``, the planner benchmark's other layouts."""
    fp32 = zero >= 2 and reduce_fp32_of(case.source)
    bf16 = zero == 1 and bf16_main_grad_of(case.source, case.model.name)
    fp16 = zero <= 1 and case.precision == "fp16-mixed"
    words = tuple(w for held, w in ((fp32, REDUCE_FP32_WORDS), (bf16, BF16_MAIN_GRAD_WORDS),
                                    (fp16, FP16_MAIN_GRAD_WORDS)) if held)
    return (4.0 if fp32 else 2.0 if bf16 or fp16 else np.nan), words


def stated_reduce_bytes(case: ParallelCase, zero) -> np.ndarray:
    """``stated_reduce``'s bytes at ZeRO stage(s) ``zero`` (0-3; numpy, any shape)."""
    return np.array([stated_reduce(case, z)[0] for z in range(4)])[np.asarray(zero)]


def source_vocab_of(source: str, model_name: str) -> int | None:
    """The vocabulary the framework a source names uses for the case's model family
    (``SOURCE_VOCAB``), or None."""
    name = model_name.lower().replace("-", "").replace(".", "").replace(" ", "")
    for repo, (since, families) in SOURCE_VOCAB.items():
        if _named_since(source, {repo: since}):
            return next((v for family, v in families if family in name), None)
    return None


# model.params is a nominal label in many sources (Nemotron "22B": 19.7 B from its shape); a
# larger gap says the shape does not describe the model (a mixture of experts): flagged
PARAMS_FLAG_SHARE = 0.25


def _or_default(value, default, name: str, flags: list[str], note: str = ""):
    """``value``, or ``default`` where the source does not state it (flagged on the case)."""
    if value is not None:
        return value
    flags.append(f"{name} unknown: {default} assumed{note}")
    return default


def case_inputs(case: ParallelCase, flags: list[str]) -> tuple[LayoutInputs, ParallelLayout]:
    """The model's inputs for one case (efficiency 1: the anchor sets it); flags name defaults."""
    m, hw, lay = case.model, case.hardware, case.layout
    gpu = read_gpu_name(hw.gpu, flags)  # the name as the datasheet tables read it
    kv = _or_default(m.kv_heads, m.heads, "kv_heads", flags,
                     " (multi-head attention: kv_heads = heads)")
    ffn = _or_default(m.ffn_hidden, 4 * m.hidden, "ffn_hidden", flags, " (4 x hidden)")
    gated = ffn != 4 * m.hidden
    framework_vocab = None if m.vocab is not None else source_vocab_of(case.source, m.name)
    vocab = _or_default(m.vocab, framework_vocab or DEFAULT_VOCAB, "vocab", flags,
                        " (the source's framework's for this model family)"
                        if framework_vocab else "")
    year = _year(case.source)
    if year is None:
        flags.append(f"source names no year: unfused attention and no tp overlap assumed (only "
                     f"sources dated {FLASH_ATTENTION_FROM_YEAR} or later get flash attention, "
                     f"{TP_OVERLAP_FROM_YEAR} or later tp overlap)")
    flash = year is not None and year >= FLASH_ATTENTION_FROM_YEAR
    params = float(parameter_count(m.layers, m.hidden, m.heads, kv, ffn, gated, m.seq_len, vocab,
                                   not gated, not gated, not gated, not gated))
    if lay.ep > 1:
        flags.append(f"expert parallelism ep {lay.ep} is not modelled (dense layers assumed)")
    if m.params is not None and abs(m.params / params - 1) > PARAMS_FLAG_SHARE:
        flags.append(f"model.params {m.params / 1e9:.3g}B is {m.params / params:.2f}x the "
                     f"{params / 1e9:.3g}B its shape gives: predicted from the shape (the "
                     "format has no experts: a mixture of experts is predicted as dense)")
    micro = _or_default(lay.micro_batch, DEFAULT_MICRO_BATCH, "micro_batch", flags)
    recompute = _or_default(lay.recompute, DEFAULT_RECOMPUTE, "recompute", flags)
    sp = _or_default(lay.sequence_parallel, lay.tp > 1, "sequence_parallel", flags,
                     f" (tp {lay.tp})")
    schedule = _or_default(lay.schedule, "1f1b" if lay.pp > 1 else "none", "schedule", flags)
    if lay.pp == 1:
        if schedule != "none":  # as published, but one stage has no pipeline to schedule
            flags.append(f"layout.schedule {schedule} with pp 1: no pipeline, predicted as "
                         "schedule none")
        schedule = "none"
    v = lay.virtual_stages or (2 if schedule == "interleaved" else 1)
    if schedule != "interleaved":
        if v != 1:
            flags.append(f"layout.virtual_stages {v} without the interleaved schedule "
                         f"(schedule {schedule}): predicted with one model chunk per stage")
        v = 1
    tp_overlap = year is not None and year >= TP_OVERLAP_FROM_YEAR and lay.tp > 1
    p2p_overlap = year is not None and year >= P2P_OVERLAP_FROM_YEAR
    if interleaves(schedule, lay.pp, v):
        flags.append("pipeline sends not stated: " + (
            "overlapped with the next chunk's compute assumed (Megatron-Core's overlap_p2p_comm, "
            f"which its frameworks set for interleaved layouts; source dated "
            f"{P2P_OVERLAP_FROM_YEAR} or later)" if p2p_overlap else
            "blocking assumed (" + ("the source names no year" if year is None else
                                    f"source dated before {P2P_OVERLAP_FROM_YEAR}") + ")"))
    kernel = VENDOR_KERNEL if any(s in case.source for s in VENDOR_ATTENTION_SOURCES) else (
        FLASH2_KERNEL)
    attention_efficiency = attention_efficiency_of(gpu, kernel) if flash else None
    if attention_efficiency is not None:  # flash2, or either kernel on an A100
        stack = ("a Transformer Engine stack" if kernel == VENDOR_KERNEL
                 else "not a Transformer Engine stack")
        flags.append(f"attention kernel not stated: {kernel} assumed ({stack}): the attention "
                     f"core at {attention_efficiency:.3g} of the 16-bit peak")
    prefetch_post = lay.zero >= 3 and any(s in case.source for s in BACKWARD_PREFETCH_POST_SOURCES)
    if prefetch_post:
        flags.append("FSDP backward prefetch not stated: Composer's default BACKWARD_POST assumed "
                     "(the source is llm-foundry)")
    reduce_bytes, reduce_words = stated_reduce(case, lay.zero)
    flags.extend(reduce_words)
    early_stop = recompute == "full" and recompute_early_stop_of(case.source)
    if early_stop:
        flags.append("full recompute: PyTorch's non-reentrant checkpoint with early stop assumed "
                     "(the source is llm-foundry on torch >= 2.1, or torchtitan's checkpoint_wrapper): "
                     "the MLP's down projection is not recomputed")
    op_sac = recompute == "selective" and recompute_op_sac_of(case.source)
    if op_sac:
        flags.append("selective recompute: torchtitan's per-op selective checkpoint assumed (its "
                     "configs set selective_ac_option 'op'): every second matmul rerun, the "
                     "attention output saved")
    style = "early-stop" if early_stop else "op-sac" if op_sac else "whole-forward"
    layout = ParallelLayout(dp=lay.dp, tp=lay.tp, pp=lay.pp, cp=lay.cp, zero=lay.zero,
                            micro_batch=micro, global_batch=lay.global_batch, schedule=schedule,
                            virtual_stages=v, recompute=recompute,
                            recompute_style=style,
                            sequence_parallel=sp, tp_overlap=tp_overlap)
    for problem in layout_problems(layout, hw.gpus_per_node, layers=m.layers, heads=m.heads,
                                   kv_heads=kv, seq_len=m.seq_len, allocation=allocation_of(hw)):
        flags.append("layout note (predicted as published): "  # the case file's fields
                     f"{in_words_of(problem, str, cli=True)}")

    fp8 = case.precision == "fp8"
    if case.precision is None:
        flags.append("precision unknown (the source says only 'mixed precision'): 16-bit mixed "
                     "precision assumed, at the 16-bit tensor peak")
    if case.precision == "fp32":
        flags.append("precision fp32: predicted at the 16-bit tensor peak with 16-bit weights, "
                     "as a mixed-precision run (the model has no fp32 transformer path; the "
                     "group's anchor absorbs a common scale)")
    peak = peak_tflops_of(gpu, fp8)
    core_peak = peak_tflops_of(gpu, False) if fp8 else peak
    if peak is None or core_peak is None:  # a GPU the datasheet tables do not list
        peak = (UNLISTED_PEAK_TFLOPS * (FP8_PEAK_RATIO if fp8 else 1.0), "")
        core_peak = (UNLISTED_PEAK_TFLOPS, "")
        flags.append(f"no datasheet peak for GPU '{gpu}'{' at fp8' if fp8 else ''}: a nominal "
                     f"{UNLISTED_PEAK_TFLOPS:g} TFLOP/s 16-bit peak (fp8 {FP8_PEAK_RATIO:g}x), whose "
                     "scale the group's anchor absorbs into its efficiency")
    bandwidth = memory_bandwidth_of(gpu)
    if bandwidth is None and memory_bandwidth_of(f"{gpu} SXM") is not None:
        # Multi-GPU training servers (HGX/DGX) hold the SXM board; the source names no form.
        bandwidth = memory_bandwidth_of(f"{gpu} SXM")
        flags.append("GPU form factor not stated: SXM memory bandwidth assumed")
    if bandwidth is None:
        bandwidth = (core_peak[0] * 1e3 / UNLISTED_FLOP_PER_BYTE, "")
        flags.append(f"no datasheet memory bandwidth for '{gpu}': the 16-bit peak over "
                     f"{UNLISTED_FLOP_PER_BYTE:g} FLOP per byte ({bandwidth[0]:,.0f} GB/s) assumed")
    memory = device_memory_of(gpu)
    if memory is None:
        flags.append(f"device memory of '{gpu}' unknown: whether the layout fits is not checked")
    intra = intra_link(intra_preset(hw.intra_node))
    if note := cube_mesh_note(intra_preset(hw.intra_node), hw.gpus_per_node):
        flags.append(note)
    net = hw.inter_node
    if net is None and lay.devices > hw.gpus_per_node:
        # null means one server, yet the layout spans several: the network defaults, flagged
        flags.append(f"hardware.inter_node null but {lay.devices} devices span "
                     f"{-(-lay.devices // hw.gpus_per_node)} servers of {hw.gpus_per_node}: the "
                     "network is read as unstated")
        net = PCInterNode()
    if net is None:
        inter = intra
    else:
        kind = net.kind or DEFAULT_INTER_KIND
        nics = net.nics_per_node or hw.gpus_per_node * NICS_PER_GPU
        gbit = net.gbit_per_nic or default_gbit_per_nic(gpu)
        if None in (net.kind, net.nics_per_node, net.gbit_per_nic):
            flags.append(f"inter-node link partly unknown: {nics} x {gbit:g} Gb/s {kind} assumed")
        inter = inter_link(kind, nics, gbit)
    inputs = LayoutInputs(
        layers=m.layers, hidden=m.hidden, heads=m.heads, kv_heads=kv, ffn_hidden=ffn,
        gated=gated, seq_len=m.seq_len, vocab=vocab, tied_embeddings=not gated,
        flash_attention=flash, params=params,
        dp=lay.dp, tp=lay.tp, pp=lay.pp, cp=lay.cp, zero=lay.zero, micro_batch=micro,
        global_batch=lay.global_batch, schedule=SCHEDULES[schedule], virtual_stages=v,
        recompute=RECOMPUTE[recompute], sequence_parallel=sp, tp_overlap=tp_overlap,
        p2p_overlap=p2p_overlap,
        devices_per_node=min(hw.gpus_per_node, lay.devices),
        peak_flops_per_s=peak[0] * 1e12, efficiency=1.0,
        peak16_flops_per_s=core_peak[0] * 1e12, fp8=fp8, attention_efficiency=attention_efficiency,
        memory_bandwidth_GBps=bandwidth[0], intra_latency_s=intra.latency_s,
        intra_busbw_GBps=intra.busbw_GBps, inter_latency_s=inter.latency_s,
        inter_busbw_GBps=inter.busbw_GBps, comm_contention=GPU_COMM_CONTENTION,
        nvls_busbw_ratio=nvls_busbw_ratio(intra),
        device_cv=DEVICE_SPEED_CV,
        device_memory_bytes=np.inf if memory is None else memory[0],
        fsdp_backward_prefetch_post=prefetch_post,
        recompute_early_stop=early_stop, recompute_op_sac=op_sac,
        reduce_bytes_per_param=reduce_bytes,
    )
    return inputs, layout


def metric_of(case: ParallelCase, inputs: LayoutInputs, result: LayoutResult) -> float:
    """The case's published metric as the model predicts it."""
    devices = case.layout.devices
    metric = case.measured.metric
    if metric == "tokens_per_s_per_gpu":
        value = result.tokens_per_s / devices
    elif metric == "samples_per_s":
        value = result.samples_per_s
    elif metric == "step_time_s":
        value = result.step_time_s
    else:  # tflops_per_gpu: hardware FLOPs, Narayanan's Eq. 3 convention
        value = result.hfu * inputs.peak_flops_per_s / 1e12
    return float(np.asarray(value).reshape(-1)[0])


def _solve_efficiency(case: ParallelCase, inputs: LayoutInputs, flags: list[str]) -> float:
    from scipy.optimize import brentq

    target = case.measured.value
    higher_is_better = case.measured.metric != "step_time_s"

    def gap(eff: float) -> float:
        got = metric_of(case, inputs, evaluate_layouts(inputs.replace(efficiency=eff)))
        if not np.isfinite(got):  # the root finder would stop with a ValueError
            raise ScalesimError(f"case {case.id!r}: the model gave a non-finite prediction for "
                                "the group's anchor, so its efficiency cannot be solved")
        return (got - target) if higher_is_better else (target - got)

    lo, hi = EFFICIENCY_BOUNDS
    if gap(hi) < 0:
        flags.append("anchor unreachable even at the full datasheet peak: efficiency 1 used")
        return hi
    if gap(lo) > 0:
        flags.append(f"anchor below {lo} of peak: efficiency {lo} used")
        return lo
    return float(brentq(gap, lo, hi, xtol=1e-9, rtol=1e-10))


# ---------------------------------------------------------------------------- results
class ParallelCaseResult(BaseModel):
    id: str
    group: str
    anchor: bool
    metric: str
    published: float  # in the case's ``metric`` (e.g. tokens/s per GPU)
    predicted: float  # the same metric, predicted
    error_pct: float
    trust: str
    efficiency: float  # the group's sustained matmul efficiency (from its anchor)
    step_time_s: float
    breakdown_s: dict[str, float]
    memory_gib: float
    fits: bool
    flags: list[str]


class ParallelReport(BaseModel):
    cases: list[ParallelCaseResult]
    summary: dict
    skipped: list[Skipped] = Field(default_factory=list)  # cases not predicted, with why


def _stats(errors: list[float]) -> dict:
    """``cases``: how many predicted cases; then their absolute-error figures (percent)."""
    return {"cases": len(errors), **abs_error_figures(errors)}


def _peak_said(case: ParallelCase, inputs: LayoutInputs) -> str:
    """A case's GPU and the 16-bit peak the model gives it ('no datasheet peak' where nominal)."""
    peak = inputs.peak16_flops_per_s / 1e12
    said = ("no datasheet peak" if peak == UNLISTED_PEAK_TFLOPS
            else f"a 16-bit peak of {peak:g} TFLOP/s")
    return f"'{case.hardware.gpu}' ({said})"


def other_gpu_problem(case: ParallelCase, inputs: LayoutInputs, anchor: ParallelCase,
                      anchor_inputs: LayoutInputs) -> str | None:
    """Why ``case`` cannot take its group's anchor's efficiency (a share of the anchor GPU's
    16-bit peak), or None: one of the two GPUs has no datasheet peak (a nominal one) and the
    other another, so the share means nothing on the case's GPU. Two listed peaks take the
    anchor's share on the case's own peak, as every case of a group does."""
    peaks = (inputs.peak16_flops_per_s, anchor_inputs.peak16_flops_per_s)
    nominal = UNLISTED_PEAK_TFLOPS * 1e12
    if case.anchor or peaks[0] == peaks[1] or nominal not in peaks:
        return None
    return (f"case {case.id!r}: its GPU {_peak_said(case, inputs)} is not its group's anchor's "
            f"{_peak_said(anchor, anchor_inputs)}: the anchor's efficiency is a share of its own "
            f"GPU's peak; a group is one system (parallel_cases.md): give this GPU its own group "
            "and anchor")


def validate_parallel_cases(cases: list[ParallelCase],
                            skipped: list[Skipped] = ()) -> ParallelReport:
    """Anchor each group on its anchor case, predict every other case, report the errors; the
    cases the reader ``skipped`` (``read_parallel_cases``), and any whose prediction is not
    finite, are listed in the report's ``skipped`` and counted in ``summary["skipped_cases"]``."""
    prepared, skipped = {}, list(skipped)
    anchor_of = {c.group: c.id for c in cases if c.anchor}
    for case in cases:
        flags: list[str] = list(case._read_flags)
        try:
            prepared[case.id] = (case, *case_inputs(case, flags), flags)
        except ScalesimError as exc:  # this case alone (its group's, if it is the anchor)
            skipped.append(Skipped(id=case.id, reason=str(exc)))
    efficiency = {}
    for case, inputs, _layout, flags in prepared.values():
        if case.anchor:
            try:
                efficiency[case.group] = _solve_efficiency(case, inputs, flags)
            except ScalesimError as exc:
                skipped.append(Skipped(id=case.id, reason=str(exc)))
    anchor_inputs = {case.group: (case, inputs) for case, inputs, _, _ in prepared.values()
                     if case.anchor}
    results = []
    for case, inputs, _layout, flags in prepared.values():
        if case.group in efficiency and (why := other_gpu_problem(
                case, inputs, *anchor_inputs[case.group])):
            skipped.append(Skipped(id=case.id, reason=why))
            continue
        if case.group not in efficiency:
            if not case.anchor:  # the anchor is listed with its own reason
                where = f"case {case.id!r}"
                skipped.append(Skipped(id=case.id, reason=_anchor_lost(
                    where, case.group, anchor_of[case.group], "not predicted")
                    if case.group in anchor_of else _anchor_problem(where, case.group, 0)))
            continue
        eff = efficiency[case.group]
        x = inputs.replace(efficiency=eff)
        try:
            r = evaluate_layouts(x)
            predicted = metric_of(case, x, r)
        except ScalesimError as exc:
            skipped.append(Skipped(id=case.id, reason=str(exc)))
            continue
        parts = {k: float(getattr(r, k)) for k in PARTS}
        if not np.isfinite(predicted) or predicted <= 0:
            skipped.append(Skipped(id=case.id, reason=f"case {case.id!r}: the model gave a "
                                   "non-finite prediction"))
            continue
        if not bool(r.fits):
            flags.append(f"modelled memory {float(r.memory_bytes) / GIB_BYTES:.0f} GiB exceeds the "
                         f"device's {float(x.device_memory_bytes) / GIB_BYTES:.0f} GiB: the run as "
                         "described would not fit (a setting the case does not state, such as "
                         "recompute or offloading, or the memory model overestimates)")
        results.append(ParallelCaseResult(
            id=case.id, group=case.group, anchor=case.anchor, metric=case.measured.metric,
            published=case.measured.value, predicted=predicted,
            error_pct=100.0 * (predicted / case.measured.value - 1.0), trust=case.trust,
            efficiency=eff, step_time_s=float(r.step_time_s), breakdown_s=parts,
            memory_gib=float(r.memory_bytes) / GIB_BYTES, fits=bool(r.fits), flags=flags))
    errors = [r.error_pct for r in results if not r.anchor]
    overall = _stats(errors)
    summary = {
        "all": overall,
        "groups": {g: _stats([r.error_pct for r in results if r.group == g and not r.anchor])
                   for g in dict.fromkeys(r.group for r in results)},
        "efficiency": efficiency,
        "targets": {**TARGETS, **{
            # None where no non-anchor case was predicted: nothing to meet or miss
            f"{k.removesuffix('_abs_pct')}_met": None if overall[k] is None else overall[k] <= v
            for k, v in TARGETS.items()}},
        "defaults": DEFAULTS,
        "skipped_cases": len(skipped),
    }
    return ParallelReport(cases=results, summary=summary, skipped=skipped)


def validate_parallel_file(path: str | Path) -> ParallelReport:
    """``validate_parallel_cases`` of a cases file (``scalesim validate --parallel --cases``)."""
    return validate_parallel_cases(load_parallel_cases(path))
