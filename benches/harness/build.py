"""Which looseleaf a run measures: the installed package, copied aside at the start of the run so
that a reinstall meanwhile (other work on the same machine) cannot mix two builds in one set of
results, and what that copy was built from."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import ROOT


def pin_looseleaf(directory: Path) -> Path | None:
    """Copies the installed looseleaf package into ``directory`` and puts that copy first on the
    module path of this process and of every worker; returns where it was installed."""
    import importlib.util

    spec = importlib.util.find_spec("looseleaf")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations)))
    target = directory / "looseleaf"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(directory))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")]))
    return source


def extension_built(package: Path) -> str:
    """When the package's native extension was built (UTC), from its file's time."""
    extensions = sorted(package.glob("_looseleaf*.so")) + sorted(package.glob("_looseleaf*.pyd"))
    if not extensions:
        return "unknown"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(extensions[0].stat().st_mtime))


def looseleaf_build() -> dict[str, Any]:
    """Which looseleaf was measured: the extension's build time and the checkout's commit."""
    info: dict[str, Any] = {}
    try:
        import looseleaf

        info["extension_built"] = extension_built(Path(looseleaf.__file__).parent)
        info["package"] = str(Path(looseleaf.__file__).parent)
    except Exception as e:  # reported, not fatal
        info["extension_built"] = f"unknown: {e}"
    try:
        git = ["git", "-C", str(ROOT)]
        info["commit"] = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "rust"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        info["uncommitted_rust_files"] = len(changed)
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = "unknown"
    return info


def note_reinstall(build: dict[str, Any], installed: Path | None) -> None:
    """Records in ``build`` (:func:`looseleaf_build`'s) when the package ``installed`` was rebuilt
    during the run: the run still measured its pinned copy throughout."""
    if installed is not None and extension_built(installed) != build.get("extension_built"):
        build["installed_changed_during_run"] = extension_built(installed)
