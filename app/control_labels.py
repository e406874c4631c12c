"""The planner sidebar's control labels, in one place, in the loaded profile's nouns.

A label's ``{device}``, ``{devices}``, ``{server}`` (and capitalised ``{Device}``, ``{Devices}``)
are the profile's words (``scalesim.device_nouns.Nouns``): a GPU profile's labels read as they
always did ("Devices per server"), a CPU calibration's say processes and hosts ("Processes per
host"). The HTML report's scenario lines and the notes that name a control use the same labels.
"""

from __future__ import annotations

from scalesim.device_nouns import Nouns

# state field -> (the control's name, as the sidebar label starts and every message names the
# control; the rest of the sidebar label: an example, a unit or what empty means)
CONTROLS = {
    "hw": ("Hardware preset", ""),
    "wl": ("Workload preset", ""),
    "dmax": ("Largest {device} count", ""),
    "grid": ("{Device} counts to plot", ""),
    "dlist": ("{Device} counts", " (e.g. 1,2,4,8,16,32 or 1-512)"),
    "dpn": ("{Devices} per {server}", ""),
    "mb": ("Per-{device} micro-batch", ""),
    "tp": ("Tensor parallel", " (tp, inside one {server})"),
    "intra": ("Intra-{server} link", ""),
    "ibw": ("Intra-{server} bus bandwidth (GB/s)", ""),
    "ilat": ("Intra-{server} latency per step (µs)", ""),
    "inter": ("Inter-{server} link", ""),
    "nics": ("NICs per {server}", ""),
    "ebw": ("Inter-{server} bus bandwidth (GB/s)", ""),
    "elat": ("Inter-{server} latency per step (µs)", ""),
    "lw": ("Loader workers", " per {device} (empty: the profile's best)"),
    "price": ("Price per {device}-hour", " (USD)"),
    "slow": ("Slow {device} rank", " (empty: none)"),
    "sf": ("Slow {device}: times slower", ""),
    "focus": ("{Device} count for remedies and A vs B", ""),
    "mm": ("Memory margin", " (share of each {device}'s memory kept free, 0 to 0.5)"),
    "gmax": ("Largest {device} count goal searches", ""),
    "glay": ("Goal's layouts", ""),
    "gs": ("Gradient sync", " under accumulation (ZeRO-2/3)"),
    "sg": ("Shard group (HSDP)", ": ZeRO states sharded over this many ranks, replicated across "
           "the rest of dp; empty: all of dp"),
    "dl": ("Deadline (hours)", ", empty: none"),
    "bud": ("Budget (USD)", ", empty: none"),
    "bkt": ("Gradient bucket size (MiB)", ""),
    "emin": ("E_min", ": samples to quality at a tiny batch (optional)"),
}
LABELS = {field: name + rest for field, (name, rest) in CONTROLS.items()}  # the sidebar's
NAMES = {field: name for field, (name, _) in CONTROLS.items()}  # the messages'
# goal --layout's choices (the knob table's row goal_layout) and the app's auto (its default)
GOAL_LAYOUT_LABELS = {"auto": "auto: search unless the Layout sets a split",
                      "search": "search: the planner's best at each {device} count",
                      "given": "given: the sidebar's Layout at every count"}
# the sidebar toggle of overlap with backward (no link-key label: a toggle names itself)
OVERLAP_LABEL = "Overlap gradient exchange with backward"
STRATEGY_LABELS = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3 / FSDP"}
ZERO_FRAMEWORK_LABELS = {"fsdp": "FSDP (ZeRO-1: Megatron-Core distributed optimizer)",
                         "deepspeed": "DeepSpeed"}
GRID_LABELS = {"pow2": "powers of two", "server": "every {server}", "list": "my list"}
MODE_LABELS = {"weak": "per-{device} batch (weak scaling)",
               "strong": "fixed global batch (strong scaling)"}
B_LABELS = {
    "best": "the best remedy", "bigger_batch": "double the per-{device} batch",
    "overlap": "overlap communication", "accumulation": "accumulate gradients",
    "loader": "cache input / more loader workers", "sharding": "change ZeRO sharding",
    "interconnect": "faster interconnect", "slow_device": "fix the slow {device}",
    "more_devices": "add a {server}'s worth of {devices}",
    "split_model": "split the model (best layout)",
    "attention_kernel": "use a Hopper attention kernel (cuDNN, FlashAttention-3)",
    "tp_overlap": "overlap tensor-parallel communication",
    "fp8": "run the weight matmuls in fp8",
}


def in_words(template: str, words: Nouns) -> str:
    """``template`` with the profile's nouns put in (see the module docstring)."""
    return template.format(device=words.device, devices=words.devices, server=words.server,
                           Device=words.device.capitalize(), Devices=words.devices.capitalize())


def label(field: str, words: Nouns) -> str:
    """The sidebar label of the control of state field ``field`` (``LABELS``)."""
    return in_words(LABELS[field], words)


def choice_labels(labels: dict[str, str], words: Nouns) -> dict[str, str]:
    """A control's choices (``GRID_LABELS``, ``MODE_LABELS``, ``B_LABELS``) in ``words``."""
    return {key: in_words(text, words) for key, text in labels.items()}
