"""Numbers and tables as the benches' reports print them."""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1024 * MIB:
        return f"{n / 1024 / MIB:.2f} GiB"
    if abs(n) >= MIB:
        return f"{n / MIB:.1f} MiB"
    return f"{n / 1024:.0f} KiB"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def first_line(text: str, limit: int = 160) -> str:
    """The first line of ``text``, cut to ``limit`` characters: an error message in a table cell."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def target(name: str, measured: str, bar: str, met: bool | None) -> dict[str, Any]:
    """A bar a bench holds looseleaf to: what was measured, the bar, and whether it was met
    (None: it could not be told in this run)."""
    return {"target": name, "measured": measured, "bar": bar, "met": met}


def targets_section(targets: list[dict[str, Any]]) -> list[str]:
    """The report's ``## Targets`` table, as markdown lines."""
    lines = ["", "## Targets", "", "| target | measured | bar | met |", "|---|---|---|---|"]
    for t in targets:
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        lines.append(f"| {t['target']} | {t['measured']} | {t['bar']} | {met} |")
    return lines
