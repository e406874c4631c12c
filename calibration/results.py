"""What each phase hands on (and stores for --resume): small pydantic records, no torch."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scalesim.schemas import (
    ComputeCurve,
    Jitter,
    LinkCalibration,
    LinkLevel,
    LoaderCurve,
    MessagePoint,
    NoiseScale,
)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlockTiming(_Record):
    """One transformer block's shard timed at one tensor-parallel degree (medians over ranks
    of each rank's median)."""

    tp: int
    forward_s: float
    backward_s: float
    time_s: float
    spread_s: float
    repeats: int


class BlockResult(_Record):
    module: str
    hidden: int
    heads: int
    ffn_hidden: int
    seq_len: int
    micro_batch: int
    element_bytes: float
    flash_attention: bool
    attention_kernel: str | None = None  # the family SDPA dispatched to (attention_probe)
    points: list[BlockTiming]
    source: str = ""


class ComputeResult(_Record):
    model_name: str
    sample_unit: str = "samples"
    params: int
    element_bytes: int = Field(description="bytes of one parameter / gradient element")
    optimizer: str
    optimizer_state_elements: int
    precision: str
    curve: ComputeCurve
    forward_s: list[float] = Field(default_factory=list, description="median forward per point")
    backward_s: list[float] = Field(default_factory=list, description="median backward per point")
    backward_fraction: float
    activation_bytes_per_sample: float = 0.0
    oom_batch: int | None = None
    block: BlockResult | None = Field(default=None, description="--block-hidden: the block at "
                                      "tensor-parallel shard shapes")


class CollectiveResult(_Record):
    links: list[LinkCalibration]
    messages: list[MessagePoint] = Field(default_factory=list, description="--block-hidden: "
                                         "the tp and pp messages of the block")
    intra: LinkLevel | None = None
    inter: LinkLevel | None = None
    fits: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="level/op -> latency_s, busbw_GBps, rel_rmse")


class LoaderResult(_Record):
    curve: LoaderCurve
    dataset: str
    batch_size: int


class JitterResult(_Record):
    jitter: Jitter
    micro_batch: int
    steps: int
    slowest_share: float = Field(description="share of steps in which the slowest rank was last")
    device_health: list[str] = Field(
        default_factory=list, description="per-device clocks, heat and throttling (NVML), or why "
        "they were not sampled")


class NoiseResult(_Record):
    noise: NoiseScale | None = None
    small_sq_norm: float | None = None
    big_sq_norm: float | None = None
    note: str = ""


RESULT_TYPES: dict[str, type[_Record]] = {
    "compute": ComputeResult,
    "collectives": CollectiveResult,
    "loader": LoaderResult,
    "jitter": JitterResult,
    "noise": NoiseResult,
}


class PhaseRecord(_Record):
    """One finished phase as stored in the state folder."""

    phase: str
    signature: dict[str, Any]
    wall_s: float
    notes: list[str] = Field(default_factory=list)
    result: dict[str, Any]

    def parsed(self):
        return RESULT_TYPES[self.phase].model_validate(self.result)
