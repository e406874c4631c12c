"""A tiny CPU DDP (gloo) training job that writes one Kineto trace per rank.

Run under torchrun; used by the diagnose tests to make real traces:

    torchrun --nproc-per-node=2 tests/trace_job.py --out DIR [--slow-loader-s 0.05]
        [--slow-rank 1 --slow-rank-s 0.05] [--alternate-slow-s 0.05] [--gzip] [--record-shapes]
        [--fsdp full|grad-op] [--tp-sp] [--accumulate 4]
        [--gather-group METRICS --gather-numel 1]
        [--pp-layers 1,3 --micro-batches 4 --virtual-stages 1 --pp-replicas 1]
        [--stop-after-steps 3]

``--fsdp`` shards the model with FSDP2 (``fully_shard``: each hidden Linear a unit, the root
holding the last) instead of DDP: ``full`` reshards after forward (FULL_SHARD, ZeRO-3: the
units are gathered again for backward), ``grad-op`` keeps them (SHARD_GRAD_OP, ZeRO-2). On gloo,
which has no reduce-scatter, FSDP2 reduces gradients with all-reduce.

``--tp-sp`` (4 ranks) lays the job out as a DeviceMesh ("dp", "tp") of 2 x 2, as torchtitan
does: the first two layers are split over the tp group, whose ranks all-gather their activations
in forward (sequence-parallel style) and all-reduce the gathered gradient in backward (gloo has
no reduce-scatter), and DDP exchanges over the dp group. gloo writes no group with its
collectives, so only the traces' pg_config says which group is which.

``--pp-layers`` (one count per rank) runs a pipeline instead: torch.distributed.pipelining's
Schedule1F1B over a process group of its own named PIPELINE_MODEL_PARALLEL_GROUP (as Megatron-LM
names its pipeline groups, so the traces' pg_config lists it), stage r holding that many Linear
layers of ``--dim``, ``--micro-batches`` micro-batches of the batch per step, the last stage's
loss a mean square; the stages send each other activations and gradients with gloo's send and
recv; ``--pp-replicas 2`` runs two such pipelines side by side (dp 2 x pp 2 on 4 ranks), each
stage's ranks all-reducing their gradients over a DATA_PARALLEL_GROUP after every step.
``--virtual-stages 2`` runs
ScheduleInterleaved1F1B instead, each rank holding 2 stages (r and r + ranks) of that many layers
each, over a mesh ("pp",) of the whole job, which reuses the default group (pg_config names no
pipeline); its actions are annotated "PP:<stage>F<micro-batch>".

``--accumulate k`` runs k micro-batches of ``--batch`` a step, each fetched from the DataLoader
and run forward and backward, all but the last under DDP's ``no_sync`` (FSDP2 reduces in each),
so a step holds k ``DistributedDataParallel.forward`` calls and k fetches. ``--gather-group``
all-gathers the last micro-batch's loss (``--gather-numel`` copies of it, each rank) once a step
over a second group of every rank, created with that ``group_desc``: a metric gathered beside
DDP's gradient all-reduces.

``--slow-loader-s`` sleeps in the dataset's ``__getitem__`` (every sample of the batch, in the
main process: num_workers=0), so steps wait on the DataLoader iterator. ``--slow-rank-s`` makes
one rank sleep before its backward in every step, so the others wait for it in the all-reduce;
``--alternate-slow-s`` makes a different rank sleep in each step. ``launch`` runs it for a test.

``--stop-after-steps K`` leaves the loop after K of its ``--steps`` + 1 iterations, before the
schedule's active steps run out: the profiler's exit (``prof.stop()``) closes the step the last
``prof.step()`` opened, which ran no training work (traces.py ``stopped_early``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
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
# a sleep far above the tiny model's few ms of compute per step, even on a busy machine (0.06 s
# left a slowed rank's straggler wait at 39 ms against the 42 ms its test asks under load 6 on
# 2 cores: a busy machine delays the fast rank by tens of ms, an absolute margin the sleep must beat)
TRACE_SLEEP_S = 0.12


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


class GatherOverTP(torch.autograd.Function):
    """All-gather a tensor parallel group's slices of the last dimension; backward sums the
    gradient over the group and keeps this rank's slice (a reduce-scatter, which gloo lacks)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.rank = group, dist.get_rank(group)
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        return grad.chunk(dist.get_world_size(ctx.group), dim=-1)[ctx.rank].contiguous(), None


class TensorParallelMLP(torch.nn.Module):
    """Two layers whose outputs are split over ``group`` and gathered, then a whole head."""

    def __init__(self, dim: int, group):
        super().__init__()
        width = dist.get_world_size(group)
        self.group = group
        self.split = torch.nn.ModuleList(torch.nn.Linear(dim, dim // width) for _ in range(2))
        self.head = torch.nn.Linear(dim, 1)

    def forward(self, x):
        for layer in self.split:
            x = torch.relu(GatherOverTP.apply(layer(x), self.group))
        return self.head(x)


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
    ap.add_argument("--tp-sp", action="store_true",
                    help="dp 2 x tp 2 over a DeviceMesh (4 ranks; the module docstring)")
    ap.add_argument("--pp-layers", help="a pipeline: Linear layers per stage, one per rank")
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--virtual-stages", type=int, default=1)
    ap.add_argument("--pp-replicas", type=int, default=1,
                    help="with --pp-layers: data-parallel replicas of the pipeline")
    ap.add_argument("--accumulate", type=int, default=1,
                    help="micro-batches per optimizer step, all but the last under DDP no_sync")
    ap.add_argument("--gather-group", default="",
                    help="all-gather the loss each step over a second group of every rank, "
                         "created with this group_desc")
    ap.add_argument("--gather-numel", type=int, default=1,
                    help="with --gather-group: elements each rank gathers")
    ap.add_argument("--stop-after-steps", type=int, default=0,
                    help="leave the loop after this many iterations (0: run them all), so "
                         "prof.stop() closes a step early")
    args = ap.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    if args.pp_layers:
        run_pipeline(args)
        return
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(args.dim, args.dim), torch.nn.ReLU(),
                                torch.nn.Linear(args.dim, args.dim), torch.nn.ReLU(),
                                torch.nn.Linear(args.dim, 1))
    if args.tp_sp:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (dist.get_world_size() // 2, 2), mesh_dim_names=("dp", "tp"))
        model = TensorParallelMLP(args.dim, mesh["tp"].get_group())
        ddp = DDP(model, process_group=mesh["dp"].get_group())
    elif args.fsdp:
        from torch.distributed.fsdp import fully_shard

        reshard = args.fsdp == "full"
        for unit in (model[0], model[2]):
            fully_shard(unit, reshard_after_forward=reshard)
        ddp = fully_shard(model, reshard_after_forward=reshard)
    else:
        ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    per_sample_delay = args.slow_loader_s / args.batch
    data = SlowDataset(args.batch * (args.steps + 2) * args.accumulate, args.dim, per_sample_delay)
    loader = DataLoader(data, batch_size=args.batch, num_workers=0)
    os.makedirs(args.out, exist_ok=True)
    suffix = ".json.gz" if args.gzip else ".json"
    path = os.path.join(args.out, f"rank{rank}{suffix}")

    def on_ready(prof) -> None:
        prof.export_chrome_trace(path)

    gather_group = (dist.new_group(list(range(dist.get_world_size())),
                                   group_desc=args.gather_group) if args.gather_group else None)
    sched = schedule(wait=0, warmup=1, active=args.steps, repeat=1)
    batches = iter(loader)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=on_ready,
                 record_shapes=args.record_shapes) as prof:
        for i in range(args.steps + 1):
            opt.zero_grad()
            for m in range(args.accumulate):
                x, y = next(batches)
                last = m == args.accumulate - 1
                with contextlib.nullcontext() if last or args.fsdp else ddp.no_sync():
                    loss = torch.nn.functional.mse_loss(ddp(x), y)
                    if last and rank == args.slow_rank and args.slow_rank_s:
                        time.sleep(args.slow_rank_s)
                    if last and args.alternate_slow_s and i % dist.get_world_size() == rank:
                        time.sleep(args.alternate_slow_s)
                    loss.backward()
            if gather_group is not None:
                mine = loss.detach().reshape(1).repeat(args.gather_numel)
                parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
                dist.all_gather(parts, mine, group=gather_group)
            opt.step()
            prof.step()
            if i + 1 == args.stop_after_steps:
                break
    # let no gloo work outlive the group: torch's gloo threads still holding work at
    # interpreter exit can abort the process (pytorch/pytorch#179291)
    dist.barrier()
    del ddp, opt, prof
    gc.collect()
    dist.destroy_process_group()


def run_pipeline(args) -> None:
    """The ``--pp-layers`` job (module docstring): traced like the others, one file per rank."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleInterleaved1F1B,
    )

    layers = [int(n) for n in args.pp_layers.split(",")]
    world, v, dp = dist.get_world_size(), args.virtual_stages, args.pp_replicas
    pp, rank = world // dp, dist.get_rank()
    assert len(layers) == pp and pp * dp == world, "--pp-layers: one count per stage"
    assert dp == 1 or v == 1, "--pp-replicas with Schedule1F1B only"
    # 1F1B over a group of its own, named as Megatron-LM names its pipeline groups (pg_config
    # lists it); interleaved over a DeviceMesh ("pp",) of the whole job, which reuses the default
    # group (a mesh dimension over every rank does), so pg_config names no pipeline. With
    # replicas: replica d is ranks d pp .. d pp + pp - 1, and each stage's ranks across the
    # replicas all-reduce its gradients over a DATA_PARALLEL_GROUP after the schedule's step
    # (every rank creates every group, in one order)
    pp_groups = [dist.new_group(list(range(d * pp, (d + 1) * pp)),
                                group_desc="PIPELINE_MODEL_PARALLEL_GROUP")
                 for d in range(dp)] if v == 1 else []
    dp_groups = [dist.new_group(list(range(s, world, pp)), group_desc="DATA_PARALLEL_GROUP")
                 for s in range(pp)] if dp > 1 else []
    group = (pp_groups[rank // pp] if v == 1 else
             init_device_mesh("cpu", (world,), mesh_dim_names=("pp",))["pp"].get_group())
    stage = rank % pp
    torch.manual_seed(stage)
    chunks = [torch.nn.Sequential(*[torch.nn.Linear(args.dim, args.dim)
                                    for _ in range(layers[stage])]) for _ in range(v)]
    stages = [PipelineStage(chunk, stage + c * pp, pp * v, torch.device("cpu"), group=group)
              for c, chunk in enumerate(chunks)]
    loss = lambda out, target: ((out - target) ** 2).mean()  # noqa: E731
    pipe = (Schedule1F1B(stages[0], args.micro_batches, loss_fn=loss) if v == 1 else
            ScheduleInterleaved1F1B(stages, args.micro_batches, loss_fn=loss))
    opt = torch.optim.SGD([p for chunk in chunks for p in chunk.parameters()], lr=0.01)
    x, y = torch.randn(args.batch, args.dim), torch.randn(args.batch, args.dim)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"rank{rank}.json")
    sched = schedule(wait=0, warmup=1, active=args.steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda prof: prof.export_chrome_trace(path)) as prof:
        for _ in range(args.steps + 1):
            opt.zero_grad()
            if stage == 0:
                pipe.step(x)
            elif stage == pp - 1:
                pipe.step(target=y)
            else:
                pipe.step()
            if dp_groups:  # the replicas' gradients, one flat all-reduce per step (DDP-like)
                grads = [p.grad for chunk in chunks for p in chunk.parameters()]
                flat = torch.cat([g.reshape(-1) for g in grads])
                dist.all_reduce(flat, group=dp_groups[stage])
                for g, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
                    g.copy_(part.view_as(g))
            opt.step()
            prof.step()
    dist.barrier()
    del pipe, stages, opt, prof
    gc.collect()
    dist.destroy_process_group()


def launch(out: Path, *flags: str, ranks: int = 2) -> list[str]:
    """Run this job on ``ranks`` gloo ranks under torchrun (one thread each) into ``out``; the trace
    files, sorted. A run that a signal ended (SIGABRT: "terminate called without an active
    exception", once in CI, at the ranks' exit after the traces were written; not seen in 12
    runs here) is run once more, since it says nothing of what the tests read."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}",
           str(Path(__file__)), "--out", str(out), *flags]
    for attempt in (1, 2):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
        aborted = "(SIGABRT)" in proc.stderr or "(SIGSEGV)" in proc.stderr
        if proc.returncode == 0 or not aborted or attempt == 2:
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sorted(str(p) for p in Path(out).iterdir())


def assert_finished_calls(summary, expected: dict[str, int]) -> None:
    """A job's collectives as the reader counts them (``TraceSummary.collectives``): ``expected``
    calls of each name, less those it left out as still open at the profiler's stop (its note).
    On a loaded machine gloo's worker thread may not yet have closed the last step's collective
    when the profiler stops (Kineto writes it "finished": false; once in 4 runs beside CI): at
    most one."""
    left_open = sum(int(m) for n in summary.notes
                    for m in re.findall(r"\((\d+) collective\(s\)", n))
    assert left_open <= 1, summary.notes
    counts = {name: summary.collectives[name]["count"] for name in expected}
    missing = sum(expected.values()) - sum(counts.values())  # the one left open may be another's
    assert 0 <= missing <= left_open and all(c <= expected[k] for k, c in counts.items()), \
        (counts, summary.notes)


if __name__ == "__main__":
    main()
