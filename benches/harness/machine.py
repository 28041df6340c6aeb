"""Where and when a run ran, as every report's first line gives it."""

from __future__ import annotations

import os
import platform
import time
from typing import Any


def describe() -> dict[str, Any]:
    """The date, CPUs, platform, Python and load average at the start of a run."""
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_at_start": load,
    }


def headline(meta: dict[str, Any]) -> str:
    """``meta`` (holding :func:`describe`'s keys) as the start of a report's first paragraph."""
    return (
        f"Run {meta['date']} on {meta['cpus']} CPUs ({meta['platform']}, Python {meta['python']}), "
        f"load average at start {meta['load_average_at_start']}"
    )
