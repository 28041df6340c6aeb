"""The options of the ``looseleaf`` Spark data source, parsed once and checked for typos.

Spark passes options as a case-insensitive map of strings; everything here is plain data, so it
pickles to the executors with the reader and the writer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..exceptions import InvalidArgumentError
from ._dataset import DEFAULT_OPEN_COST_BYTES, DEFAULT_TARGET_BYTES, PartitionOptions, parse_columns

#: Every option, by its lower-case name (Spark lower-cases option names), with its spelling.
READ_OPTIONS = {
    "path": "path",
    "paths": "paths",
    "columns": "columns",
    "targetpartitionbytes": "targetPartitionBytes",
    "opencostbytes": "openCostBytes",
    "minpartitions": "minPartitions",
    "recursivefilelookup": "recursiveFileLookup",
    "batchsize": "batchSize",
    "iodepth": "ioDepth",
    "iobufferbytes": "ioBufferBytes",
}
WRITE_OPTIONS = {"path": "path", "pagesize": "pageSize", "compression": "compression"}
KNOWN_OPTIONS = {**READ_OPTIONS, **WRITE_OPTIONS}

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
}
_COMPRESSIONS = ("none", "lz4", "zstd")


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    out = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(k for k in out if k not in KNOWN_OPTIONS)
    if unknown:
        known = ", ".join(sorted(set(KNOWN_OPTIONS.values())))
        raise InvalidArgumentError(f"unknown looseleaf option(s) {unknown}; the options are: {known}")
    return out


def parse_bytes(name: str, value: str | int) -> int:
    """A byte count: ``134217728``, ``128m``, ``128MB``, ``1g`` (binary units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise InvalidArgumentError(
            f"option {name} must be a byte count such as 134217728 or 128m, got {value!r}"
        )
    number = int(match.group(1)) * _UNITS[unit]
    if number < 1:
        raise InvalidArgumentError(f"option {name} must be at least 1, got {value!r}")
    return number


def parse_int(name: str, value: str | int, *, minimum: int = 1) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise InvalidArgumentError(f"option {name} must be at least {minimum}, got {value!r}")
    return number


def parse_bool(name: str, value: str | bool) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidArgumentError(f"option {name} must be true or false, got {value!r}")
    return text == "true"


def parse_paths(options: Mapping[str, str]) -> list[str]:
    """``path`` (one path, glob or directory) and/or ``paths`` (a JSON list, which is how Spark
    passes several paths given to ``load``)."""
    paths: list[str] = []
    if options.get("paths"):
        value = options["paths"]
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = [value]
        if not isinstance(decoded, list) or not all(isinstance(p, str) for p in decoded):
            raise InvalidArgumentError(f"option paths must be a JSON list of paths, got {value!r}")
        paths.extend(decoded)
    if options.get("path"):
        paths.append(options["path"])
    if not paths:
        raise InvalidArgumentError("no path given: use spark.read.format('looseleaf').load(path)")
    return paths


@dataclass(frozen=True)
class ReadOptions:
    """Options of a read (see ``docs/spark.md``)."""

    paths: list[str]
    columns: list[str] | None = None
    partitioning: PartitionOptions = field(default_factory=PartitionOptions)
    recursive: bool = False
    batch_size: int | None = None
    io_depth: int | None = None
    io_buffer_bytes: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> ReadOptions:
        o = _lower({**_lower(defaults or {}), **_lower(options)})
        partitioning = PartitionOptions(
            target_bytes=parse_bytes(
                "targetPartitionBytes", o.get("targetpartitionbytes", DEFAULT_TARGET_BYTES)
            ),
            open_cost_bytes=parse_bytes("openCostBytes", o.get("opencostbytes", DEFAULT_OPEN_COST_BYTES)),
            min_partitions=parse_int("minPartitions", o.get("minpartitions", 1)),
        )
        return cls(
            paths=parse_paths(o),
            columns=parse_columns(o.get("columns")),
            partitioning=partitioning,
            recursive=parse_bool("recursiveFileLookup", o.get("recursivefilelookup", "false")),
            batch_size=parse_int("batchSize", o["batchsize"]) if "batchsize" in o else None,
            io_depth=parse_int("ioDepth", o["iodepth"]) if "iodepth" in o else None,
            io_buffer_bytes=parse_bytes("ioBufferBytes", o["iobufferbytes"])
            if "iobufferbytes" in o
            else None,
        )


@dataclass(frozen=True)
class WriteOptions:
    """Options of a write (see ``docs/spark.md``)."""

    path: str
    page_size: int | None = None
    compression: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> WriteOptions:
        o = _lower({**_lower(defaults or {}), **_lower(options)})
        paths = parse_paths(o)
        if len(paths) != 1:
            raise InvalidArgumentError(f"a write needs exactly one directory, got {paths}")
        compression = o.get("compression", "none").strip().lower()
        if compression not in _COMPRESSIONS:
            raise InvalidArgumentError(
                f"option compression must be one of {_COMPRESSIONS}, got {compression!r}"
            )
        return cls(
            path=paths[0],
            page_size=parse_bytes("pageSize", o["pagesize"]) if "pagesize" in o else None,
            compression=None if compression == "none" else compression,
        )
