"""Traces of reads: :class:`Trace`, filled by any read given it (``trace=``), exported as Chrome
trace JSON (opens in Perfetto) or drawn as a PNG timeline (the ``looseleaf trace`` command,
:mod:`looseleaf.cli.trace`, draws one of a read it makes).

>>> trace = looseleaf.Trace()  # doctest: +SKIP
>>> table = reader.to_table(columns=["id", "comment"], trace=trace)  # doctest: +SKIP
>>> trace.to_png("trace.png")  # doctest: +SKIP
>>> trace.to_chrome_json("trace.json")  # then open it in https://ui.perfetto.dev  # doctest: +SKIP

The engine records; this module only reads the record back and draws it. matplotlib is imported
by :meth:`Trace.to_png` alone (``pip install looseleaf[trace]``), never by ``import looseleaf``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from . import _looseleaf

__all__ = ["Trace"]

PathLike = str | os.PathLike[str]

# Colours of the picture: dark tones for the loops, light ones (below) for the columns read.
_SCHEDULING = "#393b79"
_WAITING = "#c7c7c7"
_DECODE = "#637939"
_CONSUMER = "#7b4173"
_BYPASS = "#d62728"
_BUDGET = "#e6550d"
_INDIRECT = "#8c6d31"
_COLUMNS = [
    "#6baed6", "#fd8d3c", "#74c476", "#9e9ac8", "#fdae6b", "#a1d99b", "#9ecae1", "#fdd0a2",
    "#c7e9c0", "#bcbddc", "#e7969c", "#dadaeb", "#c6dbef", "#d9d9d9", "#e7ba52", "#cedb9c",
]  # fmt: skip


class Trace(_looseleaf.Trace):
    """A timeline of one read, recorded by the engine while the read runs.

    Give it to any read method (``stream``, ``read_all``, ``read_range``, ``to_table``,
    ``take``, with or without ``filter``) as ``trace=``. It records every I/O request (queued,
    issued — and whether it went past the byte budget —, completed; bytes; priority), the
    scheduling loop and each page it schedules, each decode task (on its thread), each batch
    handed out, and the bytes held in the I/O buffer over time. A filtered read's stages all
    record into it. Use one trace per read: a trace given to several reads holds them all, on
    one clock.

    Times are microseconds since the trace was created. Recording costs a clock read and a
    short lock per event; a read without a trace pays nothing measurable.
    """

    # --- the record -----------------------------------------------------------------------

    def _snapshot(self) -> dict[str, Any]:
        return self.snapshot()

    @property
    def reads(self) -> list[dict[str, Any]]:
        """Every storage read: ``request``, ``read`` (its position in the request), ``column``,
        ``priority`` (the lowest row it serves), ``known`` (``False`` for indirect requests,
        computed from bytes read earlier), ``offset``, ``end``, ``bytes``, ``queued_us``,
        ``issued_us``, ``completed_us``, ``bypassed`` (issued past the byte budget), ``urgent``
        (only because a decoder waited for it), ``failed``."""
        return self._snapshot()["reads"]

    @property
    def spans(self) -> list[dict[str, Any]]:
        """Every span: ``lane`` (``scheduling``, ``indirect``, ``decode loop``, ``decode``,
        ``consumer``), ``name``, ``thread``, ``start_us``, ``end_us``, and what it covers
        (``priority`` of a scheduled page; ``step`` and ``rows`` of a decode task; ``batch``,
        ``rows`` and ``bytes`` of a batch handed out)."""
        return self._snapshot()["spans"]

    @property
    def budget(self) -> list[dict[str, Any]]:
        """The I/O buffer over time: ``at_us``, ``reserved_bytes``, ``reads_in_flight``."""
        return self._snapshot()["budget"]

    @property
    def info(self) -> dict[str, Any]:
        """What the read said about itself: ``location``, ``io_buffer_bytes``, ``io_depth``."""
        return self._snapshot()["info"]

    @property
    def batches(self) -> list[dict[str, Any]]:
        """The batches handed to the consumer (the spans of the ``consumer`` lane)."""
        return [s for s in self.spans if s["lane"] == "consumer"]

    @property
    def events(self) -> list[dict[str, Any]]:
        """Everything, as one list of dicts each with a ``type``: ``"read"``, ``"span"`` or
        ``"budget"``."""
        snapshot = self._snapshot()
        return (
            [{"type": "read", **r} for r in snapshot["reads"]]
            + [{"type": "span", **s} for s in snapshot["spans"]]
            + [{"type": "budget", **b} for b in snapshot["budget"]]
        )

    def summary(self) -> dict[str, Any]:
        """Totals: ``rows`` and ``batches`` handed out, storage ``reads``, ``bytes_read``,
        ``bypassed_reads``, ``peak_reserved_bytes``, ``duration_ms`` (first event to last)."""
        snapshot = self._snapshot()
        reads, spans, budget = snapshot["reads"], snapshot["spans"], snapshot["budget"]
        start, end = _extent(snapshot)
        batches = [s for s in spans if s["lane"] == "consumer"]
        return {
            "rows": sum(b["rows"] for b in batches),
            "batches": len(batches),
            "reads": len(reads),
            "bytes_read": sum(r["bytes"] for r in reads if r["completed_us"] is not None),
            "bypassed_reads": sum(1 for r in reads if r["bypassed"]),
            "peak_reserved_bytes": max((b["reserved_bytes"] for b in budget), default=0),
            "duration_ms": (end - start) / 1000.0,
        }

    # --- exports --------------------------------------------------------------------------

    def to_chrome_json(self, path: PathLike | None = None) -> str:
        """The trace in Chrome's Trace Event Format, which https://ui.perfetto.dev and
        ``chrome://tracing`` open: a lane per loop and thread, each storage read as an async
        slice (queued, then in flight), counters for the I/O buffer and the reads in flight.
        Written to ``path`` too if given."""
        text = self.chrome_json()
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def to_png(
        self,
        path: PathLike,
        *,
        title: str | None = None,
        column_names: Mapping[int, str] | None = None,
        width: float = 14.0,
        dpi: int = 110,
    ) -> None:
        """Draws the trace as a timeline, as the design documents draw reads: lanes for the
        scheduling loop, the storage reads in flight (one row per concurrent read; a read
        issued past the byte budget outlined in red), the decode loop's waits for pages, the
        decode tasks (a row per thread) and the batches handed to the consumer; below, the
        bytes held in the I/O buffer against the budget. Time in ms on the x axis.

        ``column_names`` maps column numbers to names for the legend (the ``looseleaf trace``
        command passes the file's). Needs matplotlib (``pip install looseleaf[trace]``)."""
        _draw(self._snapshot(), path, title=title, column_names=column_names, width=width, dpi=dpi)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"looseleaf.Trace(reads={s['reads']}, bytes_read={s['bytes_read']}, rows={s['rows']}, "
            f"duration_ms={s['duration_ms']:.1f})"
        )


# --- drawing ------------------------------------------------------------------------------


def _extent(snapshot: Mapping[str, Any]) -> tuple[int, int]:
    """The first and last moments recorded (µs)."""
    times: list[int] = []
    for r in snapshot["reads"]:
        times.append(r["queued_us"])
        times.extend(t for t in (r["issued_us"], r["completed_us"]) if t is not None)
    for s in snapshot["spans"]:
        times += [s["start_us"], s["end_us"]]
    times += [b["at_us"] for b in snapshot["budget"]]
    return (min(times), max(times)) if times else (0, 0)


def _pack(intervals: Sequence[tuple[float, float]]) -> list[int]:
    """A row for each interval (sorted by start) so that intervals of one row do not overlap:
    the lowest free row, as reads take the first free slot of the I/O depth."""
    ends: list[float] = []
    rows = []
    for start, end in intervals:
        row = next((i for i, e in enumerate(ends) if e <= start), None)
        if row is None:
            ends.append(end)
            row = len(ends) - 1
        else:
            ends[row] = end
        rows.append(row)
    return rows


def format_size(n: float) -> str:
    """``n`` bytes in binary units, as the picture gives sizes: ``"43.3 MiB"``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _draw(
    snapshot: Mapping[str, Any],
    path: PathLike,
    *,
    title: str | None,
    column_names: Mapping[int, str] | None,
    width: float,
    dpi: int,
) -> None:
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("Trace.to_png needs matplotlib: pip install 'looseleaf[trace]'") from e

    reads, spans, budget, info = snapshot["reads"], snapshot["spans"], snapshot["budget"], snapshot["info"]
    t0, t1 = _extent(snapshot)

    def ms(us: float) -> float:
        return (us - t0) / 1000.0

    # Lanes, top to bottom: (label, [(start_ms, width_ms, colour, edge)]).
    lanes: list[tuple[str, list[tuple[float, float, str, str | None]]]] = []
    groups: list[tuple[str, int, int]] = []  # (name, first lane, lane count)

    def group(name: str, rows: list[tuple[str, list[tuple[float, float, str, str | None]]]]) -> None:
        if rows:
            groups.append((name, len(lanes), len(rows)))
            lanes.extend(rows)

    def by_thread(lane: str) -> dict[int, list[dict[str, Any]]]:
        out: dict[int, list[dict[str, Any]]] = {}
        for s in spans:
            if s["lane"] == lane:
                out.setdefault(s["thread"], []).append(s)
        return dict(sorted(out.items()))

    def bar(
        s: Mapping[str, Any], colour: str, edge: str | None = None
    ) -> tuple[float, float, str, str | None]:
        return (ms(s["start_us"]), max(ms(s["end_us"]) - ms(s["start_us"]), 0.0), colour, edge)

    # Scheduling: the loop's run (light), the pages it schedules (dark), its waits for room.
    rows = []
    for thread, items in by_thread("scheduling").items():
        bars = [bar(s, "#9c9ede") for s in items if s["name"] == "scheduling loop"]
        bars += [bar(s, _WAITING) for s in items if s["name"] == "wait for room"]
        bars += [bar(s, _SCHEDULING) for s in items if s["name"] == "schedule page"]
        rows.append((f"scheduling (t{thread})", bars))
    group("scheduling", rows)

    # Indirect steps overlap: packed into rows.
    indirect = sorted((s for s in spans if s["lane"] == "indirect"), key=lambda s: s["start_us"])
    packed = _pack([(s["start_us"], s["end_us"]) for s in indirect])
    rows = [(f"indirect {i}", []) for i in range(max(packed, default=-1) + 1)]
    for s, row in zip(indirect, packed, strict=True):
        rows[row][1].append(bar(s, _INDIRECT))
    group("indirect I/O", rows)

    # Storage reads in flight, one row per concurrent read, coloured by column.
    columns = sorted({r["column"] for r in reads})
    colour_of = {c: _COLUMNS[i % len(_COLUMNS)] for i, c in enumerate(columns)}
    issued = sorted(
        (r for r in reads if r["issued_us"] is not None and r["completed_us"] is not None),
        key=lambda r: r["issued_us"],
    )
    packed = _pack([(r["issued_us"], r["completed_us"]) for r in issued])
    rows = [(f"read slot {i}", []) for i in range(max(packed, default=-1) + 1)]
    for r, row in zip(issued, packed, strict=True):
        start, end = ms(r["issued_us"]), ms(r["completed_us"])
        edge = _BYPASS if r["bypassed"] else None
        rows[row][1].append((start, max(end - start, 0.0), colour_of[r["column"]], edge))
    group("I/O in flight", rows)

    # The decode loop's waits for pages, then the decode tasks, a row per thread.
    rows = [
        (f"waiting (t{t})", [bar(s, _WAITING) for s in items])
        for t, items in by_thread("decode loop").items()
    ]
    group("decode loop", rows)
    rows = [(f"decode (t{t})", [bar(s, _DECODE) for s in items]) for t, items in by_thread("decode").items()]
    group("decoding", rows)

    # The consumer: each batch from the moment it was asked for to the moment it was handed out.
    batches = [s for s in spans if s["lane"] == "consumer"]
    group("consumer", [("batches", [bar(s, _CONSUMER, "white") for s in batches])] if batches else [])

    height = 1.2 + 0.28 * max(len(lanes), 4) + 2.2
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    grid = fig.add_gridspec(2, 1, height_ratios=[max(len(lanes), 4) * 0.28, 2.0])
    ax = fig.add_subplot(grid[0])
    ax_budget = fig.add_subplot(grid[1], sharex=ax)

    for i, (_, bars) in enumerate(lanes):
        if not bars:
            continue
        y = len(lanes) - 1 - i
        ax.broken_barh(
            [(start, max(w, 1e-3)) for start, w, _, _ in bars],
            (y - 0.4, 0.8),
            facecolors=[colour for _, _, colour, _ in bars],
            edgecolors=[edge or colour for _, _, colour, edge in bars],
            linewidths=[1.2 if edge else 0.0 for _, _, _, edge in bars],
        )
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([label for label, _ in reversed(lanes)], fontsize=8)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    for name, first, count in groups:
        top = len(lanes) - first - 0.5
        ax.axhline(top, color="#444444", linewidth=0.6)
        ax.text(1.005, top - count / 2, name, transform=ax.get_yaxis_transform(), va="center", fontsize=9)
    ax.grid(axis="x", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.tick_params(labelbottom=False)

    names = column_names or {}
    legend = [Patch(color=colour_of[c], label=names.get(c, f"column {c}")) for c in columns[:16]]
    legend += [
        Patch(facecolor="white", edgecolor=_BYPASS, label="read past the budget"),
        Patch(color=_SCHEDULING, label="page scheduled"),
        Patch(color=_WAITING, label="waiting"),
        Patch(color=_DECODE, label="decode task"),
        Patch(color=_CONSUMER, label="batch asked for → handed out"),
    ]
    if indirect:
        legend.append(Patch(color=_INDIRECT, label="indirect step (offsets → data)"))
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.09, 1.0), fontsize=8, frameon=False)

    # The budget: bytes reserved over time (a step line) against the buffer.
    limit = info.get("io_buffer_bytes")
    largest = max([b["reserved_bytes"] for b in budget] + [limit or 0])
    scale, unit = (1 << 20, "MiB") if largest >= 1 << 20 else (1 << 10, "KiB")
    if budget:
        xs = [ms(b["at_us"]) for b in budget] + [ms(t1)]
        ys = [b["reserved_bytes"] / scale for b in budget]
        ys.append(ys[-1])
        ax_budget.step(xs, ys, where="post", color=_BUDGET, linewidth=1.2, label="reserved in the I/O buffer")
        ax_budget.fill_between(xs, ys, step="post", color=_BUDGET, alpha=0.25)
        inflight = ax_budget.twinx()
        inflight.step(
            xs,
            [b["reads_in_flight"] for b in budget] + [budget[-1]["reads_in_flight"]],
            where="post",
            color="#555555",
            linewidth=0.7,
            alpha=0.7,
        )
        inflight.set_ylabel("reads in flight", fontsize=8)
        inflight.tick_params(labelsize=8)
    if limit:
        ax_budget.axhline(limit / scale, color=_BYPASS, linestyle="--", linewidth=1.0, label="budget")
    ax_budget.set_ylabel(f"I/O buffer ({unit})", fontsize=8)
    ax_budget.set_xlabel("time (ms)")
    ax_budget.tick_params(labelsize=8)
    ax_budget.legend(loc="upper left", bbox_to_anchor=(1.09, 1.0), fontsize=8, frameon=False)
    ax_budget.grid(axis="x", color="#dddddd", linewidth=0.5)
    ax_budget.set_xlim(0, max(ms(t1), 0.001) * 1.01)

    rows_out = sum(b["rows"] for b in batches)
    read_bytes = sum(r["bytes"] for r in issued)
    bypassed = sum(1 for r in issued if r["bypassed"])
    location = info.get("location") or "a read"
    headline = title or os.path.basename(location.rstrip("/")) or location
    depth = info.get("io_depth")
    details = (
        f"{rows_out:,} rows in {len(batches)} batches · {format_size(read_bytes)} in {len(issued)} reads "
        f"({bypassed} past the budget) · {(t1 - t0) / 1000.0:.1f} ms"
        + (f" · buffer {format_size(limit)}" if limit else "")
        + (f" · depth {depth}" if depth else "")
    )
    fig.suptitle(f"{headline}\n{details}", fontsize=11)
    fig.savefig(path, dpi=dpi)
