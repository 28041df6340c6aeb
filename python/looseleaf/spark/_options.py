"""The options of the ``looseleaf`` Spark data source, parsed once and checked for typos.

Spark passes options as a case-insensitive map of strings; everything here is plain data, so it
pickles to the executors with the reader and the writer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import _looseleaf
from ..exceptions import InvalidArgumentError
from ._dataset import DEFAULT_OPEN_COST_BYTES, DEFAULT_TARGET_BYTES, PartitionOptions, parse_columns
from ._storage import Storage

#: The data source's own read options, by their lower-case name (Spark lower-cases option
#: names), with their spelling. Every other read option is the engine's (``batchSize``,
#: ``ioDepth``, ``ioBufferBytes``, ``decodeParallelism``, ``verifyChecksums``, ...), named and
#: checked by the engine, as the JVM connector's are.
READ_OPTIONS = {
    "path": "path",
    "paths": "paths",
    "columns": "columns",
    "targetpartitionbytes": "targetPartitionBytes",
    "opencostbytes": "openCostBytes",
    "minpartitions": "minPartitions",
    "recursivefilelookup": "recursiveFileLookup",
}
WRITE_OPTIONS = {
    "path": "path",
    "pagesize": "pageSize",
    "compression": "compression",
    "partitionby": "partitionBy",
}
KNOWN_OPTIONS = {**READ_OPTIONS, **WRITE_OPTIONS}

_COMPRESSIONS = ("none", "lz4", "zstd")


#: Prefix of the options configuring the object store (``storage.aws_endpoint``, ...).
STORAGE_PREFIX = "storage."


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    out = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(
        k
        for k in out
        if k not in KNOWN_OPTIONS and not k.startswith(STORAGE_PREFIX) and engine_option(k) is None
    )
    if unknown:
        known = ", ".join(sorted(set(KNOWN_OPTIONS.values())))
        raise InvalidArgumentError(
            f"unknown looseleaf option(s) {unknown}; the options are: {known}, the engine's read options "
            f"({', '.join(_looseleaf.READ_OPTION_NAMES)}, in any spelling: batchSize is batch_size) "
            "and storage.<key>"
        )
    return out


def engine_option(spelling: str) -> str | None:
    """The engine's read option ``spelling`` names (``batchsize`` is ``batch_size``), or None."""
    return _looseleaf.read_option_name(spelling)


def parse_bytes(name: str, value: str | int) -> int:
    """A byte count: ``134217728``, ``128m``, ``128MB``, ``1g`` (binary units, parsed by the
    engine)."""
    try:
        number = _looseleaf.parse_size(str(value))
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"option {name}: {e}") from None
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


def parse_storage(options: Mapping[str, str]) -> Storage:
    """The ``storage.*`` options: the object store's configuration (``object_store`` keys)."""
    return Storage(
        {k[len(STORAGE_PREFIX) :]: str(v) for k, v in options.items() if k.startswith(STORAGE_PREFIX)}
    )


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
    #: The engine's read options (``batch_size``, ``io_depth``, ``io_buffer_bytes``), checked by
    #: the engine and passed to every file it opens.
    engine: dict[str, Any] = field(default_factory=dict)
    #: Where the files are and how to reach them (``storage.*`` options; never shown).
    storage: Storage = field(default_factory=Storage)

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
            engine=_looseleaf.read_options(
                **{name: o[key] for key in o if key not in KNOWN_OPTIONS and (name := engine_option(key))}
            ),
            storage=parse_storage(o),
        )


@dataclass(frozen=True)
class WriteOptions:
    """Options of a write (see ``docs/spark.md``)."""

    path: str
    page_size: int | None = None
    compression: str | None = None
    #: Partition columns (the ``partitionBy`` option: Spark refuses ``DataFrameWriter.partitionBy``
    #: for Python data sources).
    partition_by: list[str] = field(default_factory=list)
    storage: Storage = field(default_factory=Storage)

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
            partition_by=parse_columns(o.get("partitionby")) or [],
            storage=parse_storage(o),
        )
