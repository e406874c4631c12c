"""Hypothesis strategies and the checking harness of the fuzz test (tests/test_fuzz.py).

Every command-line flag is taken from the real argument parser, so a new flag is fuzzed without
touching this file. Values mix what a user would type with what breaks programs: huge and
negative whole numbers, 2**63, NaN, Infinity, 1e400, empty and very long text, lists and ranges.
Files (profiles, hardware, workloads, scenarios, validation cases, runs CSV/JSON, Kineto traces,
plain or gzip) are published or built-in examples with a few random mutations: a value replaced
by an odd one, a key dropped or added, deep nesting, a cut-off end, a corrupt gzip stream.

``check_cli`` runs ``scalesim.cli.main.main`` in this process and returns the list of broken
promises (empty when the command behaved): exit code 0 or 2, no exception (a traceback in a real
run), exactly one stderr line with exit 2, no NaN/Infinity in JSON printed or written, and at most
``LIMIT_S`` seconds. ``check_link`` does the same for the app's share-link decoder.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import csv
import gzip
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

LIMIT_S = 20.0  # CPU seconds of one example (``time_limit``); typical examples take 1-50 ms
MAX_FLAGS = 6  # optional flags per generated command line
MAX_GRID_AXES = 3  # sweep: at most this many --*-values flags (keeps grids under ~10^4 rows)
MISSING_MODULE = "scalesim_fuzz_no_such_module:factory"  # calibrate stops at loading it

# ------------------------------------------------------------------------------ odd values

NUMBER_TEXTS = [
    "0", "1", "2", "3", "4", "8", "16", "32", "1024", "-1", "-0", "0.5", "1.5", "3.5", "25",
    "1e-9", "1e-308", "5e-324", "1e9", "1e30", "1e308", "1e400", "-1e308", "nan", "NaN", "-nan",
    "inf", "-inf", "Infinity", "9223372036854775807", "9223372036854775808",
    "99999999999999999999", "-9223372036854775809", "0x10", "1_000", " 4 ", "", " ", "abc",
    "é", "1,2", "1,2,4,8", "8,4", "1-8", "8-1", "1-1024", "0-4", "1-99999999999999999999",
    "4,,8", ",", "1.5,2", "1,nan", "inf,1", "2,1e400", "-", "--", "on,off", "ddp,zero3",
]
# Any text (a real argv cannot hold NUL), and line breaks, which an error message quoting the
# value must keep on its one line.
TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
            max_size=12),
    st.sampled_from(["a\nb", "x\r\ny", "\n", "dgx-a100\n", "a\x1cb\u2028c"]))
SCALAR = st.one_of(
    st.sampled_from(NUMBER_TEXTS),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    TEXT,
)
VALUE = st.one_of(SCALAR, st.lists(SCALAR, min_size=1, max_size=4).map(",".join))


class Raw(str):
    """JSON text put into a document as is (1e400, deep nesting), where json.dumps cannot."""


DEEP = "[" * 50_000 + "]" * 50_000
ODD_JSON = [
    None, True, False, 0, -1, 1, 0.0, -0.0, 2**63, -(2**63) - 1, 10**25, 10**400, 1e308, 1e-308,
    5e-324, math.inf, -math.inf, math.nan, "", "x", "nan", "Infinity", "1e400", "0", "x" * 150_000,
    [], {}, [1, 2], {"a": 1}, Raw("1e400"), Raw("-1e400"), Raw(DEEP),
]
ODD_CELLS = [
    "", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1", "0", "1e-320", "1e308",
    "9223372036854775808", "99999999999999999999", "x", "1;2;nan", ";;", "1;1e400", "0;0",
    "1" * 140_000, '"', "\x00", "é",
]


# ------------------------------------------------------------------------------ documents

def _paths(doc):
    """Every (container, key) in a JSON tree, depth first."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    for key, value in list(items):
        yield doc, key
        if isinstance(value, dict | list):
            yield from _paths(value)


def _dumps(doc) -> str:
    raws: list[str] = []

    def swap(value):
        if isinstance(value, Raw):
            raws.append(str(value))
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    text = json.dumps(swap(doc))
    for i, raw in enumerate(raws):
        text = text.replace(f'"@@raw{i}@@"', raw)
    return text


@st.composite
def mutated_json(draw, seed, max_changes: int = 3) -> str:
    """``seed`` (a JSON-able tree) with 0..max_changes odd changes, as JSON text."""
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(0, max_changes))):
        spots = list(_paths(doc))
        if not spots:
            break
        leaves = [(c, k) for c, k in spots if not isinstance(c[k], dict | list)]
        if leaves and draw(st.integers(0, 4)):  # four in five: a number or a text, not a branch
            spots = leaves
        container, key = spots[draw(st.integers(0, len(spots) - 1))]
        op = draw(st.sampled_from(["replace", "replace", "replace", "drop", "add"]))
        if op == "replace":
            container[key] = copy.deepcopy(draw(st.sampled_from(ODD_JSON)))
        elif op == "drop":
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.sampled_from(["extra", "x" * 300, ""]))] = 1
        else:
            container.append(copy.deepcopy(draw(st.sampled_from(ODD_JSON))))
    text = _dumps(doc)
    ending = draw(st.sampled_from(["whole"] * 8 + ["cut", "bom", "junk", "list"]))
    if ending == "cut":
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    elif ending == "bom":
        text = "\ufeff" + text
    elif ending == "junk":
        text += "}{"
    elif ending == "list":
        text = f"[{text}]"
    return text


@dataclass(frozen=True)
class FileSpec:
    """A file to write into the example's folder; ``suffix`` decides the reader."""

    suffix: str
    data: bytes
    kind: str

    def __repr__(self) -> str:  # short, for hypothesis' falsifying example
        head = self.data[:200]
        return f"FileSpec({self.suffix!r}, {len(self.data)} bytes, {head!r}...)"

    def _repr_pretty_(self, printer, cycle) -> None:  # hypothesis' printer: the same short form
        printer.text(repr(self))


@dataclass(frozen=True)
class PathSpec:
    """A path with a property: new, an existing folder, a missing parent, a too-long name..."""

    kind: str
    suffix: str = ""


def _seeds() -> dict:
    from diagnose_cases import inter_server, stragglers
    from test_traces import gpu_trace

    from scalesim import presets
    from scalesim.profiles import default_profile
    from scalesim.schemas import Scenario
    from scalesim.shipped import validation_path

    cases = json.loads(validation_path("cases.json").read_text())
    ps = next(c for c in cases["cases"] if c["comm"] == "parameter-server")
    parallel = json.loads(validation_path("parallel_cases.json").read_text())
    parallel = {**parallel, "cases": parallel["cases"][:2]}
    return {
        "parallel_cases": parallel,
        "transformer": presets.transformer_workload("llama3-8b").model_dump(mode="json"),
        "profile": default_profile().model_dump(mode="json"),
        "hardware": presets.get_hardware(presets.DEFAULT_HARDWARE).model_dump(mode="json"),
        "workload": presets.get_workload(presets.DEFAULT_WORKLOAD).model_dump(mode="json"),
        "scenario": Scenario(devices=[1, 2, 4, 8], micro_batch=32).model_dump(mode="json"),
        "cases": {"format": cases["format"], "cases": [cases["cases"][0], ps]},
        "runs": inter_server()[:4] + stragglers()[:2],
        "traces": [gpu_trace(0), gpu_trace(1, slow_us=50.0)],
    }


SEEDS = _seeds()
FIXTURES = Path(__file__).parent / "fixtures"


def _smi_seed() -> bytes:
    from test_sources_nvidia_smi import smi_csv

    with tempfile.TemporaryDirectory() as tmp:
        return smi_csv(Path(tmp) / "smi.csv", devices=4, seconds=6, slow=2).read_bytes()


# Text files of the readers of nvidia-smi and nccl-tests output: the published excerpts of
# tests/fixtures (their README names the sources) and a generated --query-gpu CSV.
TEXT_SEEDS = {
    "nccl": tuple(p.read_bytes() for p in sorted((FIXTURES / "nccl_tests").glob("*.txt"))),
    "topo": tuple(p.read_bytes() for p in sorted((FIXTURES / "nvidia_smi").glob("*.txt"))),
    "smi": (_smi_seed(),),
}
STDIN_TEXT = TEXT_SEEDS["topo"][0].decode()  # what `scalesim topo -` reads


def json_file(kind: str) -> st.SearchStrategy[FileSpec]:
    return mutated_json(SEEDS[kind]).map(lambda t: FileSpec(".json", t.encode(), kind))


@st.composite
def runs_csv(draw) -> FileSpec:
    table = _runs_table()
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["cell", "cell", "cell", "drop-col", "rename", "extra-cell",
                                   "no-rows", "many-rows"]))
        if op == "cell":
            i = draw(st.integers(0, len(table) - 1))
            if table[i]:
                table[i][draw(st.integers(0, len(table[i]) - 1))] = draw(st.sampled_from(ODD_CELLS))
        elif op == "drop-col" and table[0]:
            j = draw(st.integers(0, len(table[0]) - 1))
            table = [row[:j] + row[j + 1:] for row in table]
        elif op == "rename" and table[0]:
            table[0][draw(st.integers(0, len(table[0]) - 1))] = draw(st.sampled_from(["", "x",
                                                                                       "devices"]))
        elif op == "extra-cell":
            table[draw(st.integers(0, len(table) - 1))].append("1")
        elif op == "no-rows":
            table = table[:1]
        elif op == "many-rows":
            table = table + table[1:] * 50
    return FileSpec(".csv", _csv_bytes(table), "runs")


def _cell_text(value) -> str:
    return ";".join(f"{x:.6g}" for x in value) if isinstance(value, list) else str(value)


def _runs_table() -> list[list[str]]:
    """The seed runs as a header and rows of cells (a fresh copy each call)."""
    rows = SEEDS["runs"]
    header = list(dict.fromkeys(k for r in rows for k in r))
    return [header] + [[_cell_text(r.get(k, "")) for k in header] for r in rows]


def _csv_bytes(table: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(table)
    return out.getvalue().encode()


@st.composite
def trace_file(draw) -> FileSpec:
    text = draw(mutated_json(SEEDS["traces"][draw(st.integers(0, 1))], max_changes=4))
    wrap = draw(st.sampled_from(["plain", "plain", "gz", "gz-cut", "gz-garbage"]))
    data = text.encode()
    if wrap == "plain":
        return FileSpec(".json", data, "trace")
    packed = gzip.compress(data)
    if wrap == "gz-cut":
        packed = packed[: len(packed) // 2]
    elif wrap == "gz-garbage":
        packed = packed[:10] + bytes(range(256)) * 4
    return FileSpec(".json.gz", packed, "trace")


# Replacements for one number or word of a text file, and junk to insert into one.
ODD_TOKENS = [b"nan", b"inf", b"-inf", b"1e400", b"-1", b"0", b"9" * 30, b"9223372036854775808",
              b"N/A", b"", b"x", b"1e308", b"5e-324", b"0x10", b"[N/A]", b"NV99999", b"GPU-1",
              b"1" * 5000, "é".encode()]
JUNK = [bytes(range(256)), b"\xff\xfe\x00", b"\x00" * 10, b"\r\n\r\n", b"\t\t\t", b"#", b",,,,",
        b"\n" + b"9" * 200_000 + b"\n", b"\n" + b"x" * 200_000]
TOKEN = re.compile(rb"[0-9A-Za-z.+-]+")


@st.composite
def mutated_text(draw, kind: str, max_changes: int = 3) -> bytes:
    """A seed text file of ``kind`` (TEXT_SEEDS) with 0..max_changes odd changes: a number or
    word replaced, junk or a 200 KB line inserted, a line dropped or repeated thousands of times
    (a huge file), a cut-off end, or nothing at all."""
    seeds = TEXT_SEEDS[kind]
    data = seeds[draw(st.integers(0, len(seeds) - 1))]
    for _ in range(draw(st.integers(0, max_changes))):
        op = draw(st.sampled_from(["token", "token", "token", "junk", "drop", "repeat", "cut",
                                   "empty"]))
        lines = data.split(b"\n")
        if op == "token":
            spots = [m.span() for m in TOKEN.finditer(data)]
            if spots:
                a, b = spots[draw(st.integers(0, len(spots) - 1))]
                data = data[:a] + draw(st.sampled_from(ODD_TOKENS)) + data[b:]
        elif op == "junk":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from(JUNK)) + data[at:]
        elif op == "drop" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            data = b"\n".join(lines)
        elif op == "repeat" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            data = b"\n".join(lines[:i] + [lines[i]] * draw(st.sampled_from([2, 500, 5000]))
                              + lines[i + 1:])
        elif op == "cut":
            data = data[: draw(st.integers(0, len(data)))]
        elif op == "empty":
            data = b""
    return data


def text_file(kind: str, suffix: str = ".txt") -> st.SearchStrategy[FileSpec]:
    return mutated_text(kind).map(lambda d: FileSpec(suffix, d, kind))


@dataclass(frozen=True)
class Prefixed:
    """An argument ``PREFIX + path of a file``: ``calibrate --from-trace 32=rank0.json``."""

    prefix: str
    spec: FileSpec


RUNS_FILE = st.one_of(runs_csv(), json_file("runs"))
OUT_PATH = st.builds(PathSpec, st.sampled_from(["new", "new", "folder", "missing-parent",
                                               "too-long", "existing", "symlink"]),
                     st.sampled_from(["", ".json", ".csv", ".txt"]))
DIR_PATH = st.builds(PathSpec, st.sampled_from(["folder", "missing", "a-file", "profiles"]))


def materialize(argv: list, folder: Path) -> list[str]:
    """Write each FileSpec / PathSpec of ``argv`` into ``folder``; the command line as text."""
    out = []
    for i, item in enumerate(argv):
        if isinstance(item, Prefixed):
            path = folder / f"in{i}{item.spec.suffix}"
            path.write_bytes(item.spec.data)
            out.append(f"{item.prefix}{path}")
        elif isinstance(item, FileSpec):
            path = folder / f"in{i}{item.suffix}"
            path.write_bytes(item.data)
            out.append(str(path))
        elif isinstance(item, PathSpec):
            out.append(str(_make_path(item, folder / f"p{i}")))
        else:
            out.append(item)
    return out


def _make_path(spec: PathSpec, base: Path) -> Path:
    if spec.kind in ("folder", "profiles"):
        base.mkdir()
        if spec.kind == "profiles":
            (base / "a.json").write_text(_dumps(SEEDS["profile"]))
            (base / "b.json").write_text("{not json")
        return base
    if spec.kind == "missing":
        return base / "nothing-here"
    if spec.kind == "a-file":
        base.write_text("x")
        return base
    if spec.kind == "missing-parent":
        return base / "no-such-folder" / f"out{spec.suffix}"
    if spec.kind == "too-long":
        return base.with_name("x" * 300 + spec.suffix)
    path = base.with_suffix(spec.suffix) if spec.suffix else base
    if spec.kind == "existing":
        path.write_text("old\n")
    elif spec.kind == "symlink":
        target = base.with_name(base.name + "-target" + spec.suffix)
        target.write_text("old\n")
        path.symlink_to(target)
    return path


# ------------------------------------------------------------------------------ command lines

def _parser_actions() -> dict[str, list]:
    from scalesim.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # argparse's subparsers action
    return {name: [a for a in p._actions if a.dest != "help"] for name, p in sub.choices.items()}


ACTIONS = _parser_actions()
COMMANDS = tuple(ACTIONS)


def _value_strategy(command: str, action) -> st.SearchStrategy:
    """What to give one flag or positional of ``command``."""
    from scalesim import presets

    dest = action.dest
    if dest in ("profile", "scenario", "base"):
        kind = "profile" if dest == "base" else dest
        return st.one_of(json_file(kind), st.builds(PathSpec, st.just("missing")))
    if command == "plan" and dest == "workload":  # plan needs a transformer shape
        return st.one_of(st.sampled_from(list(presets.TRANSFORMERS)), json_file("transformer"),
                         json_file("workload"), TEXT)
    if dest in ("hardware", "workload"):
        names = list(presets.HARDWARE) if dest == "hardware" else [
            *presets.WORKLOADS, *presets.TRANSFORMERS]  # data parallel, and split by --tp --pp
        files = json_file(dest) if dest == "hardware" else st.one_of(
            json_file("workload"), json_file("transformer"))
        return st.one_of(st.sampled_from(names), st.sampled_from(names), files, TEXT)
    if dest == "runs":
        return RUNS_FILE
    if dest == "trace":
        return st.lists(trace_file(), min_size=1, max_size=3)
    if command == "topo" and dest == "file":
        return st.one_of(text_file("topo"), text_file("topo"), st.just("-"),
                         st.builds(PathSpec, st.just("missing")))
    if dest == "file":  # validate
        return st.one_of(json_file("cases"), json_file("parallel_cases"),
                         st.builds(PathSpec, st.just("missing")))
    if dest == "from_nccl_tests":
        return st.lists(st.builds(Prefixed, st.sampled_from(["", "", "intra=", "inter=", "x="]),
                                  text_file("nccl")), min_size=1, max_size=3)
    if dest == "from_trace":
        batch = _mix(st.sampled_from(["8=", "32=", "32="]),
                     st.sampled_from(["", *(f"{v}=" for v in [*ODD_INTS, "1" * 5000, "x"])]))
        return st.lists(st.builds(Prefixed, batch, trace_file()), min_size=1, max_size=3)
    if dest == "from_topo":
        return st.one_of(text_file("topo"), st.builds(PathSpec, st.just("missing")))
    if dest == "smi":
        return st.one_of(text_file("smi", ".csv"), st.builds(PathSpec, st.just("missing")))
    if dest in ("out",):
        return OUT_PATH
    if dest in ("profiles", "state_dir"):
        return DIR_PATH
    if dest in ("model", "dataset", "block_model"):
        return st.just(MISSING_MODULE)
    if dest == "address":  # no host names: resolving them would query DNS servers
        return st.sampled_from(["localhost", "127.0.0.1", "0.0.0.0", "::1", "",
                                "é", "1.2.3"])
    if dest == "nproc_per_node":  # 2 or more would start torchrun
        return st.sampled_from(NPROC_VALUES)
    if action.choices:
        return _mix(st.sampled_from(list(action.choices)), VALUE)
    return _mix(_plausible(action), _odd(action))


NPROC_VALUES = ["0", "-1", "1", "x", "nan", "1.5", "", "1025", "9223372036854775808"]


def _mix(plausible, odd) -> st.SearchStrategy[str]:
    """70% what a user would type, 20% the odd values of the flag's type, 10% anything."""
    return st.integers(0, 9).flatmap(lambda i: plausible if i < 7 else odd if i < 9 else VALUE)


# ------------------------------------------------------------------- numeric flags, by their type

# argparse types that are not made by scalesim.bounds.flag_type / flag_list_type: (kind, quantity
# of the bounds table or None). A flag of a type in neither table fails test_every_flag_is_known.
OTHER_NUMERIC_TYPES = {
    "int": ("int", None), "float": ("float", None), "positive_int": ("int", "count"),
    "parse_int_list": ("int list", "devices"), "_efficiency": ("float", "fraction"),
    "duration_s": ("float", None),
}
# Types of word flags (lists of names), with what a user would type.
WORD_TYPES = {
    "_on_off": ["on", "off", "on,off"],
    "_phase_list": ["compute", "compute,loader", "compute,jitter,noise"],
    "_op_list": ["all_reduce", "all_reduce,all_gather"],
    "_name": ["my-node", "lab 1", "GPU 名前"],  # calibrate --name (one line of text)
    "_intra_link": ["pcie4", "nvswitch-a100", "nvlink2"],  # calibrate's link presets
    "_inter_link": ["ethernet:1x100", "infiniband:8x200", "roce:2x200"],
}
WORD_AXES = {"strategy_values": "ddp,zero1,zero2,zero3", "algorithm_values": "auto,ring,tree",
             "zero_framework_values": "fsdp,deepspeed"}
# What a user would type for the numeric types without a quantity.
PLAUSIBLE_TEXT = {
    "duration_s": ["3d", "72h", "90m", "3600", "0.5d", "1e5"],
    # amounts of US dollars (scalesim.money.usd_type), as pasted from a price page
    "usd": ["50000", "$2,000", "1e6", "12.5", "$4.10", "USD 40", "40 USD"],
    "int": ["0", "1", "2", "3", "8", "8600"],
    "float": ["0", "0.01", "0.5", "1.3", "25", "100", "1e-6"],
}
TYPICAL_NUMBERS = (1, 2, 4, 8, 16, 32, 1024, 0.01, 0.05, 0.5, 1.3, 25, 100, 1e-6, 2e9)


def flag_kind(action) -> tuple[str, str | None] | None:
    """('int' | 'float' | 'int list' | 'float list', quantity or None) of a numeric flag, from
    its argparse type (whichever helper made it); None for a flag that takes no number."""
    from scalesim.bounds import bound

    kind = action.type
    qualname, name = getattr(kind, "__qualname__", ""), getattr(kind, "__name__", "")
    if qualname.startswith("flag_type."):
        return ("int" if bound(name).integer else "float"), name
    if qualname.startswith("usd_type."):  # money: '$50,000' read too (plausible: "usd")
        return "float", name
    if qualname.startswith("flag_list_type."):
        quantity = name.removesuffix(" list")
        return ("int list" if bound(quantity).integer else "float list"), quantity
    return OTHER_NUMERIC_TYPES.get(name)


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def plausible_numbers(kind: str, quantity: str | None, type_name: str = "") -> list[str]:
    """Values of a numeric flag a user would type: typical numbers within its bounds."""
    from scalesim.bounds import bound

    if quantity is None:
        return PLAUSIBLE_TEXT[type_name]
    b = bound(quantity)
    values = [b.low, *TYPICAL_NUMBERS]
    ok = [v for v in values if (not b.integer or float(v).is_integer())
          and b.problem(int(v) if b.integer else float(v)) is None]
    texts = list(dict.fromkeys(_number_text(v) for v in ok)) or [_number_text(b.high)]
    if "list" not in kind:
        return texts
    lists = texts + [",".join(texts[i:i + 3]) for i in range(len(texts) - 1)]
    if b.integer and b.problem(1) is None:
        lists += ["1-16", "2-64"]
    return lists


def edge_numbers(kind: str, quantity: str | None) -> list[str]:
    """The odd values of a numeric flag: the edges of its type and of its bounds."""
    from scalesim.bounds import bound

    b = bound(quantity) if quantity else None
    if kind == "float list":
        good = plausible_numbers("float", quantity)[0]
        return [f"{good},{x}" for x in EDGE_FLOATS] + [f"{good},,{good}", ","]
    if kind == "int list":
        return EDGE_LISTS + ([f"1,{_number_text(b.high + 1)}"] if b else [])
    edges = EDGE_FLOATS if kind == "float" else EDGE_INTS
    if b is not None:
        step = 1 if b.integer else b.high * 1e-9
        edges = edges + [_number_text(b.high), _number_text(b.high + step)]
    return edges


def _odd(action) -> st.SearchStrategy[str]:
    found = flag_kind(action)
    if found is None:
        return VALUE
    kind, _ = found
    values = {"float": ODD_FLOATS, "int": ODD_INTS}.get(kind, ODD_LISTS)
    if kind == "float list":
        values = [f"1,{x}" for x in ODD_FLOATS]
    return st.sampled_from(values + edge_numbers(*found))


def _plausible(action) -> st.SearchStrategy[str]:
    if action.dest in WORD_AXES:
        words = WORD_AXES[action.dest].split(",")
        return st.lists(st.sampled_from(words), min_size=1, max_size=3).map(",".join)
    name = getattr(action.type, "__name__", "")
    if name in WORD_TYPES:
        return st.sampled_from(WORD_TYPES[name])
    found = flag_kind(action)
    if found is not None:
        money = PLAUSIBLE_TEXT["usd"] if action.type.__qualname__.startswith("usd_type.") else []
        return st.sampled_from(plausible_numbers(*found, name) + money)
    return TEXT


ODD_FLOATS = ["nan", "inf", "-inf", "1e308", "1e400", "-1e308", "-1", "0", "-0", "1e-308",
              "5e-324", "1e30"]
ODD_INTS = ["0", "-1", "2147483648", "9223372036854775807", "9223372036854775808",
            "99999999999999999999", "10" + "0" * 40]
ODD_LISTS = ["1,9223372036854775808", "1-99999999999999999999", "0,1", "1,1,1", "64-1",
             "1," + "9" * 30]

# A target is a command, or a command with flags every line of it has (the file readers behind
# them would be drawn too rarely otherwise): "calibrate --from-topo" always reads a topology.
def target_command(target: str) -> tuple[str, tuple[str, ...]]:
    command, *flags = target.split()
    return command, tuple(flags)


@st.composite
def command_line(draw, target: str) -> list:
    """``[command, --flag, value, ...]`` with FileSpec/PathSpec items for files."""
    command, forced_flags = target_command(target)
    actions = ACTIONS[command]
    positionals = [a for a in actions if not a.option_strings]
    optionals = [a for a in actions if a.option_strings]
    forced = [a for a in optionals if a.required or set(a.option_strings) & set(forced_flags)]
    others = [a for a in optionals if a not in forced]
    most = MAX_FLAGS if not forced_flags else 2  # few others: most lines reach the reader
    chosen = forced + draw(st.lists(st.sampled_from(others), max_size=most, unique_by=id)
                           if others else st.just([]))
    if command == "sweep":
        axes = [a for a in chosen if a.dest.endswith("_values")]
        chosen = [a for a in chosen if a not in axes[MAX_GRID_AXES:]]
    argv: list = [command]
    if command == "calibrate":  # never a real calibration: compute (first) stops at the model
        argv += ["--model", MISSING_MODULE, "--no-progress"]
        chosen = [a for a in chosen if a.dest not in ("model", "no_progress")]
    for action in positionals:
        if action.nargs == "?" and not draw(st.booleans()):
            continue
        argv.append(draw(_value_strategy(command, action)))
    for action in chosen:
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
            continue
        value = draw(_value_strategy(command, action))
        if isinstance(value, list):
            argv += [flag, *value]
        elif isinstance(value, str) and value.startswith("-") and flag.startswith("--"):
            argv.append(f"{flag}={value}")  # '-1e308' after a flag would read as a flag
        else:
            argv += [flag, value]
    if command == "calibrate" and "--out" not in argv:  # never the default, in the repository
        argv += ["--out", PathSpec("new", ".json")]
    return argv


# ------------------------------------------------------------------------------ the harness

class TookTooLong(BaseException):
    """Raised by SIGPROF; a BaseException so that no ``except Exception`` swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Stop a line that spends more than ``seconds`` of this process's CPU time (user + system,
    ``ITIMER_PROF``): a runaway loop is caught on any machine, while a line that only waits for
    the 2 shared cores is not (session 43: goal at --max-devices 2**20 takes 3.9 s of CPU time
    and broke a 20 s wall-clock limit in a suite run at load 12)."""
    def on_alarm(signum, frame):
        raise TookTooLong(f"took longer than {seconds:g} s of CPU time")

    old = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


class _FakeStreamlit:
    """Stands in for the Streamlit child of ``scalesim app``: exits at once."""

    def __init__(self, *args, **kwargs):
        self.args = args

    def wait(self, timeout=None):
        return 0

    def send_signal(self, signum):
        return None


def _where(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {str(exc)[:200]} at {Path(frame.filename).name}:{frame.lineno}"


def reject_constant(token: str):
    raise ValueError(f"{token} in JSON output")


def _json_problem(text: str, what: str) -> str | None:
    try:
        json.loads(text, parse_constant=reject_constant)
    except ValueError as exc:
        return f"{what} is not strict JSON: {str(exc)[:120]}"
    return None


def _wants_json(argv: list[str]) -> bool:
    if argv[0] == "schema" or "--json" in argv:
        return True
    return argv[0] == "sweep" and "json" in argv and "--format" in argv and "--out" not in argv


def check_cli(argv: list[str]) -> list[str]:
    """Run ``scalesim ARGV`` in this process; the broken promises, or an empty list."""
    from scalesim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    # argparse asks the terminal its size for every parser it builds (28 per main()): a fixed
    # size makes an example about twice as fast.
    sizes = {k: os.environ.get(k) for k in ("COLUMNS", "LINES")}
    os.environ.update(COLUMNS="100", LINES="40")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    popen, stdin, cwd = subprocess.Popen, sys.stdin, os.getcwd()
    sys.stdin = io.StringIO(STDIN_TEXT)  # `scalesim topo -`
    workdir = tempfile.TemporaryDirectory(prefix="scalesim-fuzz-cwd-")
    os.chdir(workdir.name)  # a default output (calibrate's scalesim-profile.json) lands there
    problems: list[str] = []
    code = None
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                    time_limit(LIMIT_S):
                if argv[0] == "app":
                    subprocess.Popen = _FakeStreamlit
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = 0 if exc.code is None else exc.code
    except TookTooLong as exc:
        problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer looks for
        problems.append(f"raised {_where(exc)}")
    finally:
        subprocess.Popen, sys.stdin = popen, stdin
        os.chdir(cwd)
        workdir.cleanup()
        for k, v in sizes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for s, handler in handlers.items():
            signal.signal(s, handler)
    seconds = time.perf_counter() - started
    stderr = err.getvalue() + "".join(
        f"{Path(w.filename).name}:{w.lineno}: {w.category.__name__}: {w.message}\n"
        for w in caught)
    if problems:
        return problems
    if code not in (0, 2):
        problems.append(f"exit code {code!r}")
    if "Traceback" in stderr:
        problems.append("a traceback on stderr")
    lines = [line for line in stderr.splitlines() if line.strip()]
    if code == 2 and len(lines) != 1:
        problems.append(f"exit 2 with {len(lines)} stderr lines: {lines[:3]}")
    if code == 0 and _wants_json(argv):
        problems.append(_json_problem(out.getvalue(), "stdout"))
    if code == 0 and "--out" in argv:
        path = Path(argv[argv.index("--out") + 1])
        chosen = argv[argv.index("--format") + 1] if "--format" in argv[:-1] else "json"
        if path.suffix == ".json" and chosen == "json" and path.is_file():  # not --format csv
            problems.append(_json_problem(path.read_text(), f"--out {path.name}"))
    if seconds > LIMIT_S:
        problems.append(f"took {seconds:.1f} s")
    return [p for p in problems if p]


# ------------------------------------------------------------------------------ share links

def _base_links() -> list[dict[str, str]]:
    """Real share links of each version the decoder reads: v2 (the default what-if, and an
    uploaded profile with its blob), v3 (a split transformer on the Layouts tab), v4 (the same
    with full recompute in the early-stop style), v5 (ZeRO-2 reducing once per step under
    accumulation), v6 (the split with the flash2 attention kernel), v7 (the split with the
    tensor-parallel overlap; its scenarios B 'overlap tensor-parallel communication' and 'use a
    Hopper attention kernel'), v8 (selective recompute in the op-sac style), v9 (the split under
    ZeRO-1 with a hybrid sharding shard group), v10 (ZeRO-2 under DeepSpeed, accumulating), v11
    (the split in fp8), v12 (its scenario B 'run the weight matmuls in fp8'), v13 (the split
    asking the fused vendor attention kernel), v14 (the interleaved split with its pipeline
    sends blocking), v15 (the split with context parallelism), v16 (the split at 16,384 tokens), v17
    (the split with a 5 % memory margin, goal searching to 4,096), v18 (the split with goal's
    layouts given, on the Goal tab), v1 (a v2 link
    labelled v1, with model-split fields a v1 link cannot have)."""
    from scalesim.app.state import AppState, default_state, encode_query, preset_profile

    base = default_state()
    split = AppState.model_validate({**base.model_dump(), "wl": "llama3-8b", "hw": "dgx-h100",
                                     "tp": 2, "pp": 2, "sched": "interleaved", "vs": 2,
                                     "rec": "selective", "sp": True, "tab": "layouts",
                                     "acc": 4})  # interleaved: micro-batches a multiple of pp
    custom = base.model_copy(update={"src": "custom"})
    stop = split.model_copy(update={"rec": "full", "rs": "early-stop"})
    overlap = split.model_copy(update={"tpo": True})
    grad = base.model_copy(update={"strat": "zero2", "acc": 4, "gs": "once-per-step"})
    kernel = split.model_copy(update={"ak": "flash2", "tab": "ab"})
    b_overlap = split.model_copy(update={"b": "tp_overlap", "tab": "ab"})
    b_kernel = split.model_copy(update={"b": "attention_kernel", "tab": "remedies"})
    op_sac = split.model_copy(update={"rs": "op-sac", "tpo": True, "ak": "flash2"})
    hybrid = split.model_copy(update={"strat": "zero1", "sg": 2, "dmax": 32})
    deepspeed = base.model_copy(update={"strat": "zero2", "acc": 4, "zfw": "deepspeed"})
    fp8 = split.model_copy(update={"pr": "fp8"})
    b_fp8 = split.model_copy(update={"b": "fp8", "tab": "ab"})
    vendor = split.model_copy(update={"ak": "fused-vendor"})
    blocking = split.model_copy(update={"p2p": False})
    ring = split.model_copy(update={"cp": 2})
    longer = split.model_copy(update={"seq": 16384})
    margin = split.model_copy(update={"mm": 0.05, "gmax": 4096})
    goal_given = split.model_copy(update={"glay": "given", "tab": "goal"})
    links = [dict(encode_query(s, preset_profile(s)))
             for s in (base, split, custom, stop, overlap, grad, kernel, b_overlap, b_kernel,
                       op_sac, hybrid, deepspeed, fp8, b_fp8, vendor, blocking, ring, longer,
                       margin, goal_given)]
    assert [link["v"] for link in links] == ["2", "3", "2", "4", "7", "5", "6", "7", "7", "8",
                                             "9", "10", "11", "12", "13", "14", "15",
                                             "16", "17", "18"]
    links.append({**links[0], "v": "1", "tp": "4", "sp": "true"})
    return links


BASE_LINKS = _base_links()


@st.composite
def link_params(draw) -> dict[str, str]:
    """A share link's query parameters: a real link with odd values, keys and profile blobs."""
    params = dict(draw(st.sampled_from(BASE_LINKS)))
    keys = sorted(params)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["value", "value", "drop", "unknown", "blob", "blob"]))
        if op == "value":
            params[draw(st.sampled_from(keys))] = draw(st.one_of(VALUE, st.just("9" * 401)))
        elif op == "drop":
            params.pop(draw(st.sampled_from(keys)), None)
        elif op == "unknown":
            params[draw(TEXT)] = draw(VALUE)
        else:
            params["prof"] = draw(profile_blob())
    return params


@st.composite
def profile_blob(draw) -> str:
    kind = draw(st.sampled_from(["mutated", "mutated", "mutated", "text", "cut", "bomb"]))
    if kind == "text":
        return draw(st.one_of(TEXT, st.sampled_from(["", "====", "eJw", "x" * 13_000])))
    if kind == "bomb":
        raw = b"[" + b"0," * 150_000 + b"0]"
    else:
        raw = draw(mutated_json(SEEDS["profile"], max_changes=2)).encode()
    blob = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    return blob[: len(blob) // 2] if kind == "cut" else blob


def check_link(params: dict[str, str], planned: set[tuple[str, str]] | None = None) -> list[str]:
    """Decode a share link as the planner page does, then plan it after the page's cache round
    trip (``planner_page._cached_plan`` gets the profile and state as JSON text). Only a
    ScalesimError may come out of planning (the page shows it); decoding never raises.
    ``planned``: the (profile, state) JSON texts already planned without a broken promise by the
    caller; such a link is decoded and encoded but not planned again (the page plans the same
    input; most edge-value blobs are refused and leave the same preset), and a new one is added."""
    from scalesim.app.plan import make_plan
    from scalesim.app.state import AppState, decode_query, encode_query

    from scalesim.errors import ScalesimError
    from scalesim.schemas import Profile

    try:
        with warnings.catch_warnings(), time_limit(LIMIT_S):
            warnings.simplefilter("ignore")
            state, profile, messages = decode_query(params)
            problems = [f"message of several lines: {m[:80]!r}" for m in messages if "\n" in m]
            encode_query(state, profile)
            texts = (profile.model_dump_json(), state.model_dump_json())
            if planned is None or texts not in planned:
                with contextlib.suppress(ScalesimError):
                    make_plan(Profile.model_validate_json(texts[0]),
                              AppState.model_validate_json(texts[1]))
                if planned is not None and not problems:
                    planned.add(texts)
    except TookTooLong as exc:
        return [str(exc)]
    except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer looks for
        return [f"raised {_where(exc)}"]
    return problems


def describe(argv: list[str]) -> str:
    """The command line as one would type it (for reports)."""
    return "scalesim " + " ".join(_quote(a) for a in argv)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg if len(arg) < 120 else arg[:60] + "..." + arg[-20:])



# ------------------------------------------------------------------------------ every flag, odd

def _base_line(command: str) -> list:
    """A command line that succeeds, to which one odd flag is added (JSON out where possible)."""
    return {
        "predict": ["predict", "--json"],
        "sweep": ["sweep", "--format", "json", "--devices", "1,8,16"],
        "plan": ["plan", "--global-batch", "512", "--devices", "8,16", "--json"],
        "decide": ["decide", "--json"],
        "goal": ["goal", "--deadline", "3d", "--budget", "50000", "--train-samples", "2e9",
                 "--json"],
        "diagnose": ["diagnose", FileSpec(".csv", _csv_bytes(_runs_table()), "runs"), "--json"],
        "calibrate": ["calibrate", "--model", MISSING_MODULE, "--no-progress", "--out",
                      PathSpec("new", ".json")],
    }.get(command, [command])


def numeric_flags(command: str) -> list:
    """The actions of ``command``'s numeric flags (never --nproc-per-node: 2 or more starts
    torchrun; its random values stay below that)."""
    return [a for a in ACTIONS[command] if a.option_strings and flag_kind(a) is not None
            and a.dest != "nproc_per_node"]


def odd_value_lines(command: str) -> list[list]:
    """One command line per (numeric flag, edge value of its type and bounds)."""
    lines = []
    for action in numeric_flags(command):
        flag = action.option_strings[-1]
        for value in edge_numbers(*flag_kind(action)):
            lines.append([*_base_line(command), f"{flag}={value}"])
    return lines


EDGE_FLOATS = ["nan", "inf", "-inf", "1e308", "1e400", "-1", "0", "5e-324"]
EDGE_INTS = ["0", "-1", "2147483648", "9223372036854775808", "99999999999999999999"]
EDGE_LISTS = ["1,9223372036854775808", "1-99999999999999999999", "0,1"]


def odd_profile_links() -> list[tuple[str, dict[str, str]]]:
    """(what changed, share link) whose profile blob has one number set to an edge value, for
    every number of the blob (an uploaded profile: ``src=custom``)."""
    from scalesim.app.state import compact_profile, default_state, encode_query, preset_profile

    state = default_state().model_copy(update={"src": "custom"})
    profile = preset_profile(state)
    params = dict(encode_query(state, profile))
    doc = json.loads(compact_profile(profile).model_dump_json())
    links = []
    count = sum(1 for c, k in _paths(doc) if _is_number(c[k]))
    for i in range(count):
        for value in (math.inf, math.nan, -1, 0, 10**25, Raw("1e400")):
            changed = copy.deepcopy(doc)
            container, key = [(c, k) for c, k in _paths(changed) if _is_number(c[k])][i]
            container[key] = value
            raw = _dumps(changed).encode()
            label = f"{key}={value if not isinstance(value, int) else f'{value:.3g}'}"
            links.append((label, {**params, "prof": base64.urlsafe_b64encode(
                zlib.compress(raw, 9)).decode().rstrip("=")}))
    return links


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ------------------------------------------------------------------------------ every file, odd

PATH_KINDS = ("new", "folder", "missing-parent", "too-long", "existing", "symlink")


def edge_file_lines() -> list[tuple[str, list]]:
    """(what is odd, command line): each kind of output path, each odd cell in each runs column,
    and each known way a trace can be broken: every reader and writer at its edges."""
    lines: list[tuple[str, list]] = []
    for kind in PATH_KINDS:
        for suffix in (".json", ".csv"):
            lines.append((f"sweep --out {kind}{suffix}",
                          ["sweep", "--devices", "1,8", "--out", PathSpec(kind, suffix)]))
        lines.append((f"calibrate --out {kind}",
                      [*_base_line("calibrate")[:-1], PathSpec(kind, ".json")]))
    for kind in ("folder", "missing", "a-file"):
        lines.append((f"calibrate --state-dir {kind}",
                      [*_base_line("calibrate"), "--state-dir", PathSpec(kind)]))
        lines.append((f"app --profiles {kind}", ["app", "--profiles", PathSpec(kind)]))
    header = _runs_table()[0]
    for column in header:
        for cell in ODD_CELLS:
            table = _runs_table()
            table[2][header.index(column)] = cell
            lines.append((f"runs.csv {column}={cell[:12]!r}",
                           ["diagnose", FileSpec(".csv", _csv_bytes(table), "runs")]))
    lines += [(f"trace {label}", ["diagnose", "--trace", *spec])
              for label, spec in _edge_traces()]
    for label, kind, spec in _edge_texts():
        argv = {"nccl": [*_base_line("calibrate"), "--from-nccl-tests", spec],
                "topo": ["topo", spec, "--json"],
                "smi": ["diagnose", "--smi", spec, "--json"]}[kind]
        lines.append((f"{kind} {label}", argv))
    return lines


def _edge_texts() -> list[tuple[str, str, FileSpec]]:
    """(what is odd, kind, file): every seed text file (nccl-tests logs, topo -m matrices, an
    nvidia-smi CSV) empty, cut in half, after binary junk, with its last line 5000 times, with a
    line of 200,000 digits, and with every number in it NaN."""
    out = []
    for kind, seeds in TEXT_SEEDS.items():
        suffix = ".csv" if kind == "smi" else ".txt"
        for n, data in enumerate(seeds):
            lines = data.rstrip(b"\n").split(b"\n")
            for label, changed in (
                    ("empty", b""), ("cut in half", data[: len(data) // 2]),
                    ("after binary junk", bytes(range(256)) + data),
                    ("last line 5000 times", b"\n".join(lines + lines[-1:] * 5000)),
                    ("a 200,000-digit line", data + b"9" * 200_000 + b"\n"),
                    ("numbers NaN", re.sub(rb"\b\d+(\.\d+)?\b", b"nan", data))):
                out.append((f"#{n} {label}", kind, FileSpec(suffix, changed, kind)))
    return out


def _edge_traces() -> list[tuple[str, list[FileSpec]]]:
    """Pairs of rank traces, the first broken one way (values in its first step's events)."""
    good = SEEDS["traces"]
    broken = []
    for field in ("ts", "dur"):
        for value in (math.nan, math.inf, Raw("1e400"), 0, -1, "1", None):
            doc = copy.deepcopy(good[0])
            for event in doc["traceEvents"][1:4]:
                event[field] = value
            broken.append((f"{field}={value!r}", _dumps(doc)))
    for key, value in (("distributedInfo", []), ("distributedInfo", {"world_size": "2"}),
                       ("distributedInfo", {"rank": 2**63}), ("traceEvents", {}),
                       ("traceEvents", [[]]), ("traceEvents", Raw(DEEP))):
        doc = copy.deepcopy(good[0])
        doc[key] = value
        broken.append((f"{key}={str(value)[:24]}", _dumps(doc)))
    other = FileSpec(".json", json.dumps(good[1]).encode(), "trace")
    specs = [(label, [FileSpec(".json", text.encode(), "trace"), other])
             for label, text in broken]
    packed = gzip.compress(json.dumps(good[0]).encode())
    for label, data in (("gzip cut in half", packed[: len(packed) // 2]),
                        ("gzip with a garbage body", packed[:10] + bytes(range(256)) * 4),
                        ("empty .gz", b""), ("one-byte .gz", b"\x1f")):
        specs.append((label, [FileSpec(".json.gz", data, "trace"), other]))
    return specs
