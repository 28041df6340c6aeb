"""The ``looseleaf`` Spark data source (PySpark's Python Data Source API, Spark 4.0+).

Where each piece runs: ``DataSource.schema``, ``DataSource.reader``/``writer``,
``DataSourceReader.partitions`` and ``DataSourceWriter.commit``/``abort`` run on the driver (in
Python workers the JVM starts); ``DataSourceReader.read`` and ``DataSourceWriter.write`` run in
the tasks. Readers and writers are pickled in between, so they hold plain data only, and native
looseleaf handles are opened inside ``read``/``write``.

Reading: see :mod:`._dataset` for files and partitioning. Writing commits through the
directory's commit log (:mod:`._commits`), the same on local disks and object stores, with no
rename: each task writes its file in place, invisible to readers until the driver's ``commit``
writes one small commit naming the files of the successful tasks; ``abort`` deletes the job's
files. A failed job therefore leaves no file a reader would pick up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from .. import _looseleaf
from ..exceptions import InvalidArgumentError, NotFoundError, SchemaMismatchError
from ..reader import FileReader
from ..reader import open as open_file
from ..writer import FileWriter
from ._dataset import (
    DATA_SUFFIX,
    FileInfo,
    FileRange,
    file_info,
    list_files,
    open_files,
    plan_partitions,
    projected_schema,
    schema_file,
)
from ._filters import FilterPlan
from ._options import ReadOptions, WriteOptions
from ._storage import normalize
from ._types import arrow_to_spark_schema, as_nullable, cast_batch, spark_to_arrow_schema

NAME = "looseleaf"


class LooseleafPartition(InputPartition):
    """One Spark input partition: row ranges of one or more files."""

    def __init__(self, ranges: tuple[FileRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges


@dataclass(frozen=True)
class ReadPlan:
    """What a read will do, computed as the data source computes it (without Spark): the Spark
    schema, the ``columns`` projection (``None``: every column), the partitions and the files."""

    schema: StructType
    columns: list[str] | None
    partitions: list[list[FileRange]]
    files: list[FileInfo]


def dataset_schema(options: ReadOptions) -> StructType:
    """The Spark schema of a dataset: from the writer's ``_schema.leaf`` of a directory, else
    from its first data file, narrowed to the ``columns`` option."""
    storage = options.storage
    source = schema_file(options.paths, storage)
    if source is None:
        files = list_files(options.paths, recursive=options.recursive, storage=storage)
        if not files:
            raise NotFoundError(f"{', '.join(options.paths)}: no looseleaf files (*{DATA_SUFFIX})")
        source = files[0]
    return arrow_to_spark_schema(
        projected_schema(open_file(source, **storage.open_kwargs()), options.columns)
    )


def _spark_string(schema: StructType) -> str:
    return ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in schema.fields)


class _FileChecker:
    """Checks that a file has the columns of the read with the declared types, and measures
    it. Cheap: only the projected columns' metadata is read."""

    def __init__(self, schema: StructType, columns: list[str]) -> None:
        self.expected = _spark_string(as_nullable(schema))
        self.columns = columns

    def __call__(self, reader: FileReader) -> FileInfo:
        found = _spark_string(arrow_to_spark_schema(projected_schema(reader, self.columns)))
        if found != self.expected:
            raise SchemaMismatchError(
                f"{reader.path}: the columns read have types ({found}), but the dataset's schema is "
                f"({self.expected}); the files of a dataset must agree on the types of the columns read"
            )
        return file_info(reader, self.columns)


def plan_read(options: ReadOptions, schema: StructType | None = None) -> ReadPlan:
    """Lists, opens and checks the files of a read and splits them into partitions."""
    schema = schema if schema is not None else dataset_schema(options)
    columns = options.columns or schema.fieldNames()
    files = list_files(options.paths, recursive=options.recursive, storage=options.storage)
    infos = open_files(files, _FileChecker(schema, columns), storage=options.storage)
    return ReadPlan(schema, options.columns, plan_partitions(infos, options.partitioning), infos)


class LooseleafReader(DataSourceReader):
    """Reads row ranges of looseleaf files as Arrow batches in the declared schema."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        # The looseleaf projection: the columns option (nested paths allowed), else the
        # declared (possibly user-given) schema's top-level columns.
        self.columns = options.columns or schema.fieldNames()
        self.filters = FilterPlan()
        # The engine's filter of each read (set by `partitions`, on the driver).
        self.filter: Any = None

    def partitions(self) -> list[InputPartition]:
        plan = plan_read(self.options, self.schema)
        partitions = plan.partitions
        self.filter = self.filters.expression(_float_columns(self.schema)) if self.filters else None
        if self.filter is not None:
            partitions = self._prune(partitions)
        # Spark expects at least one partition; an empty one reads nothing.
        return [LooseleafPartition(tuple(ranges)) for ranges in partitions] or [LooseleafPartition(())]

    def _prune(self, partitions: list[list[FileRange]]) -> list[list[FileRange]]:
        """Drops the ranges whose zone maps rule out every row of the filter (the engine's
        filtered-read plan, from metadata and zone maps only)."""
        readers: dict[str, FileReader] = {}
        kept = []
        for ranges in partitions:
            survivors = []
            for r in ranges:
                reader = readers.get(r.path)
                if reader is None:
                    reader = readers[r.path] = open_file(r.path, **self.options.storage.open_kwargs())
                try:
                    planned = reader.plan(self.columns, start=r.start, num_rows=r.count, filter=self.filter)
                except InvalidArgumentError:
                    # A filter the engine cannot evaluate on these columns: Spark does.
                    self.filter = None
                    return partitions
                if planned["filter"]["candidate_rows"] > 0:
                    survivors.append(r)
            if survivors:
                kept.append(survivors)
        return kept

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        # Exactly what PySpark checks the batches against.
        target = to_arrow_schema(self.schema, timezone="UTC")
        readers: dict[str, FileReader] = {}
        for r in getattr(partition, "ranges", None) or ():
            reader = readers.get(r.path)
            if reader is None:
                reader = readers[r.path] = open_file(
                    r.path, **self.options.storage.open_kwargs(), **self.options.engine
                )
            filter = getattr(self, "filter", None)
            for batch in reader.read_range(r.start, r.count, self.columns, filter=filter):
                yield cast_batch(batch, target, source=r.path)


def _float_columns(schema: StructType) -> set[tuple[str, ...]]:
    """Paths of the float and double columns (top level and inside structs)."""
    from pyspark.sql.types import DoubleType, FloatType

    out: set[tuple[str, ...]] = set()

    def visit(struct: StructType, prefix: tuple[str, ...]) -> None:
        for field in struct.fields:
            path = (*prefix, field.name)
            if isinstance(field.dataType, (FloatType, DoubleType)):
                out.add(path)
            elif isinstance(field.dataType, StructType):
                visit(field.dataType, path)

    visit(schema, ())
    return out


class LooseleafFilteringReader(LooseleafReader):
    """A reader that receives Spark's filters (Spark 4.1+ with
    ``spark.sql.python.filterPushdown.enabled``). It keeps them for page skipping and returns
    them all to Spark: see :mod:`._filters`. PySpark refuses to plan a read with a reader that
    overrides ``pushFilters`` while that configuration is off, hence a separate class."""

    def pushFilters(self, filters: list[Any]) -> list[Any]:
        return self.filters.push(filters)


@dataclass
class LooseleafCommitMessage(WriterCommitMessage):
    """What one write task did: the name of the file it wrote in the dataset's directory
    (``None`` if the task had no rows)."""

    name: str | None
    num_rows: int
    num_bytes: int


class LooseleafWriter(DataSourceArrowWriter):
    """Writes one ``.leaf`` file per task, made visible when the job commits: the steps of the
    core's write job (``looseleaf::dataset::WriteJob``, the JVM connector's too), see
    :mod:`._commits`."""

    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool) -> None:
        self.page_size = options.page_size
        self.compression = options.compression
        self.storage_kwargs = options.storage.open_kwargs()
        self.arrow_schema = spark_to_arrow_schema(schema)
        self.job = _looseleaf.WriteJob.begin(
            normalize(options.path), self.arrow_schema, overwrite, **self.storage_kwargs
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LooseleafCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        attempt = context.taskAttemptId() if context is not None else 0
        name = self.job.task_file(partition, attempt)
        writer: FileWriter | None = None
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    writer = self._file_writer(self.job.location_of(name))
                writer.write_batch(cast_batch(batch, self.arrow_schema))
            if writer is None:
                return LooseleafCommitMessage(None, 0, 0)
            result = writer.close()
        except BaseException:
            if writer is not None and not writer.closed:
                writer.abort()
            raise
        if not self.job.keep_task_file(name):
            return LooseleafCommitMessage(None, 0, 0)  # the job ended without this attempt
        return LooseleafCommitMessage(name, result["num_rows"], result["num_bytes"])

    def _file_writer(self, path: str) -> FileWriter:
        options: dict[str, Any] = {"page_size": self.page_size, **self.storage_kwargs}
        if self.compression is not None:
            options["compression"] = self.compression
        return FileWriter(path, self.arrow_schema, **options)

    def commit(self, messages: list[LooseleafCommitMessage | None]) -> None:
        self.job.commit([m.name for m in messages if m is not None and m.name is not None], self.arrow_schema)

    def abort(self, messages: list[LooseleafCommitMessage | None]) -> None:
        self.job.abort()


class LooseleafDataSource(DataSource):
    """``spark.read.format("looseleaf")`` and ``df.write.format("looseleaf")``.

    Options are described in ``docs/spark.md``. ``default_options`` holds the defaults that
    :func:`looseleaf.spark.register` sets for a session (options given to a read win)."""

    default_options: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        return NAME

    def _read_options(self) -> ReadOptions:
        return ReadOptions.parse(self.options, self.default_options)

    def schema(self) -> StructType:
        return dataset_schema(self._read_options())

    def reader(self, schema: StructType) -> DataSourceReader:
        return LooseleafReader(self._read_options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> LooseleafWriter:
        return LooseleafWriter(WriteOptions.parse(self.options, self.default_options), schema, overwrite)


class LooseleafFilteringDataSource(LooseleafDataSource):
    """The data source with a reader that takes Spark's filters (see
    :class:`LooseleafFilteringReader`); registered when filter pushdown is enabled."""

    def reader(self, schema: StructType) -> DataSourceReader:
        return LooseleafFilteringReader(self._read_options(), schema)
