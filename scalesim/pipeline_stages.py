"""How a pipeline splits the layers over its stages, and what a user must give to run it.

The layout model charges the fullest pipeline rank (``layout.layers_per_stage``: v chunks of
ceil(L / (pp v)) layers). Where pp x v does not divide the layers, the stages are uneven, and
a framework runs them only when told (docs/model.md §12):

- Megatron-LM asserts num_layers % pp == 0 (megatron/training/arguments.py) unless
  ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` set the first
  / last stage's layers; the middle stages then share the rest evenly, and with interleaving
  every stage's layers are a multiple of the virtual stages (``TransformerConfig``). Other
  splits need ``--pipeline-model-parallel-layout``.
- torchtitan splits by itself (``_generate_llm_fqn_per_model_part``: layers + 1 for the
  embedding + 1 for the output spread evenly over the pp x v stages, the first stages one
  more), so it needs no flag.

``stage_split`` finds the split with the model's fullest stage that Megatron-LM's first/last
flags give: the model's own where they can (every stage but the last full, the last the rest:
``--decoder-last-pipeline-num-layers``); ``uneven_stage_words`` says it in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalesim.figures import count
from scalesim.layout import layers_per_stage

MEGATRON_FIRST = "--decoder-first-pipeline-num-layers"
MEGATRON_LAST = "--decoder-last-pipeline-num-layers"
MEGATRON_LAYOUT = "--pipeline-model-parallel-layout"


@dataclass(frozen=True)
class StageSplit:
    """Layers on each pipeline stage (rank) and on each model chunk, and Megatron-LM's flags."""

    layers: int
    pp: int
    virtual_stages: int
    stages: tuple[int, ...]  # layers per pipeline rank (all its v chunks), first to last
    chunks: tuple[int, ...]  # layers per model chunk, chunk i on stage i % pp (pp x v of them)
    megatron_flags: str | None  # '' where even, None where the first/last flags cannot say it

    @property
    def even(self) -> bool:
        """Every chunk holds the same layers: pp x v divides them."""
        return self.layers % (self.pp * self.virtual_stages) == 0


def _megatron_stages(layers: int, pp: int, v: int, fullest: int):
    """(stages, flags) of the split Megatron-LM's first/last flags give with at most
    ``fullest`` layers a stage, every stage a multiple of ``v``: the fewest flags, then the
    fewest layers on the last stage (it computes the output layer and the loss too; the
    model's split, every stage but the last full, where it runs), then the smallest gap
    between stages; None where none does."""
    best = None
    sizes = range(v, fullest + 1, v)
    for middle in sizes if pp > 2 else (None,):
        for first in sizes:
            last = layers - first - (pp - 2) * (middle or 0)
            if last < v or last > fullest or last % v:
                continue
            stages = (first, *[middle] * (pp - 2), last)
            flags = (middle is not None and first != middle, last != (middle or first))
            key = (sum(flags), last, max(stages) - min(stages))
            if best is None or key < best[0]:
                best = (key, stages, flags)
    if best is None:
        return None
    _, stages, (first_flag, last_flag) = best
    flags = ([f"{MEGATRON_FIRST} {stages[0]}"] if first_flag else []) + (
        [f"{MEGATRON_LAST} {stages[-1]}"] if last_flag else [])
    return stages, " ".join(flags)


def stage_split(layers: int, pp: int, virtual_stages: int = 1) -> StageSplit:
    """The split of ``layers`` over ``pp`` stages of ``virtual_stages`` chunks whose fullest is
    the model's (``layout.layers_per_stage``): even where pp x v divides the layers; else
    Megatron-LM's first/last-stage split (``_megatron_stages``: the fullest stage the model's,
    its chunks equal), or where those flags cannot give it (v > 1: a stage's layers not a
    multiple of v), the layers spread over the pp x v chunks evenly, the first chunks one more
    (the fullest chunk the model's; chunk i on stage i % pp, as Megatron-LM and torchtitan
    interleave)."""
    v = virtual_stages
    chunks = pp * v
    found = None
    if layers % chunks:
        found = _megatron_stages(layers, pp, v, int(layers_per_stage(layers, pp, v)))
    if found is None:
        sizes = tuple(layers // chunks + (i < layers % chunks) for i in range(chunks))
        stages = tuple(sum(sizes[rank::pp]) for rank in range(pp))
        return StageSplit(layers, pp, v, stages, sizes, "" if layers % chunks == 0 else None)
    stages, flags = found
    return StageSplit(layers, pp, v, stages, tuple(stages[i % pp] // v for i in range(chunks)),
                      flags)


def _counts_words(sizes: tuple[int, ...], noun: str) -> str:
    """'8 stages of 9 layers and one of 8': ``sizes`` grouped by their layers, fullest first."""
    groups = sorted({n: sizes.count(n) for n in sizes}.items(), reverse=True)
    parts = [f"{'one ' + noun if k == 1 else count(k, noun)} of {count(n, 'layer')}" if i == 0
             else f"{'one' if k == 1 else k} of {n}" for i, (n, k) in enumerate(groups)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def uneven_stage_words(layers: int, pp: int, virtual_stages: int = 1) -> str:
    """'80 layers over pp 9: 8 stages of 9 layers and one of 8 (Megatron-LM:
    --decoder-last-pipeline-num-layers 8; torchtitan splits it by itself)'; '' where the split
    is even (pp x v divides the layers) or there is no pipeline (pp 1)."""
    split = stage_split(layers, pp, virtual_stages)
    if pp == 1 or split.even:
        return ""
    v = virtual_stages
    head = f"{count(layers, 'layer')} over pp {pp}" + (f" x {v} virtual stages" if v > 1 else "")
    if split.megatron_flags is None:
        return (f"{head}: {_counts_words(split.chunks, 'model chunk')} (Megatron-LM: "
                f"{MEGATRON_LAYOUT}, as its first/last-stage flags need every stage's layers a "
                f"multiple of {v}; torchtitan splits it by itself)")
    each = f", {v} chunks each" if v > 1 else ""
    return (f"{head}: {_counts_words(split.stages, 'stage')}{each} (Megatron-LM: "
            f"{split.megatron_flags}; torchtitan splits it by itself)")


def uneven_notes(layers: int, splits) -> list[str]:
    """``uneven_stage_words`` once per distinct (pp, virtual stages) of ``splits``, in order."""
    seen, notes = set(), []
    for pp, v in splits:
        if (pp, v) not in seen and (words := uneven_stage_words(layers, pp, v)):
            notes.append(words)
        seen.add((pp, v))
    return notes
