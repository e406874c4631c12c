"""The transformer a set of measured runs trained, and the GPU it ran on (``scalesim diagnose
--workload PRESET|FILE --gpu NAME``), so that the profile fitted to the runs predicts through the
layout model and the remedy "split the model" can apply (docs/diagnose.md, docs/model.md §22).

``model_shape`` is also how ``scalesim plan --workload`` reads its model: a transformer preset
(``scalesim presets``) or a workload JSON with a ``transformer`` shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scalesim.errors import KNOB, ScalesimError, as_literal, excerpt, joined, name_problem
from scalesim.layout import knob_refusal
from scalesim.schemas import TransformerShape


@dataclass(frozen=True)
class RunsModel:
    """A transformer shape with its parameter count and a GPU's datasheet numbers."""

    name: str  # the preset or file it came from
    shape: TransformerShape
    params: float  # parameters (gradient elements)
    gpu: str
    peak_tflops: float | None  # dense 16-bit peak, TFLOP/s (None: not listed)
    memory_bandwidth_GBps: float
    memory_bytes: float | None  # device memory (None: not known from the name)


def model_shape(model: str, text: str | None = None) -> tuple[TransformerShape, float | None]:
    """(shape, workload params or None) of a transformer preset name or a workload JSON file;
    ``text``: that file's contents, ``model`` its name (an upload)."""
    from scalesim.jsonio import parse_json_text, parse_model, read_json
    from scalesim.presets import TRANSFORMERS, get_transformer
    from scalesim.schemas import Workload

    if text is None and (model in TRANSFORMERS or not Path(model).suffix):
        return get_transformer(model), None
    data = read_json(model) if text is None else parse_json_text(text, model)
    workload = parse_model(data, Workload, model)
    if workload.transformer is None:
        raise ScalesimError(f"{model}: the workload has no 'transformer' shape; give layers, "
                            "hidden, heads, seq_len and vocab")
    return workload.transformer, workload.params


def workload_of(model: str, text: str | None = None):
    """The ``Workload`` of a preset name (``presets.get_workload``: bert-large's DLE bytes, a
    transformer preset's 16-bit workload) or a workload JSON file (``text``: its contents,
    ``model`` its name), as ``predict --workload`` reads it."""
    from scalesim.jsonio import parse_json_text, parse_model, read_json
    from scalesim.presets import TRANSFORMERS, get_workload
    from scalesim.schemas import Workload

    if text is None and (model in TRANSFORMERS or not Path(model).suffix):
        return get_workload(model)
    data = read_json(model) if text is None else parse_json_text(text, model)
    return parse_model(data, Workload, model)


@dataclass(frozen=True)
class GradientBytes:
    """Bytes per gradient element a runs' fit charges, as ``predict`` charges the workload
    under the runs' exchange. ``wire``: ``diagnose_runs``' ``wire_bytes_per_param`` (under DDP
    its all-reduce's, the reduction itself; sharded: the all-gathers' wire); ``reduce``: the
    sharded reduction's where the workload states one (None: the framework's default);
    ``gathered``: the parameters' bytes ZeRO's all-gathers send (the workload's
    ``wire_bytes_per_param``: the fitted DDP workload's, ``RunsExchange.gathered_bytes_per_param``);
    ``source``: where the bytes came from, for a note."""

    wire: float
    reduce: float | None
    gathered: float
    source: str


def gradient_bytes_of(model: str, exchange, text: str | None = None) -> GradientBytes:
    """The bytes ``predict`` charges the workload ``model`` (a preset or file, ``workload_of``)
    under ``exchange`` (``fit_runs.RunsExchange``): one rule, ``memory.reduce_bytes_per_param_of``
    (a stated ``reduce_bytes_per_param``; else DDP and ZeRO-1 under the default framework
    reduce fp32, the rest the wire's bytes; docs/model.md §4)."""
    import math

    from scalesim.model.memory import STRATEGIES, reduce_bytes_per_param_of
    from scalesim.model.sharding import FRAMEWORKS

    workload = workload_of(model, text)
    stated = workload.reduce_bytes_per_param
    reduce = float(reduce_bytes_per_param_of(
        STRATEGIES[exchange.strategy], FRAMEWORKS[exchange.zero_framework],
        workload.wire_bytes_per_param, workload.grad_bytes_per_param,
        math.nan if stated is None else stated))
    name = excerpt(model)
    gathered = float(workload.wire_bytes_per_param)
    if exchange.strategy == "ddp":
        why = (f"its stated reduce_bytes_per_param {stated:g}" if stated is not None else
               f"DDP under the default framework all-reduces fp32 gradients: max(its "
               f"grad_bytes_per_param {workload.grad_bytes_per_param:g}, 4)")
        whose = ("its wire_bytes_per_param" if "wire_bytes_per_param" in workload.model_fields_set
                 else "the workload's default, 16-bit")
        return GradientBytes(reduce, None, gathered,
                             f"gradients all-reduced: {reduce:g} bytes each, as predict charges "
                             f"{name} under DDP ({why}; docs/model.md §4); the remedies' ZeRO "
                             f"gathers its parameters at {gathered:g} bytes each ({whose})")
    stated_words = (f", its reduction the stated reduce_bytes_per_param {stated:g}"
                    if stated is not None else "")
    return GradientBytes(float(workload.wire_bytes_per_param), stated, gathered,
                         f"gradients on the wire: {workload.wire_bytes_per_param:g} bytes each, "
                         f"as predict charges {name} under {exchange.strategy} (its "
                         f"wire_bytes_per_param{stated_words}; docs/model.md §4)")


def runs_model(model: str, gpu: str | None, params: float | None = None,
               text: str | None = None) -> RunsModel:
    """The runs' model (``model_shape``, of ``text`` where given) on ``gpu``. ``params``: the
    runs' parameter count, checked against the shape's (the workload schema's 5 % rule); default
    the workload's or the shape's. ScalesimError naming --gpu when it is missing or its memory
    bandwidth is not listed."""
    from scalesim.jsonio import parse_model
    from scalesim.presets import (
        device_memory_of,
        memory_bandwidth_of,
        peak_tflops_of,
        stated_memory_problem,
    )
    from scalesim.schemas import Workload

    shape, listed = model_shape(model, text)
    if gpu is None:
        raise ScalesimError("--workload needs --gpu NAME (e.g. 'H100 SXM', 'A100 80GB'): the layout "
                            "model needs the device's memory bandwidth and memory")
    shown = excerpt(gpu)  # a name of 50,000 characters is not echoed whole
    if why := name_problem(gpu):  # its name is printed in the diagnosis's notes
        raise ScalesimError(f"--gpu '{shown}': {why}")
    bandwidth = memory_bandwidth_of(gpu)
    if bandwidth is None:
        raise ScalesimError(f"--gpu '{shown}': no datasheet memory bandwidth listed for it; name the "
                            "GPU as the presets do (e.g. 'H100 SXM', 'H100 PCIe', 'A100 80GB', "
                            "'A100 40GB', 'V100', 'GB200')")
    count = params if params is not None else (listed or float(shape.param_count()))
    # the workload schema refuses a count more than 5 % from the shape's, naming both; the
    # inputs by their controls (the CLI's flags, the Diagnose page's labels), its words after
    given = knob_refusal(f"{KNOB.params} with {KNOB.workload} {as_literal(model)}")
    try:
        parse_model({"name": model, "params": count, "transformer": shape.model_dump()},
                    Workload, given)
    except ScalesimError as exc:
        raise ScalesimError(joined(": ", (given, str(exc).removeprefix(f"{given}: ")))) from None
    if problem := stated_memory_problem(gpu):  # "A100 4GB" would plan on 4 GiB devices
        raise ScalesimError(f"--gpu '{shown}' {problem}; fix the size or leave it out")
    peak = peak_tflops_of(gpu)
    memory = device_memory_of(gpu)
    return RunsModel(name=model, shape=shape, params=float(count), gpu=gpu,
                     peak_tflops=peak[0] if peak else None,
                     memory_bandwidth_GBps=bandwidth[0],
                     memory_bytes=memory[0] if memory else None)
