"""Devices a cloud bills: whole instances, not the GPUs a run uses (docs/model.md §9).

A cloud rents instances of fixed shapes (AWS p4de/p5: 8 GPUs and nothing smaller; AWS p3 and
Google Cloud a2-highgpu: 1, 2 or 4 and 8 GPUs), each at its shape's price. With ``sizes`` the
GPUs per shape the provider rents (``Hardware.instance_sizes``, ``Scenario.instance_sizes``;
None: whole servers only) and a price per GPU-hour that scales with the shape (true of every
preset, ``presets.PRICES``), a run of ``p`` devices on servers of ``g`` bills

    billed(p) = floor(p / g) * shape(g) + shape(p mod g),   shape(0) = 0

where ``shape(n)`` is the smallest listed size holding ``n`` devices (above the largest size
``m``: ``floor(n / m)`` instances of ``m`` and the smallest shape of the rest). 12 GPUs of
8-GPU instances bill 16; with 4-GPU shapes as well, 12. Arrays in, arrays out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scalesim.bounds import list_text
from scalesim.device_nouns import Nouns, nouns_for, replica_of
from scalesim.errors import ScalesimError


def check_sizes(sizes: Sequence[int] | None, name: str = "instance_sizes") -> None:
    """ScalesimError naming ``name`` unless ``sizes`` is None or device counts of 1 or more."""
    if sizes is None:
        return
    if len(sizes) == 0 or any(int(s) < 1 for s in sizes):
        raise ScalesimError(f"{name} {list_text(sizes)}: give the GPUs of each instance shape, "
                            "1 or more each (e.g. 1,2,4,8)", knobs=("instance_sizes",))


def _shape(n: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Devices billed for ``n`` devices on one server (array): the smallest size holding them."""
    largest = sizes[-1]
    whole, rest = np.divmod(n, largest)
    at = np.searchsorted(sizes, rest)  # rest < largest, so at < len(sizes)
    return whole * largest + np.where(rest > 0, sizes[np.minimum(at, sizes.size - 1)], 0)


def billed_devices(devices, server_devices, sizes: Sequence[int] | None = None) -> np.ndarray:
    """Devices billed for ``devices`` on servers of ``server_devices`` (arrays, int64), rented as
    instances of ``sizes`` GPUs (None: whole servers). See the module docstring."""
    check_sizes(sizes)
    p = np.asarray(devices, dtype=np.int64)
    g = np.asarray(server_devices, dtype=np.int64)
    shapes = np.unique(np.asarray(sizes if sizes is not None else [], dtype=np.int64))
    full, rest = np.divmod(p, g)
    if shapes.size == 0:  # whole servers only
        return (full + (rest > 0)) * g
    return full * _shape(g, shapes) + _shape(rest, shapes)


def larger_than_server(sizes: Sequence[int] | None, server_devices: int) -> str | None:
    """The one-line problem where an instance shape holds more GPUs than a server of
    ``server_devices``; None where every shape fits (or there are none)."""
    if sizes and max(sizes) > server_devices:
        return (f"instance_sizes: {max(sizes)} GPUs is more than a server's {server_devices} "
                f"(devices_per_node); give shapes of at most {server_devices} GPUs that divide "
                "it, as clouds rent them")
    return None


def not_dividing_server(sizes: Sequence[int] | None, server_devices: int) -> str | None:
    """The one-line problem where an instance shape does not divide a server of
    ``server_devices`` GPUs (a hardware file's shapes: a server is rented whole or in equal
    parts, 1, 2, 4 or 8 of 8); None where every shape divides it (or there are none)."""
    odd = [int(n) for n in sizes or () if server_devices % int(n)]
    if odd:
        return (f"instance_sizes: {odd[0]} GPUs does not divide a server's {server_devices} "
                "(devices_per_node); give shapes that split it evenly, as clouds rent them")
    return None


def shapes_problem(sizes: Sequence[int] | None, server_devices: int) -> str | None:
    """The one-line problem of instance shapes on a server of ``server_devices`` GPUs (one
    larger than the server, or one that does not divide it); None where they can be rented.
    The rule of a hardware file's ``instance_sizes`` and of ``--instance-sizes`` alike."""
    return larger_than_server(sizes, server_devices) or not_dividing_server(sizes, server_devices)


def job_sizes(chosen: Sequence[int] | None, listed: Sequence[int] | None, server_devices: int,
              used_per_server: int | None = None, allocation: int | None = None) -> list[int]:
    """The instance shapes a job is billed in, GPUs each: the scenario's (``chosen``), else the
    hardware's (``listed``), else its allocation unit of ``allocation`` GPUs
    (``Hardware.allocation_devices``: a GB200 NVL72 compute tray of 4, so 128 GPUs bill 128,
    not two racks' 144), else its whole server of ``server_devices`` GPUs (a job on 4 GPUs
    of an 8-GPU server still rents the server). ScalesimError where a chosen shape holds more
    GPUs than a server (the larger of the hardware's and the ``used_per_server`` GPUs the job
    puts on each) or does not divide it: the hardware file's rules (``schemas.Hardware``), so
    ``--instance-sizes 3`` is refused as a file's ``[3]`` is, not billed as 9 of 8 GPUs."""
    if problem := shapes_problem(chosen, max(server_devices, used_per_server or 0)):
        raise ScalesimError(problem, knobs=("instance_sizes",))  # ``chosen``: the scenario's
    return [int(n) for n in chosen or listed or [allocation or server_devices]]


def sizes_within(sizes: Sequence[int] | None, server_devices: int) -> list[int] | None:
    """The shapes that fit a server of ``server_devices`` (a calibration that finds a smaller
    server than its preset's keeps the preset's price and the shapes that still apply); None
    when none does: whole servers."""
    kept = [int(s) for s in sizes or () if int(s) <= server_devices]
    return kept or None


def billing_words(server_devices: int, sizes: Sequence[int] | None,
                  device_name: str = "", words: Nouns | None = None,
                  whole_devices: int | None = None) -> str:
    """How devices are billed, in words, for notes and the app; a CPU calibration's devices
    (``device_nouns.is_cpu_device``) are its processes on a host (``nouns_for``): 'billed per
    whole host of 2 processes'. ``server_devices``: the GPUs the job uses per server;
    ``whole_devices``: those a whole server holds (a GB200 NVL72 rack's 72, which a job of
    whole trays is not billed; default ``server_devices``). ``words``: the hardware's nouns
    (``hardware_nouns``: a GB200 NVL72's server is a rack), else ``nouns_for(device_name)``'s."""
    listed = [server_devices] if sizes is None else sorted({int(s) for s in sizes})
    words = words or nouns_for(device_name)
    unit, one, server = words.gpus, words.gpu, words.server
    if len(listed) == 1 and listed[0] >= server_devices and listed[0] > 1:
        text = f"billed per whole {server} of {listed[0]} {unit}"
    elif listed == [1]:
        text = f"billed per {one}"
    elif len(listed) == 1 and replica_of(device_name) is not None:  # a fitted replica profile
        text = f"billed per {listed[0]} {unit} (the devices of one of the runs' {words.servers})"
    elif len(listed) == 1 and listed[0] == _tray_of(device_name):  # GB200 NVL72's 4-GPU trays
        text = (f"billed per allocation unit of {listed[0]} {unit} (the compute tray a scheduler "
                f"hands out: whole trays of the job's {unit}, not whole {words.servers} of "
                f"{whole_devices or server_devices})")
    elif len(listed) == 1:  # one shape smaller than the GPUs used per server: as many as hold them
        text = (f"billed per instance of {listed[0]} {unit} (as many as hold a {server}'s "
                f"{server_devices} {unit})")
    else:
        text = (f"billed per instance of {', '.join(map(str, listed))} {unit} (the smallest "
                f"that holds a {server}'s {unit})")
    return text


def _tray_of(device_name: str) -> int | None:
    """Devices of the allocation unit of ``device_name``'s systems where it is smaller than the
    server (``presets.allocation_devices_of``: a GB200 NVL72 compute tray, 4), else None."""
    from scalesim.presets import allocation_devices_of

    tray = allocation_devices_of(device_name) if device_name else None
    return None if tray is None else tray[0]
