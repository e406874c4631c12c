"""Models to calibrate: built-in MLP, small CNN and small GPT in plain torch, or the user's own.

A model source gives ``(model, make_batch)`` or ``(model, make_batch, loss_fn)``:
``make_batch(batch_size) -> (inputs, targets)`` returns tensors (``inputs`` may be a tuple),
``loss_fn(outputs, targets) -> scalar tensor``. Without ``loss_fn``, integer targets get
cross-entropy (over the last dimension) and float targets mean squared error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from scalesim.calibration.factories import call_factory, load_callable
from scalesim.calibration.options import BUILTIN_MODELS
from torch import nn

from scalesim import builtin_gpt
from scalesim.errors import ScalesimError
from scalesim.schemas import TransformerShape

CLASSES = 10


@dataclass
class ModelBundle:
    """A model, how to make a batch of it, its loss, and how to describe it."""

    name: str
    model: nn.Module
    make_batch: Callable
    loss_fn: Callable
    sample_unit: str = "samples"
    transformer: TransformerShape | None = None  # the architecture, when it is a transformer
    # (the built-in gpt, or a factory's make_batch.transformer)
    attention_by_device: bool = False  # flash_attention is the device's (the built-in gpt's
    # scaled_dot_product_attention fuses on GPUs), set where the device is known


def default_loss(outputs, targets):
    """Cross-entropy for integer targets (class or token ids), mean squared error otherwise."""
    if isinstance(outputs, torch.Tensor) and outputs.dim() == 0 and targets is None:
        return outputs
    if not targets.is_floating_point():
        return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]).float(), targets.reshape(-1))
    return F.mse_loss(outputs.float(), targets.float())


class MLP(nn.Module):
    """``depth`` hidden layers of ``width`` with ReLU, then a 10-class head."""

    def __init__(self, width: int, depth: int):
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.head(self.body(x))


class SmallCNN(nn.Module):
    """``depth`` conv stages (3x3 conv, batch norm, ReLU; stride 2 after the first), pool, head."""

    def __init__(self, width: int, depth: int):
        super().__init__()
        stages: list[nn.Module] = []
        channels = 3
        for i in range(depth):
            out = width * (2 ** min(i, 3))
            stages += [nn.Conv2d(channels, out, 3, stride=1 if i == 0 else 2, padding=1,
                                 bias=False), nn.BatchNorm2d(out), nn.ReLU()]
            channels = out
        self.body = nn.Sequential(*stages)
        self.head = nn.Linear(channels, CLASSES)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=(2, 3)))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a 4x MLP."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class SmallGPT(nn.Module):
    """Token and position embeddings, ``depth`` blocks, final norm, tied output head."""

    def __init__(self, width: int, depth: int, seq_len: int, vocab: int):
        super().__init__()
        heads = builtin_gpt.heads_of(width)
        if width % heads:
            raise ScalesimError(f"gpt width {width} must be a multiple of 64 (or below 64)")
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(seq_len, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.blocks(self.tokens(idx) + self.positions(pos))
        return self.norm(x) @ self.tokens.weight.t()


class _CopyToTensorParallel(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the input gradient over ``group`` backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        torch.distributed.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's g: all-reduce of the partial outputs over ``group`` forward, identity backward."""

    @staticmethod
    def forward(ctx, y, group):
        y = y.contiguous()
        torch.distributed.all_reduce(y, group=group)
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ShardedBlock(nn.Module):
    """One pre-norm transformer block as one rank of a tensor-parallel group of ``tp`` holds it
    (Shoeybi et al. 2019, §3; Megatron-LM ``ColumnParallelLinear`` / ``RowParallelLinear``):
    QKV and the MLP's first matmul split by columns (heads/tp heads, ffn/tp), the attention
    output projection and the MLP's second matmul split by rows, norms whole. With ``group``
    the block all-reduces as Megatron does (the row-parallel outputs forward, the
    column-parallel inputs' gradients backward: two of each per block); without it, it computes
    the local shard alone (what the calibration times). (batch, seq, hidden) in and out."""

    def __init__(self, hidden: int, heads: int, ffn_hidden: int, tp: int = 1, group=None):
        super().__init__()
        if heads % tp or ffn_hidden % tp or hidden % heads:
            raise ScalesimError(f"block hidden {hidden}, heads {heads}, MLP {ffn_hidden} does "
                                f"not split over tp {tp}")
        self.heads, self.head_dim, self.group = heads // tp, hidden // heads, group
        local = self.heads * self.head_dim
        self.norm1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * local)
        self.proj = nn.Linear(local, hidden, bias=False)
        self.proj_bias = nn.Parameter(torch.zeros(hidden))  # added after the reduction
        self.norm2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn_hidden // tp)
        self.fc2 = nn.Linear(ffn_hidden // tp, hidden, bias=False)
        self.fc2_bias = nn.Parameter(torch.zeros(hidden))

    def _enter(self, x):
        return x if self.group is None else _CopyToTensorParallel.apply(x, self.group)

    def _leave(self, y):
        return y if self.group is None else _ReduceFromTensorParallel.apply(y, self.group)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self._enter(self.norm1(x))).chunk(3, dim=-1)
        q, k, v = (z.view(b, s, self.heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self._leave(self.proj(y.transpose(1, 2).reshape(b, s, -1))) + self.proj_bias
        z = self.fc2(F.gelu(self.fc1(self._enter(self.norm2(x)))))
        return x + self._leave(z) + self.fc2_bias


def block_module(spec: str, hidden: int, heads: int, ffn_hidden: int, seq_len: int,
                 tp: int) -> nn.Module:
    """The block one tensor-parallel rank of ``tp`` runs: built in (``spec == 'builtin'``,
    ``ShardedBlock`` without communication) or the user's ``package.module:factory``, called
    as ``factory(hidden=, heads=, ffn_hidden=, seq_len=, tp=)``."""
    if spec == "builtin":
        return ShardedBlock(hidden, heads, ffn_hidden, tp)
    factory = load_callable(spec, "block factory")
    made = call_factory(spec, "block factory", factory, hidden=hidden, heads=heads,
                        ffn_hidden=ffn_hidden, seq_len=seq_len, tp=tp)
    if not isinstance(made, nn.Module):
        raise ScalesimError(f"block factory '{spec}' must return a torch.nn.Module, not "
                            f"{type(made).__name__}")
    return made


def builtin(name: str, width: int | None, depth: int | None, seq_len: int, vocab: int,
            image_size: int) -> ModelBundle:
    """One of the built-in models, sized by the flags (``None`` = the model's default)."""
    depth = depth or 4
    if name == "mlp":
        width = width or 1024
        model = MLP(width, depth)

        def make_batch(b):
            return torch.randn(b, width), torch.randint(0, CLASSES, (b,))

        return ModelBundle(f"mlp(width={width}, depth={depth})", model, make_batch, default_loss)
    if name == "cnn":
        width = width or 32
        model = SmallCNN(width, depth)

        def make_batch(b):
            return torch.randn(b, 3, image_size, image_size), torch.randint(0, CLASSES, (b,))

        return ModelBundle(f"cnn(width={width}, depth={depth}, image={image_size})", model,
                           make_batch, default_loss, "images")
    if name == "gpt":
        width = width or 256
        model = SmallGPT(width, depth, seq_len, vocab)

        def make_batch(b):
            tokens = torch.randint(0, vocab, (b, seq_len + 1))
            return tokens[:, :-1], tokens[:, 1:]

        return ModelBundle(builtin_gpt.name_of(width, depth, seq_len, vocab), model, make_batch,
                           default_loss, f"sequences of {seq_len} tokens",
                           builtin_gpt.shape_of(width, depth, seq_len, vocab, False), True)
    raise ScalesimError(f"unknown model '{name}'; use {', '.join(BUILTIN_MODELS)} or "
                        "package.module:factory")


def from_factory(spec: str) -> ModelBundle:
    """The user's model from ``package.module:factory``; its return value is checked."""
    factory = load_callable(spec, "model factory")
    made = call_factory(spec, "model factory", factory)
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise ScalesimError(f"model factory '{spec}' must return (model, make_batch) or "
                            f"(model, make_batch, loss_fn), not {type(made).__name__}")
    model, make_batch = made[0], made[1]
    loss_fn = made[2] if len(made) == 3 else default_loss
    if not isinstance(model, nn.Module):
        raise ScalesimError(f"model factory '{spec}': first item must be a torch.nn.Module, "
                            f"not {type(model).__name__}")
    if not callable(make_batch) or not callable(loss_fn):
        raise ScalesimError(f"model factory '{spec}': make_batch and loss_fn must be callable")
    unit = getattr(make_batch, "sample_unit", "samples")
    return ModelBundle(spec, model, make_batch, loss_fn, unit,
                       declared_shape(spec, make_batch, model))


def declared_shape(spec: str, make_batch, model: nn.Module) -> TransformerShape | None:
    """The transformer a factory declares as ``make_batch.transformer`` (a dict of
    ``TransformerShape`` fields, or one), checked against the model's own parameter count
    (within ``schemas.PARAMS_TOLERANCE``); None when it declares none. The profile records it
    (``ComputeCurve.model_shape``) so that another shape or sequence is never taken for it."""
    from scalesim.jsonio import parse_model
    from scalesim.schemas import PARAMS_TOLERANCE

    declared = getattr(make_batch, "transformer", None)
    if declared is None:
        return None
    what = f"model factory '{spec}': make_batch.transformer"
    shape = declared if isinstance(declared, TransformerShape) else parse_model(
        declared, TransformerShape, what)
    counted = parameter_count(model)
    if abs(shape.param_count() / counted - 1.0) > PARAMS_TOLERANCE:
        raise ScalesimError(f"{what} counts {shape.param_count():,.0f} parameters, the model has "
                            f"{counted:,} ({100 * abs(shape.param_count() / counted - 1):.1f}% "
                            f"apart, more than {100 * PARAMS_TOLERANCE:g}%): fix the shape")
    return shape


def load_model(args) -> ModelBundle:
    """The model named by ``--model`` (built-in name or ``module:factory``), seeded."""
    torch.manual_seed(args.seed)
    if ":" in args.model:
        return from_factory(args.model)
    return builtin(args.model, args.width, args.depth, args.seq_len, args.vocab, args.image_size)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def element_bytes(model: nn.Module) -> int:
    """Bytes of one trainable parameter (and of its gradient, which DDP all-reduces)."""
    for p in model.parameters():
        if p.requires_grad:
            return p.element_size()
    raise ScalesimError("the model has no trainable parameters")


def make_optimizer(name: str, model: nn.Module) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-4)
    return torch.optim.SGD(params, lr=1e-3, momentum=0.9)


def optimizer_state_elements(name: str) -> int:
    """Optimizer state per parameter, in parameter-sized elements (Adam m and v; SGD momentum)."""
    return 2 if name == "adam" else 1


def to_device(x, device):
    if isinstance(x, torch.Tensor):
        return x.to(device, non_blocking=True)
    if isinstance(x, (tuple, list)):
        return type(x)(to_device(v, device) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    return x


def forward(model, inputs):
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(inputs)
