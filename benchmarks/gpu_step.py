"""Measure real one-device training steps of GPT-shaped transformers, for comparison with what
the layout model predicts from a calibration (docs/calibration.md, "GPU path").

Each shape is a GPT of Narayanan et al. 2021 as ``scalesim.model.transformer`` describes it by
default: learned positions, tied embeddings, LayerNorm, biases, a 4h GELU MLP, causal
``scaled_dot_product_attention`` (flash on a GPU). The blocks are ``calibration.models.
ShardedBlock`` at tp 1, the block ``scalesim calibrate --block-hidden`` times. A step is one
micro-batch forward, backward and a fused AdamW step, fp32 weights under ``torch.autocast``
(bf16 on CUDA). Timing: CUDA events (``calibration.timing.Clock``) around ``--steps`` whole
steps after ``--warmup`` untimed ones, repeated ``--rounds`` times; the median round per step is
reported, with the peak memory.

``workload_json`` gives each shape as a scalesim workload (``scalesim schema workload``), for
``benchmarks/gpu_compare.py`` to predict the same step. Run::

    python benchmarks/gpu_step.py --out steps.json      # CUDA if available, else tiny CPU shapes
"""

from __future__ import annotations

import json
import statistics
import time

# (name, layers, hidden, heads, seq, vocab, micro_batch) on a GPU; tiny shapes on a CPU.
GPU_SHAPES = (
    ("gpt-h1024-l24-s1024-mb16", 24, 1024, 16, 1024, 50304, 16),
    ("gpt-h2048-l16-s2048-mb8", 16, 2048, 16, 2048, 50304, 8),
    ("gpt-h4096-l8-s2048-mb4", 8, 4096, 32, 2048, 50304, 4),
    ("gpt-h8192-l4-s4096-mb1", 4, 8192, 64, 4096, 50304, 1),
)
CPU_SHAPES = (
    ("gpt-h128-l2-s64-mb4", 2, 128, 4, 64, 512, 4),
    ("gpt-h256-l2-s64-mb2", 2, 256, 4, 64, 512, 2),
)


def build(layers: int, hidden: int, heads: int, seq: int, vocab: int, device):
    import torch
    from scalesim.calibration.models import ShardedBlock
    from torch import nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab, hidden)
            self.positions = nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(ShardedBlock(hidden, heads, 4 * hidden) for _ in range(layers))
            self.norm = nn.LayerNorm(hidden)

        def forward(self, ids):
            x = self.tokens(ids) + self.positions.weight[: ids.shape[1]]
            for block in self.blocks:
                x = block(x)
            return self.norm(x) @ self.tokens.weight.t()  # tied output projection

    with torch.device(device):  # initialise on the device: a 3.7 B model is slow on the host
        return GPT()


def measure(shape, device, dtype, warmup: int, steps: int, rounds: int) -> dict:
    import torch
    import torch.nn.functional as F
    from scalesim.calibration.timing import Clock

    name, layers, hidden, heads, seq, vocab, mb = shape
    torch.manual_seed(0)
    model = build(layers, hidden, heads, seq, vocab, device)
    cuda = device.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    ids = torch.randint(0, vocab, (mb, seq), device=device)
    target = torch.randint(0, vocab, (mb, seq), device=device)

    def step():
        with torch.autocast(device_type=device.type, dtype=dtype):
            logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, vocab), target.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    clock = Clock(device)

    def timed(n: int) -> float:
        start = clock.mark()
        for _ in range(n):
            step()
        return clock.seconds(start, clock.mark()) / n

    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    timed(warmup)
    per_step_s = [timed(steps) for _ in range(rounds)]
    params = sum(p.numel() for p in model.parameters())
    peak = float(torch.cuda.max_memory_allocated(device)) if cuda else None
    return {"name": name, "layers": layers, "hidden": hidden, "heads": heads, "seq_len": seq,
            "vocab": vocab, "micro_batch": mb, "params": params,
            "step_s_median": statistics.median(per_step_s), "step_s_rounds": per_step_s,
            "peak_memory_bytes": peak}


def workload_json(row: dict) -> dict:
    """The same shape as a scalesim workload (defaults: GPT, tied embeddings, learned
    positions, LayerNorm, biases, 4h MLP); flash attention where the step ran on a GPU."""
    return {"schema_version": "scalesim-workload/1", "name": row["name"], "params": row["params"],
            "micro_batch": row["micro_batch"], "sample_unit": "sequences",
            "transformer": {"layers": row["layers"], "hidden": row["hidden"],
                            "heads": row["heads"], "seq_len": row["seq_len"],
                            "vocab": row["vocab"], "flash_attention": row["flash_attention"]}}


def main() -> None:
    from scalesim.cli.main import OneLineParser  # here: the module imports no scalesim

    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file for the measured steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    from scalesim.outfiles import check_writable, write_text

    check_writable(args.out)  # before minutes of measuring, not after

    import torch

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16
    rows = []
    for shape in GPU_SHAPES if cuda else CPU_SHAPES:
        row = measure(shape, device, dtype, args.warmup, args.steps, args.rounds)
        if cuda:  # the last shape's model and optimizer are gone with measure's frame
            torch.cuda.empty_cache()
        row["flash_attention"] = cuda
        rows.append(row)
        print(f"{row['name']}: {row['params'] / 1e9:.3f} B params, step "
              f"{row['step_s_median'] * 1e3:.2f} ms (median of {args.rounds} rounds of "
              f"{args.steps}), peak {(row['peak_memory_bytes'] or 0) / 2**30:.1f} GiB", flush=True)
    meta = {"device": torch.cuda.get_device_name(0) if cuda else "cpu",
            "torch": torch.__version__, "cuda": torch.version.cuda, "dtype": str(dtype),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": rows}
    write_text(args.out, json.dumps(meta, indent=1))


if __name__ == "__main__":
    from script_cli import run_script  # this folder: first on sys.path when run as a script

    run_script(main)
