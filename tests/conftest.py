from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("LOOSELEAF_HYPOTHESIS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
settings.load_profile("ci")


def _java_problem() -> str | None:
    java = (
        shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin"))
        if "JAVA_HOME" in os.environ
        else None
    )
    java = java or shutil.which("java")
    if java is None:
        return "Java is not installed (no java on PATH or in JAVA_HOME): the Spark tests need a JVM"
    try:
        subprocess.run([java, "-version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{java} -version failed: {e}"
    return None


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One SparkSession (``local[2]``) for every Spark test, with the JVM connector when it builds."""
    problem = _java_problem()
    if problem is not None:
        print(f"skipping the Spark tests: {problem}", file=sys.stderr)
        pytest.skip(problem)
    from pyspark.sql import SparkSession

    import looseleaf.spark as ls

    env = {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("looseleaf-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )
    jar, problem = _jvm_connector(tmp_path_factory)
    if jar is not None:
        builder = ls.configure(builder, jar)
    else:
        print(f"the JVM connector tests will skip: {problem}", file=sys.stderr)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    ls.register(session)
    yield session
    session.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _jvm_connector(tmp_path_factory) -> tuple[Path | None, str | None]:
    """The connector's jar the tests use: the installed wheel's (what users get), else, in a
    development install without one, a debug build from this checkout; or why there is none
    (no ``javac``: the only reason to skip, never a failed build)."""
    from looseleaf._connector import jar_path

    try:
        return jar_path(), None
    except FileNotFoundError:
        pass
    missing = [tool for tool in ("cargo", "javac", "jar") if shutil.which(tool) is None]
    if missing:
        return None, f"{', '.join(missing)} not found"
    directory = tmp_path_factory.mktemp("jvm")
    script = Path(__file__).resolve().parent.parent / "scripts" / "build_jvm.sh"
    result = subprocess.run([str(script), "--debug", str(directory)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"scripts/build_jvm.sh failed:\n{result.stdout}\n{result.stderr}")
    return directory / "looseleaf-spark.jar", None
