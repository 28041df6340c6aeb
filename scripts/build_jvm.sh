#!/usr/bin/env bash
# Builds the JVM Spark connector: the JNI library (rust/looseleaf-jni) and the jar (jvm/),
# compiled with javac against the jars of the installed pyspark (no Java registry needed).
#
#   scripts/build_jvm.sh [--debug] [OUT_DIR]   # default: $LOOSELEAF_JVM_DIR or ~/.cache/looseleaf/jvm
#
# Writes OUT_DIR/looseleaf-spark.jar and OUT_DIR/liblooseleaf_jni.so; a session uses them
# through looseleaf.spark.configure(builder, OUT_DIR) (OUT_DIR may be left out if default).
set -euo pipefail

profile=release
if [ "${1:-}" = "--debug" ]; then
    profile=debug
    shift
fi
out="${1:-${LOOSELEAF_JVM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/looseleaf/jvm}}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."

if [ "$profile" = release ]; then
    cargo build --locked --release -p looseleaf-jni
else
    cargo build --locked -p looseleaf-jni
fi
cp "${CARGO_TARGET_DIR:-target}/$profile/liblooseleaf_jni.so" "$out/liblooseleaf_jni.so"

jars="$(python3 -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
classes="$(mktemp -d)"
trap 'rm -rf "$classes"' EXIT
javac -nowarn --release 17 -d "$classes" -cp "$jars/*" $(find jvm/src/main/java -name '*.java')
cp -r jvm/src/main/resources/. "$classes/"
jar --create --file "$out/looseleaf-spark.jar" -C "$classes" .
echo "$out/looseleaf-spark.jar $out/liblooseleaf_jni.so"
