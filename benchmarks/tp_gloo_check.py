"""A real tensor-parallel step on CPU (2 processes, gloo) against the layout model's prediction.

Run: python benchmarks/tp_gloo_check.py [--hidden 512 --tokens 512 --layers 2 --reps 15]

Each process holds half of every weight matrix of a toy transformer-like layer (two
Megatron-style MLP sub-blocks: a column-parallel h -> 4h/t matmul, GeLU, a row-parallel 4h/t -> h
matmul whose output is all-reduced; backward all-reduces the input gradient), so each layer and
micro-batch all-reduces its T x h activations twice forward and twice backward, as
``model/tensor_parallel.py`` counts. Interleaved repetitions time, on both ranks:

1. the local shard's forward+backward without communication (the compute the model takes from a
   calibration at the tp shapes),
2. all-reduces of the activation size and a quarter of it (fitted to alpha and bus bandwidth with
   ``collectives.fit_alpha_beta``, as the calibration's collective phase does),
3. the full tensor-parallel step.

The prediction is (1) + ``tensor_parallel.tp_comm_per_layer_s`` x layers with the fitted link;
per repetition the slower rank's times, the ratio measured / predicted within each repetition
(adjacent timings share the machine's load), and its median. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, args, out_path: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    h, tokens, layers = args.hidden, args.tokens, args.layers
    f_local = 4 * h // world
    weights = [((torch.randn(h, f_local) / h**0.5).requires_grad_(),
                (torch.randn(f_local, h) / f_local**0.5).requires_grad_())
               for _ in range(2 * layers)]
    x0 = torch.randn(tokens, h)

    class _GradReduce(torch.autograd.Function):
        """Megatron's f: identity forward, all-reduce of the input gradient backward."""

        @staticmethod
        def forward(ctx, x, comm):
            ctx.comm = comm
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            if ctx.comm:
                dist.all_reduce(grad)
            return grad, None

    class _OutReduce(torch.autograd.Function):
        """Megatron's g: all-reduce of the partial outputs forward, identity backward."""

        @staticmethod
        def forward(ctx, y, comm):
            if comm:
                dist.all_reduce(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    def step(comm: bool) -> float:
        dist.barrier()
        t0 = time.perf_counter()
        x = x0.clone().requires_grad_(True)
        y = x
        for w1, w2 in weights:
            z = _GradReduce.apply(y, comm)  # backward: all-reduce of dX
            part = torch.nn.functional.gelu(z @ w1) @ w2
            y = y + _OutReduce.apply(part, comm)  # forward: all-reduce of the output
        y.sum().backward()
        for w1, w2 in weights:
            w1.grad = None
            w2.grad = None
        return time.perf_counter() - t0

    def allreduce(numel: int) -> float:
        buf = torch.ones(numel)
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(buf)
        return time.perf_counter() - t0

    big = tokens * h
    step(True)
    step(False)  # warm-up
    local, full, small_ar, big_ar = [], [], [], []
    for _ in range(args.reps):
        local.append(step(False))
        big_ar.append(allreduce(big))
        full.append(step(True))
        small_ar.append(allreduce(big // 4))
    result = {"local": local, "full": full, "ar_big": big_ar, "ar_small": small_ar}
    gathered = [None] * world
    dist.all_gather_object(gathered, result)
    if rank == 0:
        with open(out_path, "w") as fh:
            json.dump(gathered, fh)
    dist.destroy_process_group()


def measure(hidden: int = 512, tokens: int = 512, layers: int = 2, reps: int = 15) -> dict:
    """Run the two ranks and return measured and predicted step times (s) and their ratio."""
    import torch.multiprocessing as mp

    from scalesim.model.collectives import fit_alpha_beta
    from scalesim.model.tensor_parallel import tp_comm_per_layer_s
    from scalesim.model.transformer import RECOMPUTE_NONE

    args = argparse.Namespace(hidden=hidden, tokens=tokens, layers=layers, reps=reps)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        mp.spawn(_worker, args=(2, _free_port(), args, out), nprocs=2, join=True)
        with open(out) as fh:
            ranks = json.load(fh)
    # per repetition the slower rank (a synchronous step waits for it)
    slowest = {k: [max(r[k][i] for r in ranks) for i in range(reps)] for k in ranks[0]}
    size = tokens * hidden * 4.0  # fp32 activations
    latency_s, busbw_GBps, _ = fit_alpha_beta(
        "all_reduce", [size / 4] * reps + [size] * reps, [2] * (2 * reps),
        slowest["ar_small"] + slowest["ar_big"])
    comm = layers * float(tp_comm_per_layer_s(1, tokens, hidden, 2, 1, RECOMPUTE_NONE, False,
                                              latency_s, busbw_GBps, activation_bytes=4.0))
    # ratio within each repetition (adjacent timings share the machine's load), then the median
    ratios = [full / (local + comm) for full, local in zip(slowest["full"], slowest["local"],
                                                           strict=True)]
    return {"ratio": statistics.median(ratios), "ratios": ratios,
            "measured_s": statistics.median(slowest["full"]),
            "local_compute_s": statistics.median(slowest["local"]), "tp_comm_s": comm,
            "comm_share": comm / (statistics.median(slowest["local"]) + comm),
            "latency_s": latency_s, "busbw_GBps": busbw_GBps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    a = parser.parse_args()
    print(json.dumps(measure(a.hidden, a.tokens, a.layers, a.reps)))


if __name__ == "__main__":
    main()
