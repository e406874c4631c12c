"""Which parallelism a traced process group serves, read from the name its framework gave it.

PyTorch writes each process group's description (``group_desc``) twice in a profiler trace:
in ``distributedInfo.pg_config`` (every group the rank belongs to: ``pg_name``, ``pg_desc``,
``pg_size``, ``ranks``), and, on GPU traces, in the arguments of every NCCL kernel ("Process
Group Name", "Process Group Description", "Group size", "Process Group Ranks"; Kineto's
collective metadata, ``RECORD_PARAM_COMMS``). The frameworks name their groups:

- ``torch.distributed.device_mesh`` (torchtitan, FSDP2, accelerate): ``mesh_<dim>``, with the
  dimension names the job chose; torchtitan's are ``dp_replicate``, ``dp_shard``, ``dp_shard_cp``,
  ``dp_cp``, ``cp``, ``tp``, ``pp``, ``ep`` (checked here: ``init_device_mesh(..., mesh_dim_names=
  ("dp_shard", "tp"))`` writes ``mesh_dp_shard`` and ``mesh_tp`` in pg_config, torch 2.13);
- Megatron-Core (``megatron/core/parallel_state.py``, ``group_desc=``):
  ``TENSOR_MODEL_PARALLEL_GROUP``, ``PIPELINE_MODEL_PARALLEL_GROUP``, ``DATA_PARALLEL_GROUP``
  (and ``..._WITH_CP``, ``INTRA_PARTIAL_DATA_PARALLEL_GROUP...``), ``CONTEXT_PARALLEL_GROUP``,
  ``EXPERT_...``, ``MODEL_PARALLEL_GROUP``, ``EMBEDDING_GROUP``, ``TENSOR_AND_DATA_...``;
- the default group: ``default_pg``, every rank.

A group the traces do not name (``undefined``, created without ``group_desc``) is read as data
parallel when it spans every rank, else it has no role (``None``): the diagnosis counts it with
the data-parallel exchange, as it counted every collective before groups were read, and says so.
"""

from __future__ import annotations

import re

ROLES = ("dp", "tp", "cp", "pp", "ep", "other")
MODEL_PARALLEL_ROLES = ("tp", "cp", "pp")  # the degrees that split the model: dp = world / them
ROLE_WORDS = {"dp": "data-parallel", "tp": "tensor-parallel", "cp": "context-parallel",
              "pp": "pipeline", "ep": "expert-parallel", "other": "other"}
# DeviceMesh dimension names (the first word of ``mesh_<dim>``) and the role each serves
MESH_DIMS = {"dp": "dp", "dp_replicate": "dp", "dp_shard": "dp", "dp_shard_cp": "dp",
             "dp_cp": "dp", "fsdp": "dp", "hsdp": "dp", "ddp": "dp", "replicate": "dp",
             "shard": "dp", "data": "dp", "tp": "tp", "tensor": "tp", "sp": "tp", "cp": "cp",
             "context": "cp", "pp": "pp", "pipeline": "pp", "ep": "ep", "expert": "ep"}
# Megatron-Core group descriptions: the first pattern found decides (order matters: the
# combined groups before their parts)
MEGATRON_PATTERNS = (("expert", "ep"), ("tensor_and_", "other"), ("tensor_model_parallel", "tp"),
                     ("pipeline_model_parallel", "pp"), ("context_parallel", "cp"),
                     ("data_parallel", "dp"), ("embedding", "other"), ("model_parallel", "other"))
UNNAMED_ROLE = "unnamed"  # a group no name places (group_role gives None)
DEFAULT_GROUP_DESC = "default_pg"
UNNAMED_DESCS = ("", "undefined")
_RANK = re.compile(r"\d+")
MAX_DIGITS = 9  # a rank or group size past 10^9 is no job's: MAX_WORLD_SIZE is 2^20


def group_role(desc: str | None, size: int | None, world: int | None) -> str | None:
    """The role (``ROLES``) of a group from its description; None where no name says it and
    the group does not span the job (``size < world``)."""
    d = (desc or "").strip().lower()
    if d.startswith("mesh_"):
        role = MESH_DIMS.get(d[len("mesh_"):])
        if role is not None:
            return role
    elif d == DEFAULT_GROUP_DESC:
        return "dp"
    elif d not in UNNAMED_DESCS:
        for pattern, role in MEGATRON_PATTERNS:
            if pattern in d:
                return role
    if size is not None and world is not None and size >= world:
        return "dp"
    return None


def ranks_of(value) -> list[int] | None:
    """A group's ranks as Kineto writes them: a list, or its text ("[0, 1, 2, 3]", truncated
    past 30 as "[0, 1, ..., 63]": then None, the list being incomplete)."""
    if isinstance(value, list):
        return [r for r in value if isinstance(r, int) and not isinstance(r, bool)] or None
    if not isinstance(value, str) or "..." in value:
        return None
    found = _RANK.findall(value[:100_000])
    if any(len(m) > MAX_DIGITS for m in found):
        return None
    return [int(m) for m in found] or None


def whole_or_none(value) -> int | None:
    """A group size as written (an int, or its text of ASCII digits); None where it is not a
    whole from 1 to 10^9."""
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS):
            return None
        value = int(text)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**MAX_DIGITS:
        return value
    return None


def traced_degrees(process_groups: list[list[dict]], kernel_groups: list[dict], world: int) -> dict:
    """The job's parallel degrees from its traces' groups: {"tp", "cp", "pp", "dp", "named",
    "conflict"}. ``process_groups``: each rank's pg_config entries
    (``traces.TraceSummary.process_groups``); ``kernel_groups``: each rank's
    ``TraceSummary.groups`` (role -> {"size", "descs"}). A model-parallel degree is the largest
    group of its role (1 where none is named; a group larger than the job is left out); dp is
    what the world leaves, ``world // (tp x cp x pp)``, and where tp x cp x pp does not divide
    the world no degree is read. ``named``: "desc size" of each named group of 2 or more ranks,
    for the report's words; ``conflict``: what was left out and why ('' none)."""
    sizes: dict[str, int] = {}
    named: dict[str, int] = {}
    beyond: set[str] = set()  # groups said to be larger than the job: not read
    for groups in process_groups:
        for g in groups:
            role = group_role(g.get("desc"), g.get("size"), world)
            if role is None or g.get("size") is None:
                continue
            if g["size"] > world:
                beyond.add(f"{g.get('desc') or 'a group'} of {g['size']}")
                continue
            sizes[role] = max(sizes.get(role, 1), g["size"])
            if g.get("desc") and g["desc"] != DEFAULT_GROUP_DESC and g["size"] > 1:
                named[g["desc"]] = max(named.get(g["desc"], 0), g["size"])
    for groups in kernel_groups:
        for role, info in groups.items():
            size = info.get("size")
            if role in ROLES and size:
                if size > world:
                    beyond.add(f"{', '.join(info.get('descs') or []) or 'a group'} of {size}")
                    continue
                sizes[role] = max(sizes.get(role, 1), size)
    degrees = {r: sizes.get(r, 1) for r in MODEL_PARALLEL_ROLES}
    split = degrees["tp"] * degrees["cp"] * degrees["pp"]
    conflict = ""
    if beyond:
        conflict = (f"groups larger than the job's {world} ranks ({', '.join(sorted(beyond)[:3])}) "
                    "are left out")
    if world % split:
        conflict = (f"tensor, context and pipeline groups of {degrees['tp']}, {degrees['cp']} and "
                    f"{degrees['pp']} do not divide the job's {world} ranks: the layout is not read")
        degrees = {r: 1 for r in MODEL_PARALLEL_ROLES}
        split = 1
    degrees["dp"] = world // split
    degrees["named"] = [f"{d} {n}" for d, n in sorted(named.items())]
    degrees["conflict"] = conflict
    return degrees


def exchange_replicas(degrees: dict) -> int:
    """The ranks one data-parallel exchange runs over: the replicas of a shard of the model,
    dp x cp (context-parallel ranks hold the same weights: Megatron-Core reduces gradients over
    ``DATA_PARALLEL_GROUP_WITH_CP``, torchtitan shards FSDP over ``dp_shard_cp``)."""
    return degrees.get("dp", 1) * degrees.get("cp", 1)


def splits_the_model(degrees: dict) -> bool:
    """True where the traces name a tensor-, context- or pipeline-parallel group of 2 or more."""
    return any(degrees.get(r, 1) > 1 for r in MODEL_PARALLEL_ROLES)


def layout_words(degrees: dict) -> str:
    """'tp 8 x pp 2 x dp 4' (the degrees above 1, dp always)."""
    parts = [f"{r} {degrees[r]}" for r in ("tp", "cp", "pp") if degrees.get(r, 1) > 1]
    return " x ".join([*parts, f"dp {degrees.get('dp', 1)}"])
