"""Record real torch.profiler (Kineto) traces of a one-GPU training loop at two micro-batches,
for ``scalesim calibrate --from-trace`` and ``scalesim diagnose --trace`` to read (docs/
calibration.md "GPU path"). The loop is what such a user profiles: a DataLoader with workers, a
GPT from ``gpu_step.build`` under bf16 autocast, backward, an all-reduce of the gradients over
a one-rank NCCL group (the call DDP makes; one rank has no peer to send to) and a fused AdamW
step, inside ``schedule(wait=1, warmup=1, active=5)``. Also times the same steps with CUDA
events, so the trace's reading can be checked against them.

    python benchmarks/gpu_trace.py --out-dir traces   # trace-b8/b16.json.gz, trace-steps.json

Without CUDA it runs the same loop on the CPU (gloo, a smaller GPT): a dry run of the script.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GPU_SHAPE = (4, 1024, 16, 1024, 50304)  # layers, hidden, heads, seq, vocab
CPU_SHAPE = (2, 128, 4, 64, 512)


def run(batch: int, out_dir: str, shape) -> dict:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from gpu_step import build
    from scalesim.calibration.timing import Clock
    from torch.profiler import ProfilerActivity, profile, schedule

    LAYERS, HIDDEN, HEADS, SEQ, VOCAB = shape
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    model = build(LAYERS, HIDDEN, HEADS, SEQ, VOCAB, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    data = torch.utils.data.TensorDataset(torch.randint(0, VOCAB, (batch * 12, SEQ)))
    loader = torch.utils.data.DataLoader(data, batch_size=batch, num_workers=2, pin_memory=cuda)
    params = [p for p in model.parameters()]
    times, clock = [], Clock(device)

    def step(ids):
        ids = ids.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
            logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, VOCAB), ids.view(-1))
        loss.backward()
        flat = torch.cat([p.grad.view(-1) for p in params])  # one bucket, as DDP's flat buffer
        dist.all_reduce(flat)
        opt.step()
        opt.zero_grad(set_to_none=True)

    path = os.path.join(out_dir, f"trace-b{batch}.json.gz")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities,
                 schedule=schedule(wait=1, warmup=1, active=5),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for i, (ids,) in enumerate(loader):
            if i >= 7:
                break
            start = clock.mark()
            step(ids)
            times.append(clock.seconds(start, clock.mark()))
            prof.step()
    return {"micro_batch": batch, "trace": os.path.basename(path),
            "profiled_step_s_median": statistics.median(times[2:7]), "step_s": times,
            "bytes": os.path.getsize(path)}


def main() -> None:
    from scalesim.cli.main import OneLineParser  # here: the module imports no scalesim

    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()
    import torch
    import torch.distributed as dist

    os.makedirs(args.out_dir, exist_ok=True)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                                device_id=torch.device("cuda", 0))
    else:
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    shape = GPU_SHAPE if cuda else CPU_SHAPE
    rows = [run(b, args.out_dir, shape) for b in (8, 16)]
    dist.destroy_process_group()
    meta = {"device": torch.cuda.get_device_name(0) if cuda else "cpu",
            "torch": torch.__version__,
            "shape": dict(zip(("layers", "hidden", "heads", "seq_len", "vocab"), shape,
                              strict=True)), "runs": rows}
    with open(os.path.join(args.out_dir, "trace-steps.json"), "w") as f:
        json.dump(meta, f, indent=1)
    for r in rows:
        print(f"b{r['micro_batch']}: profiled step {r['profiled_step_s_median'] * 1e3:.2f} ms, "
              f"trace {r['bytes'] / 1e6:.2f} MB")


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
