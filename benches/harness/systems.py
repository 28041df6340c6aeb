"""Which systems a bench can run here: each one's modules imported, its library's version named."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any

#: How a version names the library of each first module (looseleaf's is bare: the subject).
_LIBRARY = {
    "looseleaf": "",
    "pyarrow": "pyarrow ",
    "lance": "pylance ",
    "vortex": "vortex-data ",
    "duckdb": "duckdb ",
}


def detect(
    needs: Mapping[str, Sequence[str]],
    wanted: Collection[str],
    unselected: str = "not selected",
    notes: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{system: {"available": bool, "version": ..., "reason": ...}}`` for every system of
    ``needs``, which names the modules each imports (the first one's library gives the version,
    ``notes`` adds to it). A system is available when they import and it is ``wanted``;
    ``unselected`` is the reason given for those that import but are not wanted."""
    out: dict[str, dict[str, Any]] = {}
    for system, modules in needs.items():
        info: dict[str, Any] = {"available": False}
        try:
            for module in modules:
                importlib.import_module(module)
            library = modules[0]
            version = sys.modules[library].__version__
            info["version"] = f"{_LIBRARY[library]}{version}{(notes or {}).get(system, '')}"
            info["available"] = system in wanted
            if system not in wanted:
                info["reason"] = unselected
        except Exception as e:  # any import failure means: not available here
            info["reason"] = f"cannot import: {type(e).__name__}: {e}"
        out[system] = info
    return out
