"""The reduce-scatter an FSDP stage runs once a step under a pipeline, and what of it the step
waits for (docs/model.md §16, "Under a pipeline").

PyTorch's pipelining (torchtitan's PP + FSDP) runs every backward of a stage without gradient
sync and reduces the stage's gradients once, after its last backward (the schedule's
``perform_reduce_grad`` / REDUCE_GRAD action, ``_PipelineStageBase._post_backward``); its final
callback makes the compute stream wait for those reduce-scatters
(``_root_post_backward_final_callback``: ``current_stream().wait_event``), so nothing of the
stage's own compute runs beside them. The last stage finishes its backward first and the
first stage last: rank r of the pipeline ends its last backward r drains of one chunk before
the first rank does, and torchtitan's gradient clipping all-reduces the norm over the pipeline
ranks before the optimizer step, so the step waits for the slowest of

    exposed_r = max(0, max(0, early_r - (p - 1 - r) d) + last_r - r d)

last_r: rank r's reduce-scatter of the chunk whose backward ends last on it (its stage r);
early_r: of its other chunks (interleaved), issued earlier, which stall its compute but for the
drain idle before its last backward, (p - 1 - r) d; d: seconds one rank's drain idles a rank
(one chunk's backward on the first rank, the schedule's share of it).
"""

from __future__ import annotations

import numpy as np


def exposed_of_rank_s(rank, pp, last_chunk_s, early_chunks_s, drain_s):
    """Seconds past the first rank's last backward that pipeline rank ``rank`` (0: the first)
    still reduce-scatters: ``last_chunk_s`` its reduce-scatter issued after its last backward,
    ``early_chunks_s`` its other chunks' (0 without interleaving), ``drain_s`` seconds of drain
    per rank between it and the first. Arrays broadcast."""
    r = np.asarray(rank, dtype=float)
    before = np.maximum(np.asarray(pp, dtype=float) - 1.0 - r, 0.0) * drain_s
    stall = np.maximum(early_chunks_s - before, 0.0)
    return np.maximum(stall + last_chunk_s - r * drain_s, 0.0)


def piped_reduce_exposed_s(pp, first, middle, last, drain_s):
    """Seconds the step waits, after the first pipeline rank's last backward, for the FSDP
    reduce-scatters of its stages: the largest of the first rank's (r = 0), the fullest rank
    between's (r = 1, where pp > 2) and the last rank's (r = pp - 1) ``exposed_of_rank_s``;
    ``first``, ``middle``, ``last``: (last-chunk seconds, earlier-chunks seconds) of each;
    ``drain_s``: seconds of drain per rank. Arrays broadcast."""
    p = np.asarray(pp, dtype=float)
    worst = np.maximum(exposed_of_rank_s(0.0, p, *first, drain_s),
                       exposed_of_rank_s(p - 1.0, p, *last, drain_s))
    return np.maximum(worst, np.where(p > 2.0, exposed_of_rank_s(1.0, p, *middle, drain_s), 0.0))
