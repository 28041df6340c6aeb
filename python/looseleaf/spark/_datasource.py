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
from ..datasets import Dataset
from ..datasets import dataset as open_dataset
from ..exceptions import InvalidArgumentError, NotFoundError, SchemaMismatchError
from ..reader import FileReader
from ..reader import open as open_file
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
    """One Spark input partition: row ranges of one or more files, and the partition values of
    those files (by path; none without partition directories)."""

    def __init__(
        self, ranges: tuple[FileRange, ...], partition_values: dict[str, dict[str, Any]] | None = None
    ) -> None:
        super().__init__(ranges)
        self.ranges = ranges
        self.partition_values = partition_values or {}


@dataclass(frozen=True)
class ReadPlan:
    """What a read will do, computed as the data source computes it (without Spark): the Spark
    schema, the ``columns`` projection (``None``: every column), the partitions and the files."""

    schema: StructType
    columns: list[str] | None
    partitions: list[list[FileRange]]
    files: list[FileInfo]


def partitioned_dataset(options: ReadOptions) -> Dataset | None:
    """The core's dataset (``looseleaf.dataset``: the one discovery of files and ``key=value``
    partition columns, shared with the JVM connector) of a one-path read whose files are in
    partition directories; ``None`` for any other read."""
    if len(options.paths) != 1:
        return None
    try:
        found = open_dataset(normalize(options.paths[0]), storage_options=options.storage.options or None)
    except (InvalidArgumentError, NotFoundError) as e:
        if "partition" in str(e):
            raise  # directories that disagree, a partition column also in the files
        return None  # names no file: the read's own listing says so
    return found if len(found.partition_schema) else None


def _file_columns(columns: list[str] | None, partitions: Dataset | None) -> list[str] | None:
    """The ``columns`` option without partition columns (which the files do not hold)."""
    if columns is None or partitions is None:
        return columns
    names = set(partitions.partition_schema.names)
    return [c for c in columns if c.split(".")[0] not in names]


def dataset_schema(options: ReadOptions, partitions: Dataset | None = None) -> StructType:
    """The Spark schema of a dataset: from the writer's schema file of a directory, else from
    its first data file, narrowed to the ``columns`` option; then its partition columns."""
    storage = options.storage
    partitions = partitions if partitions is not None else partitioned_dataset(options)
    source = schema_file(options.paths, storage)
    if source is None:
        files = (
            partitions.files
            if partitions is not None
            else list_files(options.paths, recursive=options.recursive, storage=storage)
        )
        if not files:
            raise NotFoundError(f"{', '.join(options.paths)}: no looseleaf files (*{DATA_SUFFIX})")
        source = files[0]
    columns = _file_columns(options.columns, partitions)
    schema = arrow_to_spark_schema(projected_schema(open_file(source, **storage.open_kwargs()), columns))
    if partitions is not None:
        wanted = options.columns
        for field in arrow_to_spark_schema(partitions.partition_schema).fields:
            if wanted is None or field.name in wanted:
                schema = schema.add(field)
    return schema


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


def plan_read(
    options: ReadOptions, schema: StructType | None = None, partitions: Dataset | None = None
) -> ReadPlan:
    """Lists, opens and checks the files of a read and splits them into partitions (the files
    of ``partitions``, the read's partitioned dataset, if it has one)."""
    partitions = partitions if partitions is not None else partitioned_dataset(options)
    schema = schema if schema is not None else dataset_schema(options, partitions)
    names = set(partitions.partition_schema.names) if partitions is not None else set()
    file_schema = StructType([f for f in schema.fields if f.name not in names])
    columns = _file_columns(options.columns, partitions) or file_schema.fieldNames()
    if partitions is not None:
        files = partitions.files
    else:
        files = list_files(options.paths, recursive=options.recursive, storage=options.storage)
    infos = open_files(files, _FileChecker(file_schema, columns), storage=options.storage)
    return ReadPlan(schema, options.columns, plan_partitions(infos, options.partitioning), infos)


class LooseleafReader(DataSourceReader):
    """Reads row ranges of looseleaf files as Arrow batches in the declared schema."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        dataset = partitioned_dataset(options)
        #: Partition columns of the read (key=value directories), by name, with their Arrow types.
        self.partition_types: dict[str, pa.DataType] = (
            {f.name: f.type for f in dataset.partition_schema if f.name in schema.fieldNames()}
            if dataset is not None
            else {}
        )
        # The looseleaf projection: the columns option (nested paths allowed), else the
        # declared (possibly user-given) schema's top-level columns; never partition columns.
        columns = options.columns or schema.fieldNames()
        self.columns = [c for c in columns if c.split(".")[0] not in self.partition_types]
        self.filters = FilterPlan()
        # The engine's filter of each read (set by `partitions`, on the driver).
        self.filter: Any = None
        #: Each file's partition values (set by `partitions`, on the driver).
        self.partition_values: dict[str, dict[str, Any]] = {}
        #: The files a filter on partition columns ruled out (set by `partitions`).
        self.pruned_files: list[str] = []

    def partitions(self) -> list[InputPartition]:
        dataset = partitioned_dataset(self.options) if self.partition_types else None
        plan = plan_read(self.options, self.schema, dataset)
        partitions = plan.partitions
        if dataset is not None:
            table = dataset.file_partitions
            rows = table.to_pylist()
            # Keyed by the path each file's ranges name (the plan's files are the dataset's).
            self.partition_values = {
                info.path: {k: v for k, v in row.items() if k in self.partition_types}
                for info, row in zip(plan.files, rows, strict=True)
            }
            partitions = self._prune_files(dataset, plan, partitions)
        floats = _float_columns(self.schema)
        names = set(self.partition_types)
        self.filter = self.filters.expression(floats, without=names) if self.filters else None
        if self.filter is not None:
            partitions = self._prune(partitions)
        # Spark expects at least one partition; an empty one reads nothing. Each carries its
        # files' partition values: the reader's own state does not reach the tasks.
        values = self.partition_values
        return [
            LooseleafPartition(tuple(ranges), {r.path: values[r.path] for r in ranges if r.path in values})
            for ranges in partitions
        ] or [LooseleafPartition(())]

    def _prune_files(
        self, dataset: Dataset, plan: ReadPlan, partitions: list[list[FileRange]]
    ) -> list[list[FileRange]]:
        """Drops the files that Spark's filters on partition columns rule out, as the core's
        dataset read would (``Dataset.plan``: the filter folded with each file's values)."""
        names = set(dataset.partition_schema.names)
        expression = self.filters.expression(set(), within=names) if self.filters else None
        if expression is None:
            return partitions
        planned = dataset.plan([], filter=expression)
        self.pruned_files = [
            info.path for info, f in zip(plan.files, planned["files"], strict=True) if f["pruned"]
        ]
        pruned = set(self.pruned_files)
        kept = [[r for r in ranges if r.path not in pruned] for ranges in partitions]
        return [ranges for ranges in kept if ranges]

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
            values = getattr(partition, "partition_values", {}).get(r.path)
            for batch in reader.read_range(r.start, r.count, self.columns, filter=filter):
                if values is not None:
                    batch = with_partition_values(batch, values, self.partition_types)
                yield cast_batch(batch, target, source=r.path)


def with_partition_values(
    batch: pa.RecordBatch, values: dict[str, Any], types: dict[str, pa.DataType]
) -> pa.RecordBatch:
    """``batch`` with a file's partition values as constant columns (after its own)."""
    for name, data_type in types.items():
        value = values.get(name)
        rows = batch.num_rows
        column = pa.nulls(rows, data_type) if value is None else pa.array([value] * rows, data_type)
        batch = batch.append_column(pa.field(name, data_type), column)
    return batch


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
    """What one write task did: the files it wrote, as paths below the dataset's directory
    (one, or one per partition directory; none if the task had no rows)."""

    names: list[str]
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
            normalize(options.path),
            self.arrow_schema,
            overwrite,
            partition_by=options.partition_by,
            **self.storage_kwargs,
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LooseleafCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        attempt = context.taskAttemptId() if context is not None else 0
        # The core's task writer: one file, or one per partition directory (the job's columns).
        writer = self.job.task_writer(
            partition, attempt, self.arrow_schema, page_size=self.page_size, compression=self.compression
        )
        try:
            for batch in iterator:
                if batch.num_rows:
                    writer.write_batch(cast_batch(batch, self.arrow_schema))
            files = writer.finish()
        except BaseException:
            writer.abort()
            raise
        return LooseleafCommitMessage(
            [name for name, _, _ in files], sum(f[1] for f in files), sum(f[2] for f in files)
        )

    def commit(self, messages: list[LooseleafCommitMessage | None]) -> None:
        names = [name for m in messages if m is not None for name in m.names]
        self.job.commit(names, self.arrow_schema)

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
