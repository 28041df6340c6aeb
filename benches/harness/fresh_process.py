"""Measures in fresh processes, so that no cache, allocator or thread pool survives from one to
the next: the parent runs the bench's own script with ``--worker`` and the spec as JSON on stdin;
the worker answers with its result as the last line of its stdout, JSON too."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .report import first_line

Spec = dict[str, Any]


def run(script: str | Path, spec: Spec, timeout: float = 900) -> dict[str, Any]:
    """Runs ``script --worker`` with ``spec``; its result, or ``{"error": <one line>}`` if it
    failed, timed out or answered something else than JSON."""
    try:
        done = subprocess.run(
            [sys.executable, str(Path(script).resolve()), "--worker"],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": error_line(done.stderr, done.returncode)}
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"unreadable worker output: {first_line(lines[-1])}"}


def serve(measure: Callable[[Spec], dict[str, Any]]) -> None:
    """The worker's side: ``measure`` of the spec on stdin, printed as JSON. An exception is
    answered as ``{"error": "<type>: <message>"}``, the result of that system, its traceback
    left on stderr for whoever runs the worker by hand."""
    try:
        result = measure(json.loads(sys.stdin.read()))
    except Exception as e:
        traceback.print_exc()
        result = {"error": f"{type(e).__name__}: {first_line(str(e), 500)}"}
    print(json.dumps(result))


def error_line(stderr: str, code: int) -> str:
    """The exception line of a worker's traceback (Rust backtraces and warnings left out)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not line.startswith(" ") and ("Error" in line or "Exception" in line) and ":" in line:
            # An exception message may span lines (pyarrow's, Rust's): keep its first line.
            return line.strip()
    return f"exit {code}: " + " | ".join(lines[-3:])


def import_before_clock() -> None:
    """Imports what every measure's process has imported before its clock starts, whichever
    system it measures. pyarrow imports pandas the first time it converts a numpy array
    (~0.2 s), which the benches' own handling of results does for every system; Lance and Vortex
    import pandas on import. Imported here, so that no system is charged for the harness's work."""
    import numpy  # noqa: F401
    import pyarrow  # noqa: F401

    with contextlib.suppress(ImportError):
        import pandas  # noqa: F401
