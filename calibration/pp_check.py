"""A real two-stage pipeline (1F1B) against the layout model's prediction from send/recv timings
made in the same processes, interleaved with it (CPU, gloo; ``tests/test_pipeline_sends.py``).

Run under torchrun (two ranks, one stage each)::

    torchrun --standalone --nproc-per-node=2 -m scalesim.calibration.pp_check --out pp.json

Every round, on both ranks, after a barrier:

1. *calibration*, as ``scalesim calibrate --block-hidden`` times pipeline messages: paired
   send/recv exchanges (``parallel_messages.time_send_recv``) of the stage's activation
   ``S = batch x seq x hidden x 4`` bytes at S/4, S/2, S and 2S, and ring all-reduces of the same
   sizes (what the intra-server link model is fitted to); then one stage's forward and
   backward alone (``--layers`` matmuls of the activation by a hidden x hidden weight forward,
   two per layer backward);
2. *the run*: ``--steps`` steps of a two-stage 1F1B pipeline over ``--micro`` micro-batches with
   Megatron's op sequence (warm-up forward and its send, steady ``send_forward_recv_backward``
   / ``send_backward_recv_forward`` as paired exchanges, cool-down), the same compute; and the
   same op sequence without the compute (``sends_only``: the pipeline's sends alone, against
   ``p2p_s``).

The sends are fitted as the profile assembly fits them (``link_fit.fit_send_recv``); the
prediction is the layout model's: compute ``(m + p - 1)(f + b)`` (§15: m micro-batches and the
bubble) plus ``pipeline_schedule.p2p_s`` with the fitted send/recv. The same with the link model
(``collectives.fit_alpha_beta`` over the all-reduces, as a profile without measured sends is
charged) is reported beside it. A calibration point is the median over ranks of each rank's
median over rounds; a run step the median over rounds of the slower rank's time. Rank 0 prints
(and writes) one JSON object with the ratios measured / predicted. One thread per rank, as
``tp_check``.
"""

from __future__ import annotations

import argparse
import os
import sys

SIZES = (0.25, 0.5, 1.0, 2.0)  # exchanges and all-reduces timed, in activations of a stage


def build_parser() -> argparse.ArgumentParser:
    from scalesim.calibration.check_rounds import check_parser

    p = check_parser("pp_check", "Measured two-stage 1F1B step vs the layout model.")
    p.add_argument("--layers", type=int, default=2, help="matmuls per stage forward")
    p.add_argument("--micro", type=int, default=8, help="micro-batches per step")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--steps", type=int, default=2, help="steps per timing")
    p.add_argument("--coll-time-s", type=float, default=0.03,
                   help="seconds each exchange / all-reduce timing shares (time_call)")
    return p


def _megatron_1f1b(stage: int, micro: int, forward, backward, exchange) -> None:
    """One step of a stage of a two-stage pipeline in Megatron's 1F1B op order (stage 0: one
    warm-up forward; stage 1: none). ``exchange(send, receive)`` is one paired transfer with the
    other stage (either side may be None)."""
    if stage == 0:
        forward()
        exchange("act", None)  # warm-up: send the first activation
        for _ in range(micro - 1):
            forward()
            exchange("act", "grad")  # send_forward_recv_backward
            backward()
        exchange(None, "grad")  # cool-down: the last gradient
        backward()
    else:
        exchange(None, "act")  # recv_forward
        for i in range(micro):
            forward()
            backward()
            exchange("grad", "act" if i < micro - 1 else None)  # send_backward(_recv_forward)


def _worker(args) -> dict | None:
    import torch
    import torch.distributed as dist
    from scalesim.calibration.check_rounds import gathered_rounds, timed
    from scalesim.calibration.collective_phase import time_collective
    from scalesim.calibration.parallel_messages import time_send_recv

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world != 2:
        raise SystemExit("pp_check runs two ranks (two pipeline stages)")
    group = dist.new_group([0, 1])
    peer = 1 - rank
    cpu = torch.device("cpu")
    torch.manual_seed(0)
    h, tokens = args.hidden, args.batch * args.seq
    weights = [torch.randn(h, h) / h**0.5 for _ in range(args.layers)]
    x = torch.randn(tokens, h)
    grad_out = torch.randn(tokens, h)
    buffers = {"act": torch.empty(tokens, h), "grad": torch.empty(tokens, h)}
    incoming = {"act": torch.empty(tokens, h), "grad": torch.empty(tokens, h)}
    size = tokens * h * 4

    def forward():
        y = x
        for w in weights:
            y = y @ w
        buffers["act"].copy_(y)

    def backward():
        g = grad_out
        for w in reversed(weights):
            _ = x.t() @ g  # weight gradient
            g = g @ w.t()  # input gradient
        buffers["grad"].copy_(g)

    def exchange(send, receive):
        ops = []
        if send is not None:
            ops.append(dist.P2POp(dist.isend, buffers[send], peer, group))
        if receive is not None:
            ops.append(dist.P2POp(dist.irecv, incoming[receive], peer, group))
        for request in dist.batch_isend_irecv(ops):
            request.wait()

    def step():
        _megatron_1f1b(rank, args.micro, forward, backward, exchange)

    def sends_only():
        _megatron_1f1b(rank, args.micro, lambda: None, lambda: None, exchange)

    def exchange_loop():
        for _ in range(args.micro):
            exchange("act" if rank == 0 else "grad", "grad" if rank == 0 else "act")

    for _ in range(2):  # warm-up
        step()
        forward()
        backward()
    rounds = []
    for _ in range(args.rounds):
        r = {f"x_{s}": time_send_recv(group, [0, 1], rank, int(size * s), cpu,
                                      args.coll_time_s) for s in SIZES}
        r.update({f"ar_{s}": time_collective("all_reduce", group, 2, int(size * s), cpu,
                                             args.coll_time_s) for s in SIZES})
        r["forward"] = timed(dist, forward, 3 * args.micro)
        r["backward"] = timed(dist, backward, 3 * args.micro)
        r["run"] = timed(dist, step, args.steps)
        # the pipeline's sends alone, and beside them (order alternating between rounds) as
        # many paired exchanges of the activation back to back: what one send costs right now
        pair = [("sends_only", sends_only), ("exchange", exchange_loop)]
        for key, fn in pair if len(rounds) % 2 == 0 else reversed(pair):
            r[key] = timed(dist, fn, args.steps)
        rounds.append(r)
    everyone = gathered_rounds(dist, rounds)
    return None if everyone is None else summarise(args, everyone)


def summarise(args, everyone: list[list[dict]]) -> dict:
    """The fits, the predictions and the ratios from both ranks' rounds."""
    import numpy as np
    from scalesim.calibration.check_rounds import allreduce_link, calibrated
    from scalesim.calibration.check_rounds import slowest as slowest_of
    from scalesim.calibration.link_fit import fit_send_recv

    from scalesim.layout import ONE_F_ONE_B
    from scalesim.model.pipeline_schedule import p2p_s
    from scalesim.schemas import MessagePoint

    def slowest(key):  # per round, the slower rank
        return slowest_of(everyone, key)

    size = args.batch * args.seq * args.hidden * 4.0
    sizes = [size * s for s in SIZES]
    exchanges = [float(np.median(slowest(f"x_{s}"))) for s in SIZES]
    fit = fit_send_recv([MessagePoint(op="send_recv", purpose="pp", ranks=2, size_bytes=b,
                                      time_s=t, model_s=t)
                         for b, t in zip(sizes, exchanges, strict=True)])
    if fit is None:  # flat times (a wake-up floor): all latency, as tp_check reads them
        fit = (float(np.median(exchanges)), 1e5, 0.0)
    allreduces = [float(np.median(slowest(f"ar_{s}"))) for s in SIZES]
    link_latency, link_busbw, _ = allreduce_link(sizes, allreduces)
    stages, m = 2, args.micro
    f, b = calibrated(everyone, "forward"), calibrated(everyone, "backward")
    compute = (m + stages - 1) * (f + b)

    def sends(latency, bandwidth):
        return float(p2p_s(ONE_F_ONE_B, stages, m, 1, size, stages, latency, bandwidth,
                           latency, bandwidth))

    p2p = sends(fit[0], fit[1])
    p2p_link = sends(link_latency, link_busbw)
    run = slowest("run")
    measured = float(np.median(run))
    sends_measured = float(np.median(slowest("sends_only")))
    # p2p_s with the exchange timed beside the run as its whole cost (latency, no bytes term)
    one_exchange = float(np.median(slowest("exchange"))) / m
    p2p_beside = float(p2p_s(ONE_F_ONE_B, stages, m, 1, 0.0, stages, one_exchange, 1.0,
                             one_exchange, 1.0))
    return {
        "ratio": measured / (compute + p2p), "ratio_link_model": measured / (compute + p2p_link),
        "sends_ratio": sends_measured / p2p, "sends_ratio_link_model": sends_measured / p2p_link,
        "sends_measured_s": sends_measured, "sends_ratio_beside": sends_measured / p2p_beside,
        "exchange_beside_s": one_exchange,
        "measured_s": measured, "predicted_s": compute + p2p,
        "predicted_compute_s": compute, "predicted_p2p_s": p2p,
        "predicted_p2p_link_model_s": p2p_link, "p2p_share": p2p / (compute + p2p),
        "send_recv_latency_s": fit[0], "send_recv_GBps": fit[1], "send_recv_rel_rmse": fit[2],
        "send_recv_s": exchanges, "allreduce_s": allreduces, "link_latency_s": link_latency,
        "link_busbw_GBps": link_busbw, "forward_s": f, "backward_s": b,
        "run_quartiles_s": [float(x) for x in np.percentile(run, [25, 50, 75])],
        "rounds": len(run), "micro": m, "layers": args.layers, "hidden": args.hidden,
        "seq": args.seq, "batch": args.batch, "size_bytes": size,
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def main(argv: list[str] | None = None) -> int:
    from scalesim.calibration.check_rounds import main as check_main

    return check_main(build_parser, _worker, argv)


if __name__ == "__main__":
    sys.exit(main())
