"""The docs' references point at something that exists: a repository path in backticks is a
file or folder of this repository, a dotted name of scalesim's own modules (``predict.
input_pipeline_modelled``, ``zero_exchange.exchange``, ``state.V8_VALUES``) resolves to an
attribute or a schema field, and a docs/model.md section number is one of its sections."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import pkgutil
import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
# the docs checked here and whose code blocks users copy command lines from
# (tests/test_help_examples.py; docs/validation.md and docs/performance.md quote the benchmark
# scripts' commands)
DOCS = (
    "README.md",
    "docs/app.md",
    "docs/calibration.md",
    "docs/diagnose.md",
    "docs/model.md",
    "docs/bounds.md",
    "docs/emulated-cluster.md",
    "docs/validation.md",
    "docs/performance.md",
)
OWN_FOLDERS = ("scalesim/", "app/", "calibration/", "tests/", "benchmarks/", "docs/")
# installed package paths and where their files live in the repository
INSTALLED = {"scalesim/app/": "app/", "scalesim/calibration/": "calibration/"}


def _spans(doc: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", (ROOT / doc).read_text())


PACKAGES = (
    "scalesim",
    "scalesim.model",
    "scalesim.cli",
    "scalesim.sources",
    "scalesim.app",
    "scalesim.calibration",
)


def _modules() -> dict[str, list[str]]:
    """Module short name -> its dotted names, over scalesim and its sub-packages (``plan`` is
    ``scalesim.plan`` and ``scalesim.app.plan``; the docs name both so)."""
    out: dict[str, list[str]] = {}
    for package in PACKAGES:
        path = importlib.util.find_spec(package).submodule_search_locations
        for info in pkgutil.iter_modules(path):
            out.setdefault(info.name, []).append(f"{package}.{info.name}")
    return out


MODULES = _modules()


def _attribute(module_name: str, parts: list[str]) -> bool:
    """``parts`` are attributes of the module (a sub-module imported on the way; the last may
    be a pydantic model's field)."""
    obj = importlib.import_module(module_name)
    for i, part in enumerate(parts):
        if not hasattr(obj, part) and isinstance(obj, types.ModuleType):
            with contextlib.suppress(ImportError):
                importlib.import_module(f"{obj.__name__}.{part}")
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        return i == len(parts) - 1 and part in getattr(obj, "model_fields", {})
    return True


def _field_path(parts: list[str]) -> bool:
    """``compute.max_micro_batch``, ``layout.shard_group``: a path of fields of the profile or
    scenario schema (a JSON file's keys, which the docs name with dots too)."""
    from scalesim.schemas import Profile, Scenario

    for model in (Profile, Scenario):
        for part in parts:
            field = getattr(model, "model_fields", {}).get(part)
            if field is None:
                break
            nested = [
                a
                for a in typing.get_args(field.annotation) or (field.annotation,)
                if isinstance(a, type) and issubclass(a, BaseModel)
            ]
            model = nested[0] if nested else None
        else:
            return True
    return False


def _resolves(dotted: str) -> bool:
    """``dotted`` (``scalesim.x.y`` or a module's short name first) names a module attribute,
    a schema field of one, or a field path of the profile or scenario."""
    parts = dotted.split(".")
    if parts[0] == "scalesim":
        for i in range(len(parts), 0, -1):
            try:
                found = importlib.util.find_spec(".".join(parts[:i])) is not None
            except ModuleNotFoundError:
                found = False
            if found:
                return _attribute(".".join(parts[:i]), parts[i:])
        return False
    return any(_attribute(name, parts[1:]) for name in MODULES[parts[0]]) or _field_path(parts)


def test_repository_paths_exist():
    missing = []
    for doc in DOCS:
        for span in _spans(doc):
            path = span.split(":")[0].strip()
            if not path.startswith(OWN_FOLDERS) or " " in path or "*" in path:
                continue
            for installed, folder in INSTALLED.items():
                path = folder + path[len(installed) :] if path.startswith(installed) else path
            if not (ROOT / path).exists():
                missing.append((doc, span))
    assert not missing, missing


# short names a quoted call of other code starts with: a user's `model.half()`, torch's
# `dist.all_reduce(...)` (torch.distributed), not scalesim.model or scalesim.calibration.dist
NOT_OURS_IN_CALLS = {p.rsplit(".", 1)[-1] for p in PACKAGES} | {"dist"}


def _dotted(span: str) -> str | None:
    """The dotted name of scalesim's that ``span`` names, else None: ``predict.x``, a call
    ``memory.state_shards(strategy, s)`` (not one of NOT_OURS_IN_CALLS), a path
    ``model/stragglers.peer_margin`` (scalesim/model/...)."""
    call = re.fullmatch(r"([A-Za-z_]\w*(?:\.\w+)+)\(.*\)", span)
    path = re.fullmatch(r"(?:scalesim/)?(model|sources|cli)/(\w+)\.(\w+)", span)
    if call and call.group(1).split(".")[0] not in NOT_OURS_IN_CALLS:
        span = call.group(1)
    elif path:
        span = "scalesim." + ".".join(path.groups())
    if not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)+", span) or re.search(r"\.(py|json|md|sh|csv|gz|txt)$", span):
        return None
    return span if span.split(".")[0] == "scalesim" or span.split(".")[0] in MODULES else None


def test_dotted_names_of_scalesim_resolve():
    names = {(doc, span, _dotted(span)) for doc in DOCS for span in _spans(doc) if _dotted(span)}
    assert len(names) > 100  # the docs name many; a change to this filter must keep them
    dead = sorted((doc, span) for doc, span, name in names if not _resolves(name))
    assert not dead, dead


@pytest.mark.parametrize(
    ("span", "name", "real"),
    [
        ("predict.input_pipeline_modelled(profile)", "predict.input_pipeline_modelled", True),
        ("predict.input_pipeline_modeled(profile)", "predict.input_pipeline_modeled", False),
        ("model/stragglers.peer_margin", "scalesim.model.stragglers.peer_margin", True),
        ("model/stragglers.peer_margins", "scalesim.model.stragglers.peer_margins", False),
        ("layout_step.evaluate_layouts", "layout_step.evaluate_layouts", True),
        ("layout_step.evaluate_layout", "layout_step.evaluate_layout", False),
        ("model.no_sync()", None, None),  # PyTorch's, on a user's model
        ("dist.all_reduce(reduce_output, group=all_reduce_group)", None, None),  # torch's
        ("model/compute.py", None, None),  # a file: test_repository_paths' business
    ],
)
def test_a_dead_name_in_any_of_its_forms_is_caught(span, name, real):
    """The check above reads a name as a call, a path or plain, and fails on a made-up one."""
    assert _dotted(span) == name
    assert name is None or _resolves(name) is real


@pytest.mark.parametrize("doc", DOCS)
def test_model_md_section_numbers_exist(doc):
    sections = {int(n) for n in re.findall(r"^## (\d+)\.", (ROOT / "docs/model.md").read_text(), re.M)}
    text = (ROOT / doc).read_text()
    cited = {
        int(n) for m in re.finditer(r"docs/model\.md,? §(\d+)(?:[-–](\d+))?", text) for n in m.groups() if n
    }
    if doc == "docs/model.md":  # its own "§N" (a paper's sections are small numbers too)
        cited |= {int(n) for n in re.findall(r"(?<![\w.])§ ?(\d+)", text)}
    assert cited <= sections, sorted(cited - sections)
