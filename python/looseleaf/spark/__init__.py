"""looseleaf from PySpark: the ``looseleaf`` data sources (the JVM connector when the session is
configured with it, else the Python data source) and ``mapInArrow`` helpers.

>>> import looseleaf.spark  # doctest: +SKIP
>>> looseleaf.spark.register(spark)  # doctest: +SKIP
>>> df.write.format("looseleaf").mode("overwrite").save("/data/trades")  # doctest: +SKIP
>>> spark.read.format("looseleaf").option("columns", "id,meta.score").load("/data/trades")  # doctest: +SKIP

With :func:`configure` (the JVM connector the wheel carries, :func:`jar_path`), ``format("looseleaf")``
reads and writes in the JVM and :func:`register` adds the Python source as ``looseleaf-python``.
Needs PySpark 4.0 or later (its Python Data Source API); ``import looseleaf`` itself never
imports PySpark. See ``docs/spark.md`` for the options, partitioning, commit protocol, type
mapping and limitations.
"""

from __future__ import annotations

from typing import Any

try:
    import pyspark
    from pyspark.sql import datasource as _datasource_api
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"looseleaf.spark needs PySpark 4.0 or later (pip install 'pyspark>=4'): {e}") from e

if not hasattr(_datasource_api, "DataSourceArrowWriter"):  # pragma: no cover - PySpark 3.5
    raise ImportError(f"looseleaf.spark needs PySpark 4.0 or later, found {pyspark.__version__}")

from ._dataset import FileRange, PartitionOptions
from ._datasource import (
    NAME,
    LooseleafDataSource,
    LooseleafFilteringDataSource,
    LooseleafReader,
    LooseleafWriter,
    ReadPlan,
)
from ._datasource import plan_read as _plan_read
from ._filters import ColumnPredicate
from ._jvm import JVM_FORMAT, PYTHON_FORMAT, configure, jar_path, jvm_enabled, python_format
from ._map_in_arrow import (
    RANGE_SCHEMA,
    WRITE_RESULT_SCHEMA,
    list_ranges,
    read_ranges,
    schema_of,
    write_partitions,
)
from ._options import ReadOptions
from ._types import arrow_to_spark_schema, arrow_to_spark_type, cast_batch, spark_to_arrow_schema

#: Whether this PySpark can push filters to Python data sources (4.1+).
SUPPORTS_FILTER_PUSHDOWN = hasattr(_datasource_api, "Filter")

_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any, *, filter_pushdown: bool | None = None, **default_options: Any) -> type:
    """Registers the Python data source with a SparkSession and returns the class registered;
    its ``name()`` says which path ``format("looseleaf")`` takes: ``looseleaf`` when the Python
    source holds the name, ``looseleaf-python`` when the session has the JVM connector
    (:func:`configure`), which then answers to ``looseleaf``.

    ``default_options`` become the session's defaults for every read and write (options given
    to a read win): for example ``targetPartitionBytes="64m"``. Unless given, ``minPartitions``
    is the session's default parallelism, so that a small dataset still uses every core, as
    Spark's Parquet source does.

    ``filter_pushdown`` (default: the session's ``spark.sql.python.filterPushdown.enabled``,
    Spark 4.1+) registers a reader that receives Spark's filters. PySpark refuses to read with
    such a reader while that configuration is off, so register again after changing it."""
    if filter_pushdown is None:
        filter_pushdown = SUPPORTS_FILTER_PUSHDOWN and _conf_enabled(spark, _PUSHDOWN_CONF)
    if filter_pushdown and not SUPPORTS_FILTER_PUSHDOWN:
        raise RuntimeError(f"filter pushdown needs PySpark 4.1 or later, found {pyspark.__version__}")
    defaults = {str(k): str(v) for k, v in default_options.items()}
    if not any(k.lower() == "minpartitions" for k in defaults):
        parallelism = _default_parallelism(spark)
        if parallelism:
            defaults["minPartitions"] = str(parallelism)
    ReadOptions.parse({"path": "."}, defaults)  # fail now on a misspelt option
    base = LooseleafFilteringDataSource if filter_pushdown else LooseleafDataSource
    # A class of its own carries the defaults to the Python workers: cloudpickle sends a class
    # made at run time by value (its bases by reference), since no module holds it by name.
    name = python_format(spark)
    cls = type(
        base.__name__,
        (base,),
        {
            "default_options": defaults,
            "__module__": "looseleaf.spark._session",
            "name": classmethod(lambda _cls: name),
        },
    )
    spark.dataSource.register(cls)
    return cls


def _conf_enabled(spark: Any, key: str) -> bool:
    try:
        return str(spark.conf.get(key, "false")).strip().lower() == "true"
    except Exception:
        return False


def _default_parallelism(spark: Any) -> int | None:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return None


def plan_read(path: str, **options: Any) -> ReadPlan:
    """The plan of ``spark.read.format("looseleaf").options(**options).load(path)``, computed
    here without Spark: schema, ``columns`` projection, partitions of file row ranges, files."""
    return _plan_read(ReadOptions.parse({**{k: str(v) for k, v in options.items()}, "path": path}))


__all__ = [
    "JVM_FORMAT",
    "NAME",
    "PYTHON_FORMAT",
    "RANGE_SCHEMA",
    "SUPPORTS_FILTER_PUSHDOWN",
    "WRITE_RESULT_SCHEMA",
    "ColumnPredicate",
    "FileRange",
    "LooseleafDataSource",
    "LooseleafFilteringDataSource",
    "LooseleafReader",
    "LooseleafWriter",
    "PartitionOptions",
    "ReadPlan",
    "arrow_to_spark_schema",
    "arrow_to_spark_type",
    "cast_batch",
    "configure",
    "jar_path",
    "jvm_enabled",
    "list_ranges",
    "plan_read",
    "python_format",
    "read_ranges",
    "register",
    "schema_of",
    "spark_to_arrow_schema",
    "write_partitions",
]
