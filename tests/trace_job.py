"""A tiny CPU DDP (gloo) training job that writes one Kineto trace per rank.

Run under torchrun; used by the diagnose tests to make real traces:

    torchrun --nproc-per-node=2 tests/trace_job.py --out DIR [--slow-loader-s 0.05]
        [--slow-rank 1 --slow-rank-s 0.05] [--alternate-slow-s 0.05] [--gzip] [--record-shapes]
        [--fsdp full|grad-op]

``--fsdp`` shards the model with FSDP2 (``fully_shard``: each hidden Linear a unit, the root
holding the last) instead of DDP: ``full`` reshards after forward (FULL_SHARD, ZeRO-3: the
units are gathered again for backward), ``grad-op`` keeps them (SHARD_GRAD_OP, ZeRO-2). On gloo,
which has no reduce-scatter, FSDP2 reduces gradients with all-reduce.

``--slow-loader-s`` sleeps in the dataset's ``__getitem__`` (every sample of the batch, in the
main process: num_workers=0), so steps wait on the DataLoader iterator. ``--slow-rank-s`` makes
one rank sleep before its backward in every step, so the others wait for it in the all-reduce;
``--alternate-slow-s`` makes a different rank sleep in each step. ``launch`` runs it for a test.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset

TRACE_DIM = 512  # the MLP width of the shared jobs (tests/conftest.py ddp_trace_jobs)
# a sleep far above the tiny model's few ms of compute per step, even on a busy machine
TRACE_SLEEP_S = 0.06


class SlowDataset(Dataset):
    def __init__(self, n: int, dim: int, delay_s: float):
        self.x = torch.randn(n, dim)
        self.y = torch.randn(n, 1)
        self.delay_s = delay_s

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.x[i], self.y[i]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--slow-loader-s", type=float, default=0.0, help="sleep per batch")
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-rank-s", type=float, default=0.0)
    ap.add_argument("--alternate-slow-s", type=float, default=0.0,
                    help="in step i, rank i %% world sleeps this long (uneven work, no one culprit)")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--record-shapes", action="store_true",
                    help="record input shapes (gives the gloo messages' sizes)")
    ap.add_argument("--fsdp", choices=["full", "grad-op"],
                    help="shard with FSDP2 instead of DDP (see the module docstring)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(args.dim, args.dim), torch.nn.ReLU(),
                                torch.nn.Linear(args.dim, args.dim), torch.nn.ReLU(),
                                torch.nn.Linear(args.dim, 1))
    if args.fsdp:
        from torch.distributed.fsdp import fully_shard

        reshard = args.fsdp == "full"
        for unit in (model[0], model[2]):
            fully_shard(unit, reshard_after_forward=reshard)
        ddp = fully_shard(model, reshard_after_forward=reshard)
    else:
        ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    per_sample_delay = args.slow_loader_s / args.batch
    data = SlowDataset(args.batch * (args.steps + 2), args.dim, per_sample_delay)
    loader = DataLoader(data, batch_size=args.batch, num_workers=0)
    os.makedirs(args.out, exist_ok=True)
    suffix = ".json.gz" if args.gzip else ".json"
    path = os.path.join(args.out, f"rank{rank}{suffix}")

    def on_ready(prof) -> None:
        prof.export_chrome_trace(path)

    sched = schedule(wait=0, warmup=1, active=args.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=on_ready,
                 record_shapes=args.record_shapes) as prof:
        for i, (x, y) in enumerate(loader):
            if i >= args.steps + 1:
                break
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            opt.zero_grad()
            if rank == args.slow_rank and args.slow_rank_s:
                time.sleep(args.slow_rank_s)
            if args.alternate_slow_s and i % dist.get_world_size() == rank:
                time.sleep(args.alternate_slow_s)
            loss.backward()
            opt.step()
            prof.step()
    # let no gloo work outlive the group: torch's gloo threads still holding work at
    # interpreter exit can abort the process (pytorch/pytorch#179291)
    dist.barrier()
    del ddp, opt, prof
    gc.collect()
    dist.destroy_process_group()


def launch(out: Path, *flags: str) -> list[str]:
    """Run this job on two gloo ranks under torchrun (one thread each) into ``out``; the trace
    files, sorted. A run that a signal ended (SIGABRT: "terminate called without an active
    exception", once in CI, at the ranks' exit after the traces were written; not seen in 12
    runs here) is run once more, since it says nothing of what the tests read."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           str(Path(__file__)), "--out", str(out), *flags]
    for attempt in (1, 2):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        aborted = "(SIGABRT)" in proc.stderr or "(SIGSEGV)" in proc.stderr
        if proc.returncode == 0 or not aborted or attempt == 2:
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sorted(str(p) for p in Path(out).iterdir())


if __name__ == "__main__":
    main()
