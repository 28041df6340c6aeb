"""Where this installation's JVM Spark connector is: ``looseleaf-spark.jar``, which the wheel
carries when it was built where a JDK is installed (``packaging/looseleaf_build.py``). A module of
its own, outside :mod:`looseleaf.spark`, so that finding the jar (``looseleaf spark-jar``) does
not import PySpark."""

from __future__ import annotations

from pathlib import Path

JAR_NAME = "looseleaf-spark.jar"
_WHEEL_JAR = Path(__file__).resolve().parent / "jars" / JAR_NAME


def jar_path() -> Path:
    """The path of the connector's jar in this installation, for ``spark-submit --jars``,
    ``spark.jars`` in ``spark-defaults.conf`` or a cluster manager's list of jars.

    Raises ``FileNotFoundError`` saying how to get it when the wheel was built without it (no
    ``javac`` where it was built)."""
    if _WHEEL_JAR.is_file():
        return _WHEEL_JAR
    raise FileNotFoundError(
        f"this looseleaf installation has no JVM connector ({_WHEEL_JAR} is missing): the wheel was "
        "built where javac was not found. Install a JDK 17 or 21 (e.g. apt-get install "
        "openjdk-17-jdk-headless) and reinstall looseleaf from source (pip install . in a checkout); "
        'or use the Python data source, format("looseleaf-python"), which needs no JVM part'
    )
