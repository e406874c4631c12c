"""The micro-batch a traced job ran, read from the input shapes torch.profiler records.

With ``record_shapes=True`` each ``cpu_op`` event carries ``args["Input Dims"]``: one list of
dimensions per input, ``[]`` for a non-tensor (``aten::linear``: ``[[32, 512], [1024, 512],
[1024]]``; ``aten::cross_entropy_loss``: ``[[32, 10], [32], [], [], [], []]``). The micro-batch is
read where two readings agree, and agree on one value in most (a strict majority of) the
rank's micro-steps (DDP's first forward runs its own ops first: a broadcast's copy of 7
elements on a 2-rank gloo job):

- the leading dimension of the first input of the first shaped op inside the data-parallel
  wrapper's forward (``traces.MICRO_STEP_FORWARDS``' ``DistributedDataParallel.forward``, those
  that train: a backward follows), the model's input;
- the leading dimension of the first input of the first loss op (``LOSS_OPS``) from that forward's
  start to the next one's, the predictions the loss compares.

Anything else is no reading: a trace without shapes, no wrapper forward or loss op, or two
readings that differ (a language model's embedding takes the weight first, its loss the
flattened tokens: neither is the batch). ``SHAPES_FROM_FORWARDS`` names the wrappers whose
forward holds the model's ops (FSDP2's ``FSDP::root_pre_forward`` is only its hook); the ops in
``WRAPPER_HOOKS``' windows (FSDP1 unsharding its flat parameters) are passed over.
"""

from __future__ import annotations

from array import array
from collections import Counter

import numpy as np

from scalesim.trace_intervals import is_int64

# aten loss ops whose first input's leading dimension is the samples compared (torch.nn's losses)
LOSS_OPS = frozenset({
    "aten::cross_entropy_loss", "aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d",
    "aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss",
    "aten::binary_cross_entropy", "aten::binary_cross_entropy_with_logits", "aten::kl_div",
    "aten::soft_margin_loss", "aten::multilabel_margin_loss", "aten::multi_margin_loss",
    "aten::hinge_embedding_loss", "aten::poisson_nll_loss", "aten::cosine_embedding_loss",
    "aten::margin_ranking_loss",
})
# why no micro-batch is read from a trace that records no shapes (no note: nothing to say)
NO_SHAPES = "no op records its input shapes (torch.profiler's record_shapes=True)"
# the wrappers' forwards that hold the model's own ops (DDP's, FSDP1's root)
SHAPES_FROM_FORWARDS = ("DistributedDataParallel.forward", "FullyShardedDataParallel.forward")
# the wrappers' own work before a unit's ops, whose shaped ops are no input: FSDP1 unshards its
# flat parameters there (aten::chunk, narrow of [262656], c10d::allgather_ on a real gloo
# FULL_SHARD job, torch 2.13: the root forward's first shaped ops), by the annotations
# torch/distributed/fsdp/_runtime_utils.py records
WRAPPER_HOOKS = ("FullyShardedDataParallel._root_pre_forward",
                 "FullyShardedDataParallel._pre_forward")


def leading_dimension(args) -> int | None:
    """The leading dimension of an event's first input (``args["Input Dims"][0][0]``), None where
    the event records no shapes or its first input is no tensor of one dimension or more."""
    dims = args.get("Input Dims") if isinstance(args, dict) else None
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list) or not dims[0]:
        return None
    lead = dims[0][0]
    return lead if is_int64(lead) and lead >= 1 else None


class ShapeReads:
    """The shaped ``cpu_op`` events of one trace, seen one at a time (``see``): their starts (s),
    leading dimensions and names (interned), as arrays; and its wrappers' forward windows."""

    def __init__(self):
        self.start, self.lead, self.name_id = array("d"), array("q"), array("q")
        self.names: dict[str, int] = {}
        self.forward_start, self.forward_end = array("d"), array("d")
        self.hook_start, self.hook_end = array("d"), array("d")  # ``WRAPPER_HOOKS``' windows

    def see(self, name: str, t0: float, args) -> None:
        lead = leading_dimension(args)
        if lead is not None:
            self.start.append(t0)
            self.lead.append(lead)
            self.name_id.append(self.names.setdefault(name, len(self.names)))

    def see_forward(self, name: str, t0: float, dur: float) -> None:
        if name in SHAPES_FROM_FORWARDS:
            self.forward_start.append(t0)
            self.forward_end.append(t0 + dur)

    def see_hook(self, name: str, t0: float, dur: float) -> None:
        if name in WRAPPER_HOOKS:
            self.hook_start.append(t0)
            self.hook_end.append(t0 + dur)

    def _outside_hooks(self, start: np.ndarray) -> np.ndarray:
        """Which of the sorted ``start``s lie in no ``WRAPPER_HOOKS`` window."""
        h0, h1 = np.frombuffer(self.hook_start), np.frombuffer(self.hook_end)
        if not len(h0):
            return np.ones(len(start), dtype=bool)
        order = np.argsort(h0, kind="stable")
        h0, reach = h0[order], np.maximum.accumulate(h1[order])
        i = np.searchsorted(h0, start, side="right") - 1  # the last hook started at or before
        return (i < 0) | (start > reach[np.maximum(i, 0)])

    def micro_batch(self, backward_starts: np.ndarray) -> tuple[int | None, str]:
        """(micro-batch, where it was read) of the trace; (None, why not) where the readings are
        absent or disagree. ``backward_starts``: the backward ops' starts, sorted (s): a forward
        none follows before the next is an evaluation's, left out."""
        if not len(self.start):
            return None, NO_SHAPES
        if not len(self.forward_start):
            return None, "no DistributedDataParallel.forward in the steps to read the input from"
        order = np.argsort(np.frombuffer(self.start), kind="stable")
        start = np.frombuffer(self.start)[order]
        lead = np.frombuffer(self.lead, dtype=np.int64)[order]
        name_id = np.frombuffer(self.name_id, dtype=np.int64)[order]
        outside = self._outside_hooks(start)
        start, lead, name_id = start[outside], lead[outside], name_id[outside]
        names = {i: n for n, i in self.names.items()}
        loss = np.array([names[i] in LOSS_OPS for i in name_id], dtype=bool)
        f0 = np.frombuffer(self.forward_start)
        f1 = np.frombuffer(self.forward_end)
        keep = np.argsort(f0, kind="stable")
        f0, f1 = f0[keep], f1[keep]
        outer = np.concatenate([[True], f0[1:] >= np.maximum.accumulate(f1)[:-1]])  # not nested
        f0, f1 = f0[outer], f1[outer]
        nexts = np.append(f0[1:], np.inf)
        trained = [np.any((backward_starts >= a) & (backward_starts < b)) if len(backward_starts)
                   else True for a, b in zip(f0, nexts, strict=True)]
        reads, said = [], {}
        for a, b, end, ok in zip(f0, f1, nexts, trained, strict=True):
            if not ok:
                continue
            i = int(np.searchsorted(start, a))
            first = int(lead[i]) if i < len(start) and start[i] < b else None
            j = next((k for k in range(i, int(np.searchsorted(start, end))) if loss[k]), None)
            reads.append((first, None if j is None else int(lead[j])))
            if first is not None and j is not None and first == int(lead[j]):
                said.setdefault(first, (names[int(name_id[i])], names[int(name_id[j])]))
        if not reads:
            return None, "no forward that a backward follows"
        agreed = Counter(f for f, los in reads if f is not None and f == los)
        batch, count = agreed.most_common(1)[0] if agreed else (None, 0)
        if 2 * count <= len(reads):  # a strict majority of the forwards read one batch
            inputs = sorted({f for f, _ in reads if f is not None})
            losses = sorted({los for _, los in reads if los is not None})
            if not losses:
                return None, "no loss op (aten::cross_entropy_loss, mse_loss...) after a forward"
            return None, (f"the forwards' first inputs lead with {inputs} and the losses' with "
                          f"{losses}: no one batch in most forwards")
        of = "" if count == len(reads) else f" in {count} of {len(reads)} forwards"
        return batch, (f"the leading dimension of the input of the forward's first op "
                       f"({said[batch][0]}) and of the loss ({said[batch][1]}){of}")
