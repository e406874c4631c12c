"""Loading a user's ``package.module:factory`` with one-line errors for every way it can fail."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

from scalesim.errors import ScalesimError


def load_callable(spec: str, what: str) -> Callable:
    """The callable named by ``package.module:attribute`` (the current folder is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ScalesimError(f"{what} '{spec}': write it as package.module:factory")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ScalesimError(
            f"{what} '{spec}': module '{exc.name}' not found; check the name and that its folder "
            "is on PYTHONPATH (the current folder is)") from None
    except Exception as exc:  # noqa: BLE001 - the user's module may raise anything on import
        raise ScalesimError(
            f"{what} '{spec}': importing '{module_name}' raised {type(exc).__name__}: {exc}"
        ) from None
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ScalesimError(f"{what} '{spec}': '{module_name}' has no attribute '{attr}'")
        target = getattr(target, part)
    if not callable(target):
        raise ScalesimError(f"{what} '{spec}': '{attr}' is not callable")
    return target


def call_factory(spec: str, what: str, factory: Callable, *args, **kwargs):
    """Call a user factory; an exception becomes one line naming the factory."""
    try:
        return factory(*args, **kwargs)
    except ScalesimError:
        raise
    except Exception as exc:  # noqa: BLE001 - report whatever the user's code raised
        raise ScalesimError(f"{what} '{spec}' raised {type(exc).__name__}: {exc}") from None
