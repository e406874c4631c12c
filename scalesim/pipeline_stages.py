"""How a pipeline splits the layers over its stages, and what a user must give to run it.

The layout model times the fullest pipeline rank (``layout.layers_per_stage``: the layers
spread over pp x v chunks of at most ceil(L / (pp v)), rank 0's v of them) and charges each
rank the layers of ``stage_split`` (``stage_ends``, ``stage_layers``: arrays, docs/model.md
§15). Where pp x v does not divide the layers, the stages are uneven, and a framework runs them
only when told (docs/model.md §12):

- Megatron-LM asserts num_layers % pp == 0 (megatron/training/arguments.py) unless
  ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` set the first
  / last stage's layers; the middle stages then share the rest evenly, and with interleaving
  every stage's layers are a multiple of the virtual stages (``TransformerConfig``). Other
  splits need ``--pipeline-model-parallel-layout``.
- torchtitan splits by itself (``_generate_llm_fqn_per_model_part``: layers + 1 for the
  embedding + 1 for the output spread evenly over the pp x v stages, the first stages one
  more), so it needs no flag; its split can differ from the model's even where pp divides the
  layers (``torchtitan_chunks``: 80 layers over pp 8 run as 10, 11, 10, ..., 9).

``stage_split`` finds the split with the model's fullest stage that Megatron-LM's first/last
flags give: the model's own where they can (every stage but the last full, the last the rest:
``--decoder-last-pipeline-num-layers``); ``stage_words`` says it in one sentence, and
torchtitan's split where it differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

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
    between stages; None where none does. Linear in the middle stages' sizes: for each middle,
    the best first is the middle itself, the one that leaves the middle's layers to the last,
    half the rest (pp 2), or else the largest that leaves the last enough (the fewest on the
    last), so those are the only firsts tried (a 10,000-layer model over pp 3 in milliseconds,
    not seconds; the same split as trying every first, tests/test_polish21.py)."""
    best = None
    top = fullest // v * v  # the largest stage that is a multiple of v

    def allowed(n: int) -> bool:
        return v <= n <= top and n % v == 0

    for middle in range(v, top + 1, v) if pp > 2 else (None,):
        rest = layers - (pp - 2) * (middle or 0)  # first + last
        if rest % v:
            continue
        largest = min(top, rest - v) // v * v  # the first that leaves the last the fewest
        tried = {largest, rest // 2 // v * v} | ({middle, rest - middle} if middle else set())
        for first in sorted(tried):
            last = rest - first
            if not (allowed(first) and allowed(last)):
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
        [f"{MEGATRON_LAST} {stages[-1]}"] if last_flag else []
    )
    return stages, " ".join(flags)


def stage_split(layers: int, pp: int, virtual_stages: int = 1) -> StageSplit:
    """The split of ``layers`` over ``pp`` stages of ``virtual_stages`` chunks whose fullest is
    the model's (``layout.layers_per_stage``): even where pp x v divides the layers; else
    Megatron-LM's first/last-stage split (``_megatron_stages``: the fullest stage the model's,
    its chunks equal), or where those flags cannot give it (v > 1: a stage's layers not a
    multiple of v; or the stages between unequal: 32 over pp 13 run 6 x 3, 7 x 2), the layers
    spread over the pp x v chunks evenly, the first chunks one more (the fullest chunk the
    model's; chunk i on stage i % pp, as Megatron-LM and torchtitan interleave)."""
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
    return StageSplit(layers, pp, v, stages, tuple(stages[i % pp] // v for i in range(chunks)), flags)


@lru_cache(maxsize=4096)
def _split_stages(layers: int, pp: int, virtual_stages: int) -> tuple[int, ...]:
    """``stage_split(...).stages``, computed once per (L, pp, v): the model asks per layout."""
    return stage_split(layers, pp, virtual_stages).stages


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)`` for an (n, k) int64 array, without its
    sort of rows as structured records (the planner's 137,130 rows: 0.99 s of its 1.29 s): each
    row's columns as the digits of one integer (column i in base max_i - min_i + 1), then one
    sort of those integers."""
    ids = np.zeros(keys.shape[0], dtype=np.int64)
    span = 1
    for column in keys.T:
        low = int(column.min())
        width = int(column.max()) - low + 1
        if span * width >= 2**62:  # renumber before the digits overflow
            ids = np.unique(ids, return_inverse=True)[1].reshape(-1)
            span = int(ids.max()) + 1
        ids = ids * width + (column - low)
        span *= width
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


def _per_distinct_row(scalar, *arrays) -> np.ndarray:
    """``scalar(*ints)`` of each element of the broadcast ``arrays`` (rounded to whole
    numbers), a float array of their shape: each distinct row of values computed once
    (``_unique_rows``), as the planner's hundred thousand layouts share a few hundred."""
    columns = np.broadcast_arrays(*(np.rint(np.asarray(a, dtype=float)).astype(np.int64)
                                    for a in arrays))
    shape = columns[0].shape
    keys = np.stack([a.reshape(-1) for a in columns], axis=1)
    if keys.shape[0] == 0:
        return np.zeros(shape)
    unique, inverse = _unique_rows(keys)
    values = np.array([scalar(*row) for row in unique.tolist()], dtype=float)
    return values[inverse.reshape(-1)].reshape(shape)


def stage_layers(layers, pp, virtual_stages=1, stage=0):
    """Layers on pipeline rank ``stage`` of the split that runs (``stage_split``), arrays in
    and a float array out, so the layout model charges each stage the layers of the split the
    words and ``layers_per_stage`` fields report (docs/model.md §15). A stage outside
    0..pp - 1 reads the nearest end (a slow rank beyond the devices: no slow stage)."""
    return _per_distinct_row(
        lambda n, p, v, k: _split_stages(max(n, 0), max(p, 1), max(v, 1))[min(max(k, 0), max(p, 1) - 1)],
        layers, pp, virtual_stages, stage)


def interleaved_peak_layers(layers: int, pp: int, virtual_stages: int, microbatches: int,
                            rank: int) -> int:
    """Layer-micro-batches of activations pipeline rank ``rank`` holds at its peak under
    Megatron-LM's interleaved 1F1B with the chunks of ``stage_split`` (local chunk c is global
    chunk c pp + rank). Megatron's order (``forward_backward_pipelining_with_interleaving``,
    ``get_model_chunk_id``): the k-th forward runs local chunk (k mod pp v) // pp, the k-th
    backward chunk v - 1 - (k mod pp v) // pp; rank r runs W = 2 (pp - r - 1) + (v - 1) pp
    warm-up forwards (all m v where fewer), then one forward and one backward each, so after
    its (W + i + 1)-th forward it holds F(W + i + 1) - B(i) layers (F, B the running sums of the
    forwards' and backwards' chunk layers): the peak is the largest. Equal chunks: (W + 1)
    chunks of L / (pp v), ``microbatches_in_flight`` x the rank's layers; uneven ones hold more
    where the first chunks in flight are the heavier (80 layers over pp 8 x v 8, chunks of 2,
    2, 1, ... on rank 0, 64 micro-batches: 103, not 10 x 71 / 8 = 88.75)."""
    v, chunks = virtual_stages, stage_split(layers, pp, virtual_stages).chunks
    local = np.array([chunks[c * pp + rank] for c in range(v)], dtype=np.int64)
    n = microbatches * v
    warm = min(2 * (pp - rank - 1) + (v - 1) * pp, n)
    group = (np.arange(n) % (pp * v)) // pp
    forwards = np.concatenate([[0], np.cumsum(local[group])])
    backwards = np.concatenate([[0], np.cumsum(local[v - 1 - group])])
    if warm >= n:
        return int(forwards[n])
    steady = np.arange(n - warm)
    return int(np.max(forwards[warm + steady + 1] - backwards[steady]))


@lru_cache(maxsize=4096)
def _interleaved_peak(layers: int, pp: int, virtual_stages: int, microbatches: int,
                      rank: int) -> int:
    return interleaved_peak_layers(layers, pp, virtual_stages, microbatches, rank)


def interleaved_held_layers(layers, pp, virtual_stages, microbatches, stage=0):
    """``interleaved_peak_layers`` over arrays (a float array; each distinct row computed
    once): the layer-micro-batches the layout model charges an interleaved rank's activations.
    Rows without a pipeline or interleaving, or a micro-batch count below one, read 0 (the
    caller keeps its own formula there)."""
    return _per_distinct_row(
        lambda n, p, v, m, k: _interleaved_peak(n, p, v, m, min(max(k, 0), p - 1))
        if p > 1 and v > 1 and m >= 1 and n >= p * v else 0,
        layers, pp, virtual_stages, microbatches, stage)


def stage_ends(layers, pp, virtual_stages=1):
    """(first, middle, last): layers (float arrays) on the first pipeline rank, on the fullest
    rank between (rank 1: the split's middle ranks are equal, or fall from the first; 0 where
    pp <= 2) and on the last rank, of ``stage_split``; (L, 0, L) without a pipeline. The first
    holds the embedding, the last the output layer; where (pp - 1) ceil(L / pp) >= L (126
    layers over pp 64: 1, 62 x 2, 1) the first is not the fullest."""
    p, L = np.asarray(pp), np.asarray(layers, dtype=float)
    first = np.where(p > 1, stage_layers(layers, pp, virtual_stages, 0), L)
    middle = np.where(p > 2, stage_layers(layers, pp, virtual_stages, 1), 0.0)
    last = np.where(p > 1, stage_layers(layers, pp, virtual_stages, p - 1), L)
    return first, middle, last


# torchtitan's default split (``_generate_llm_fqn_per_model_part`` in
# torchtitan/distributed/pipeline_parallel.py at 73aed7f6, 2026-08-20): the embedding and the
# output count as this many layers each (``pipeline_parallel_first/last_stage_less_layers``)
TORCHTITAN_SOURCE = "torchtitan/distributed/pipeline_parallel.py _generate_llm_fqn_per_model_part at 73aed7f6"
TORCHTITAN_END_WEIGHT = 1


def torchtitan_chunks(layers: int, stages: int) -> tuple[int, ...] | None:
    """Transformer layers on each of ``stages`` model chunks (pp x v) as torchtitan's default
    split gives them: L + 2 (the embedding and the output a layer each) spread evenly, the first
    chunks one more, the first and last chunk then one layer less for the embedding / output;
    one chunk holds all. None where torchtitan refuses (more chunks than L + 2)."""
    if stages == 1:
        return (layers,)
    effective = layers + 2 * TORCHTITAN_END_WEIGHT
    per, extra = divmod(effective, stages)
    if per < TORCHTITAN_END_WEIGHT:  # its ValueError: empty stages, or an end over a stage
        return None
    sizes = [per + (i < extra) for i in range(stages)]
    sizes[0] -= TORCHTITAN_END_WEIGHT
    sizes[-1] -= TORCHTITAN_END_WEIGHT
    return tuple(sizes)


def torchtitan_stages(layers: int, pp: int, virtual_stages: int = 1) -> tuple[int, ...] | None:
    """Layers on each pipeline rank in torchtitan (``torchtitan_chunks`` of pp x v chunks,
    chunk i on rank i % pp: its ``stage_ids_this_rank`` 'loop' style); None where it refuses."""
    chunks = torchtitan_chunks(layers, pp * virtual_stages)
    return None if chunks is None else tuple(sum(chunks[rank::pp]) for rank in range(pp))


def _stage_list(sizes: tuple[int, ...], noun: str = "stage") -> str:
    """'10, 11, 5 stages of 10, 9': the layers of each stage in order, a run of 3 or more equal
    stages as one entry with its count."""
    runs: list[list[int]] = []
    for n in sizes:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return ", ".join(f"{k} {noun}s of {n}" if k >= 3 else ", ".join([str(n)] * k) for n, k in runs)


def torchtitan_words(layers: int, pp: int, virtual_stages: int = 1) -> str:
    """'torchtitan splits 80 layers + embedding + output as 10, 11, 5 stages of 10, 9: its
    fullest stage 11 layers, the model charges 10': torchtitan's split (``torchtitan_stages``)
    where its layers per rank or per chunk differ from ``stage_split``'s (the fullest said where
    it differs from the model's ``layout.layers_per_stage``); '' where they are the same or pp
    is 1."""
    if pp == 1:
        return ""
    v = virtual_stages
    head = f"torchtitan splits {count(layers, 'layer')} + embedding + output"
    chunks = torchtitan_chunks(layers, pp * v)
    if chunks is None:
        return f"{head} over at most {layers + 2 * TORCHTITAN_END_WEIGHT} stages: not pp x v {pp * v}"
    split, ranks = stage_split(layers, pp, v), torchtitan_stages(layers, pp, v)
    if ranks == split.stages and chunks == split.chunks:
        return ""
    what = (
        f"as chunks {_stage_list(chunks, 'chunk')} (stages {_stage_list(ranks)})"
        if v > 1
        else f"as {_stage_list(ranks)}"
    )
    fullest, model = max(ranks), int(layers_per_stage(layers, pp, v))
    return f"{head} {what}" + (
        f": its fullest stage {count(fullest, 'layer')}, the model charges {model}"
        if fullest != model
        else ""
    )


def _counts_words(sizes: tuple[int, ...], noun: str) -> str:
    """'8 stages of 9 layers and one of 8': ``sizes`` grouped by their layers, fullest first."""
    groups = sorted({n: sizes.count(n) for n in sizes}.items(), reverse=True)
    parts = [
        f"{'one ' + noun if k == 1 else count(k, noun)} of {count(n, 'layer')}"
        if i == 0
        else f"{'one' if k == 1 else k} of {n}"
        for i, (n, k) in enumerate(groups)
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def pipeline_words(pp: int, virtual_stages: int = 1) -> str:
    """A pipeline as the stage words name it: 'pp 9', 'pp 2 x 2 virtual stages'."""
    return f"pp {pp}" + (f" x {virtual_stages} virtual stages" if virtual_stages > 1 else "")


def uneven_stage_words(layers: int, pp: int, virtual_stages: int = 1,
                       pipeline: str | None = None) -> str:
    """'80 layers over pp 9: 8 stages of 9 layers and one of 8 (Megatron-LM:
    --decoder-last-pipeline-num-layers 8; torchtitan splits it so by itself)', torchtitan's own
    split in place of the last clause where it differs (``torchtitan_words``); '' where the split
    is even (pp x v divides the layers) or there is no pipeline (pp 1). ``pipeline``: how the
    pipeline is named (a page's labels; None: ``pipeline_words``)."""
    split = stage_split(layers, pp, virtual_stages)
    if pp == 1 or split.even:
        return ""
    v = virtual_stages
    titan = torchtitan_words(layers, pp, v) or "torchtitan splits it so by itself"
    head = f"{count(layers, 'layer')} over {pipeline or pipeline_words(pp, v)}"
    if split.megatron_flags is None:
        why = (
            f"need every stage's layers a multiple of {v}"
            if v > 1
            else "give every stage between the first and the last the same layers"
        )
        sizes = (split.chunks, "model chunk") if v > 1 else (split.stages, "stage")
        return (
            f"{head}: {_counts_words(*sizes)} (Megatron-LM: "
            f"{MEGATRON_LAYOUT}, as its first/last-stage flags {why}; {titan})"
        )
    each = f", {v} chunks each" if v > 1 else ""
    return (
        f"{head}: {_counts_words(split.stages, 'stage')}{each} (Megatron-LM: {split.megatron_flags}; {titan})"
    )


def stage_words(layers: int, pp: int, virtual_stages: int = 1, pipeline: str | None = None) -> str:
    """What a user must know of the stages of ``layers`` over pp x v: ``uneven_stage_words``
    where the model's stages are uneven; where they are even, torchtitan's split where it
    differs (``_even_stage_words``); '' where every framework runs the model's split.
    ``pipeline``: how the pipeline is named (None: ``pipeline_words``)."""
    return (uneven_stage_words(layers, pp, virtual_stages, pipeline)
            or _even_stage_words(layers, pp, virtual_stages, pipeline))


def _even_stage_words(layers: int, pp: int, virtual_stages: int = 1,
                      pipeline: str | None = None) -> str:
    """Of an even split (pp x v divides the layers), torchtitan's where it differs: '80 layers
    over pp 8: 10 a stage in the model and Megatron-LM; torchtitan splits ...'
    (``torchtitan_words``); '' where torchtitan runs the model's split."""
    if not (titan := torchtitan_words(layers, pp, virtual_stages)):
        return ""
    v = virtual_stages
    each = layers // (pp * v)
    head = f"{count(layers, 'layer')} over {pipeline or pipeline_words(pp, v)}"
    return (
        f"{head}: {count(each, 'layer')} a {'chunk' if v > 1 else 'stage'} in the model and "
        f"Megatron-LM; {titan}"
    )


def layout_stage_words(profile, split, pipeline: str | None = None) -> str:
    """``stage_words`` of ``split``'s pipeline (a ``schemas.Layout``) over the layers of
    ``profile``'s model (``layout_predict.splittable_shape``); '' where every framework runs its
    stages even or the model has no shape to split (predict's layout line, goal's note).
    ``pipeline``: how the pipeline is named (a page's labels; None: ``pipeline_words``)."""
    from scalesim.layout_predict import splittable_shape

    shape = splittable_shape(profile)
    if shape is None or shape.layers < split.pp * split.virtual_stages:
        return ""  # no stages to speak of: the layout's check refuses more chunks than layers
    return stage_words(shape.layers, split.pp, split.virtual_stages, pipeline)


def stage_fields(layers: int | None, pp: int, virtual_stages: int = 1) -> dict:
    """The stage fields of a plan or predict row (``--json``): ``layers_per_stage``, the layers
    on each pipeline rank first to last (``stage_split``); ``uneven_stages``, the words where
    the model's own stages are uneven (``uneven_stage_words``), else None; ``stage_notes``, what
    a user must know of the stages (``stage_words``: those words, or where the model's stages
    are even torchtitan's differing split), else None. All None where ``layers`` is None (no
    transformer shape is known)."""
    if layers is None:
        return {"layers_per_stage": None, "uneven_stages": None, "stage_notes": None}
    stages, uneven, notes = _stage_facts(layers, pp, virtual_stages)
    return {"layers_per_stage": list(stages), "uneven_stages": uneven, "stage_notes": notes}


@lru_cache(maxsize=4096)
def _stage_facts(layers: int, pp: int, virtual_stages: int) -> tuple[tuple[int, ...], str | None, str | None]:
    """``stage_fields``' (stages, uneven words, notes), worked out once per (L, pp, v): the
    planner asks per row, and its 217,513 rows of gpt-145.6b on 1,536 devices hold a few
    hundred (pp, v) (the words were 29 s of a 38 s ``plan(top=None)``)."""
    uneven = uneven_stage_words(layers, pp, virtual_stages)  # ``stage_words``, said once
    notes = uneven or _even_stage_words(layers, pp, virtual_stages) or None
    return stage_split(layers, pp, virtual_stages).stages, uneven or None, notes


def uneven_notes(layers: int, splits, pipeline: Callable[[int, int], str] | None = None
                 ) -> list[str]:
    """``stage_words`` once per distinct (pp, virtual stages) of ``splits``, in order.
    ``pipeline``: how a pipeline of (pp, virtual stages) is named (a page's labels; None:
    ``pipeline_words``)."""
    seen, notes = set(), []
    for pp, v in splits:
        named = pipeline(pp, v) if pipeline is not None else None
        if (pp, v) not in seen and (words := stage_words(layers, pp, v, named)):
            notes.append(words)
        seen.add((pp, v))
    return notes
