"""``mapInArrow`` helpers: read row ranges, write partitions, without the data source.

``read_ranges(schema)`` is a function for ``df.mapInArrow(read_ranges(schema), schema)`` over a
DataFrame of ``(path, start, count)`` rows (:func:`list_ranges` makes them); it yields the
batches of those rows cast to ``schema``. ``write_partitions(directory)`` writes each partition
to its own file and yields one ``(path, num_rows, num_bytes)`` row per file.

Both work with any DataFrame partitioning: they are plain functions over Arrow batches. Unlike
the data source, ``write_partitions`` has no job commit: each file appears when its task has
written it whole (the looseleaf writer never leaves a partial file), and a task that fails
leaves no file, but the files of the tasks that succeeded stay if the job fails later.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType

from .. import _looseleaf
from ..exceptions import InvalidArgumentError
from ..reader import FileReader
from ..reader import open as open_file
from ..writer import FileWriter
from ._dataset import DATA_SUFFIX, parse_columns
from ._datasource import dataset_schema, plan_read, with_partition_values
from ._options import ReadOptions
from ._storage import Storage, normalize
from ._types import arrow_to_spark_schema, cast_batch, spark_to_arrow_schema

#: Schema of the rows :func:`read_ranges` takes (and :func:`list_ranges` returns).
RANGE_SCHEMA = StructType(
    [
        StructField("path", StringType(), False),
        StructField("start", LongType(), False),
        StructField("count", LongType(), False),
    ]
)

#: Schema of the rows :func:`write_partitions` yields.
WRITE_RESULT_SCHEMA = StructType(
    [
        StructField("path", StringType(), False),
        StructField("num_rows", LongType(), False),
        StructField("num_bytes", LongType(), False),
    ]
)

ArrowMapFunction = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def schema_of(path: str, columns: str | Sequence[str] | None = None, **options: str | int) -> StructType:
    """The Spark schema the data source gives ``path`` (narrowed to ``columns``)."""
    return dataset_schema(_read_options(path, columns, options))


def list_ranges(
    path: str, columns: str | Sequence[str] | None = None, **options: str | int
) -> list[tuple[str, int, int]]:
    """``(path, start, count)`` ranges covering every row of a dataset once, split and sized as
    the data source would split them (same ``options``: ``targetPartitionBytes``, ...)."""
    plan = plan_read(_read_options(path, columns, options))
    return [(r.path, r.start, r.count) for ranges in plan.partitions for r in ranges]


def _read_options(path: str, columns: str | Sequence[str] | None, options: dict) -> ReadOptions:
    given = {k: str(v) for k, v in options.items()}
    if columns is not None:
        given["columns"] = ",".join(parse_columns(columns) or [])
    return ReadOptions.parse({**given, "path": path})


def read_ranges(
    schema: StructType,
    columns: str | Sequence[str] | None = None,
    *,
    storage_options: dict[str, str] | None = None,
    **options: Any,
) -> ArrowMapFunction:
    """A ``mapInArrow`` function reading the rows its input names.

    The input has ``path``, ``start`` and ``count`` columns (by name, else the first three);
    each row yields the batches of rows ``start .. start + count`` of ``path``, cast to
    ``schema`` (the schema given to ``mapInArrow``; :func:`schema_of` gives it). ``columns``
    (default: the top-level fields of ``schema``) is the looseleaf projection, nested paths
    allowed; ``storage_options`` configures the object store the files are in, and ``options``
    are the engine's read options (``batch_size``, ``io_depth``, ``io_buffer_bytes``), as
    :func:`looseleaf.open` takes both.

    >>> ranges = spark.createDataFrame(list_ranges(path), RANGE_SCHEMA)  # doctest: +SKIP
    >>> ranges.mapInArrow(read_ranges(schema_of(path)), schema_of(path))  # doctest: +SKIP
    """
    if not isinstance(schema, StructType):
        raise InvalidArgumentError(
            f"read_ranges needs a pyspark StructType schema, got {type(schema).__name__}"
        )
    projection = parse_columns(columns) or schema.fieldNames()
    # Checked here, on the driver, rather than in the first task.
    engine = _looseleaf.read_options(**options)
    storage = Storage(dict(storage_options or {}))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(schema, timezone="UTC")
        readers: dict[str, tuple[FileReader, set[str], dict[str, Any], dict[str, pa.DataType]]] = {}
        for batch in batches:
            paths, starts, counts = _range_columns(batch)
            for path, start, count in zip(paths, starts, counts, strict=True):
                if path is None or start is None or count is None:
                    raise InvalidArgumentError(f"a range row has a null: ({path!r}, {start!r}, {count!r})")
                location = normalize(path)
                opened = readers.get(location)
                if opened is None:
                    reader = open_file(location, **storage.open_kwargs(), **engine)
                    opened = readers[location] = (reader, *_partition_columns(reader, location, target))
                reader, columns, values, types = opened
                for out in reader.read_range(
                    start, count, [c for c in projection if c.split(".")[0] in columns]
                ):
                    if types:
                        out = with_partition_values(out, values, types)
                    yield cast_batch(out, target, source=location)

    return read


def _partition_columns(
    reader: FileReader, location: str, target: pa.Schema
) -> tuple[set[str], dict[str, Any], dict[str, pa.DataType]]:
    """The file's own columns, and the values and types of the columns of ``target`` it does not
    hold: the partition columns of a partitioned dataset's file, read from the ``key=value``
    directories above it (by the core's rule, as the data source reads them)."""
    own = set(reader.schema.names)
    missing = pa.schema([f for f in target if f.name not in own])
    if not len(missing):
        return own, {}, {}
    row = pa.table(_looseleaf.file_partition_values(location, missing)).to_pylist()[0]
    return own, row, {f.name: f.type for f in missing}


def _range_columns(batch: pa.RecordBatch) -> tuple[list, list, list]:
    names = batch.schema.names
    if all(n in names for n in ("path", "start", "count")):
        columns = [batch.column(names.index(n)) for n in ("path", "start", "count")]
    elif batch.num_columns >= 3:
        columns = [batch.column(i) for i in range(3)]
    else:
        raise InvalidArgumentError(f"read_ranges needs (path, start, count) columns, got {names}")
    return columns[0].to_pylist(), columns[1].to_pylist(), columns[2].to_pylist()


def write_partitions(
    directory: str,
    schema: StructType | None = None,
    *,
    page_size: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> ArrowMapFunction:
    """A ``mapInArrow`` function writing each partition to ``directory/part-<uuid>.leaf``
    (a local directory or an object store prefix, configured by ``storage_options``).

    Yields one row per file written (an empty partition writes none), in the shape of
    :data:`WRITE_RESULT_SCHEMA`: ``df.mapInArrow(write_partitions(d), WRITE_RESULT_SCHEMA)``.
    ``schema`` (the DataFrame's) keeps its non-null flags in the files; without it, the files'
    schema is the batches' Arrow schema in canonical form with every field nullable."""
    directory = normalize(directory)
    storage = Storage(dict(storage_options or {}))
    arrow_schema = spark_to_arrow_schema(schema) if schema is not None else None
    result_schema = spark_to_arrow_schema(WRITE_RESULT_SCHEMA)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        target = arrow_schema
        writer: FileWriter | None = None
        path = storage.join(directory, f"part-{uuid.uuid4().hex}{DATA_SUFFIX}")
        try:
            for batch in batches:
                if target is None:
                    target = spark_to_arrow_schema(arrow_to_spark_schema(batch.schema))
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    writer = FileWriter(path, target, page_size=page_size, **storage.open_kwargs())
                writer.write_batch(cast_batch(batch, target))
            if writer is None:
                return
            result = writer.close()
        except BaseException:
            if writer is not None and not writer.closed:
                writer.abort()
            raise
        yield pa.RecordBatch.from_pylist(
            [{"path": path, "num_rows": result["num_rows"], "num_bytes": result["num_bytes"]}],
            schema=result_schema,
        )

    return write
