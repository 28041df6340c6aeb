"""A real S3 endpoint on 127.0.0.1 for the tests and the benchmarks: moto in server mode, in a
process of its own, and an optional HTTP proxy in front of it that counts requests, adds a
first-byte latency, caps each response's bandwidth, and answers chosen requests with an error.

Nothing here imports looseleaf: the benchmarks use it for every system they compare.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key-do-not-print"
REGION = "us-east-1"

#: Headers that concern one hop, not the request (RFC 9110 §7.6.1), and those the proxy rewrites.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "expect",
    "content-length",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MotoServer:
    """moto's S3 in a child process, listening on 127.0.0.1."""

    port: int
    process: subprocess.Popen

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def storage_options(self, endpoint: str | None = None) -> dict[str, str]:
        """What looseleaf (and object_store) need to reach it."""
        return {
            "aws_endpoint": endpoint or self.endpoint,
            "aws_allow_http": "true",
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_region": REGION,
        }

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def client(self, endpoint: str | None = None):
        """A boto3 S3 client of the server (moto depends on boto3)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=endpoint or self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_moto(timeout: float = 60) -> MotoServer:
    """Starts moto's server on a free port and waits until it answers."""
    port = free_port()
    env = {**os.environ, "MOTO_CALL_RESET_API": "true"}
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    server = MotoServer(port, process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("moto's server exited at start (is moto[server] installed?)")
        try:
            with urllib.request.urlopen(f"{server.endpoint}/moto-api/", timeout=2):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"moto's server did not answer within {timeout} s")


@dataclass
class ProxyStats:
    """What went through a :class:`S3Proxy`."""

    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    """``(method, path, Range header)`` of every request, in arrival order."""
    arrivals: list[float] = field(default_factory=list)
    """``time.time()`` of each request's arrival."""
    bytes_sent: int = 0
    """Bytes of the response bodies sent."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, method: str | None = None) -> int:
        with self.lock:
            return sum(1 for m, _, _ in self.requests if method is None or m == method)

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self.arrivals.clear()
            self.bytes_sent = 0


@dataclass
class ProxySettings:
    """How a :class:`S3Proxy` degrades the connection."""

    #: Seconds before the first byte of every response, and a tail: with probability
    #: ``tail_probability`` the wait is ``tail_factor`` times longer.
    first_byte: float = 0.0
    tail_probability: float = 0.0
    tail_factor: float = 10.0
    #: Bytes per second of each response body (0: unlimited).
    bandwidth: float = 0.0
    #: Called with ``(method, path)``: an HTTP status to answer instead of forwarding, or None.
    fault: Callable[[str, str], int | None] | None = None
    #: Serve reads of objects (``GET``, ranged or not, and ``HEAD``) from a copy of each object
    #: fetched once. moto copies a whole object, under a lock, for every read of it: without
    #: this, a benchmark would measure that (a read's cost growing with the object's size, reads
    #: of one object serialised) rather than the reader. Objects must not change while cached.
    cache_objects: bool = False
    seed: int = 7


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops the connections of a reader opening dozens at once, whose
    # SYNs are then retried after a second: the benchmark would measure TCP's retransmission
    # timer.
    request_queue_size = 4096
    daemon_threads = True


class S3Proxy:
    """An HTTP proxy in front of an S3 endpoint (see the module documentation)."""

    def __init__(self, upstream_port: int, settings: ProxySettings | None = None) -> None:
        self.upstream_port = upstream_port
        self.settings = settings or ProxySettings()
        self.stats = ProxyStats()
        self._random = random.Random(self.settings.seed)
        self._random_lock = threading.Lock()
        self._objects: dict[str, tuple[bytes, list[tuple[str, str]]] | None] = {}
        self._objects_lock = threading.Lock()
        self._fetch_locks: dict[str, threading.Lock] = {}
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _delay(self) -> float:
        settings = self.settings
        if settings.first_byte <= 0:
            return 0.0
        with self._random_lock:
            tail = self._random.random() < settings.tail_probability
        return settings.first_byte * (settings.tail_factor if tail else 1.0)

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        with self.stats.lock:
            self.stats.requests.append((method, path, handler.headers.get("Range")))
            self.stats.arrivals.append(time.time())
        body = _request_body(handler)
        fault = self.settings.fault(method, path) if self.settings.fault else None
        if fault is not None:
            message = (
                b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            )
            handler.send_response(fault)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(message)))
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(message)
            return
        if self.settings.cache_objects and method in ("GET", "HEAD") and "?" not in path:
            cached = self._cached(path)
            if cached is not None:
                self._serve_cached(handler, method, *cached)
                return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        if body:
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            time.sleep(self._delay())
            handler.send_response(response.status, response.reason)
            length = response.getheader("Content-Length") if method == "HEAD" else str(len(data))
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP:
                    handler.send_header(key, value)
            handler.send_header("Content-Length", length or "0")
            handler.end_headers()
            if method != "HEAD":
                _write_throttled(handler, data, self.settings.bandwidth)
                with self.stats.lock:
                    self.stats.bytes_sent += len(data)
        finally:
            upstream.close()

    def _cached(self, path: str) -> tuple[bytes, list[tuple[str, str]]] | None:
        """The whole object at ``path`` and its headers, fetched once (``None`` if it is not an
        object: the request is then forwarded as it is). One object's fetch does not hold up
        requests for others."""
        with self._objects_lock:
            if path in self._objects:
                return self._objects[path]
            fetch_lock = self._fetch_locks.setdefault(path, threading.Lock())
        with fetch_lock:
            with self._objects_lock:
                if path in self._objects:
                    return self._objects[path]
            upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
            try:
                upstream.request("GET", path)
                response = upstream.getresponse()
                data = response.read()
                keep = ("content-type", "etag", "last-modified")
                headers = [(k, v) for k, v in response.getheaders() if k.lower() in keep]
            finally:
                upstream.close()
            # Only objects are cached; anything else (a missing key, a bucket) is forwarded as
            # it comes, every time, since it may change.
            cached = (data, headers) if response.status == 200 else None
            if cached is not None:
                with self._objects_lock:
                    self._objects[path] = cached
            return cached

    def _serve_cached(
        self, handler: BaseHTTPRequestHandler, method: str, data: bytes, headers: list[tuple[str, str]]
    ) -> None:
        """Answers a ``GET`` (whole, ``Range: bytes=a-b`` or ``bytes=-n``) or ``HEAD`` from
        ``data``."""
        spec = handler.headers.get("Range", "").removeprefix("bytes=")
        start, end = 0, len(data)
        if spec:
            first, _, last = spec.partition("-")
            if first == "":
                start = max(0, len(data) - int(last))
            else:
                start, end = int(first), min(len(data), int(last) + 1 if last else len(data))
        part = data[start:end]
        time.sleep(self._delay())
        handler.send_response(206 if spec else 200)
        for key, value in headers:
            handler.send_header(key, value)
        if spec:
            handler.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        handler.send_header("Content-Length", str(len(part)))
        handler.end_headers()
        if method == "GET":
            _write_throttled(handler, part, self.settings.bandwidth)
            with self.stats.lock:
                self.stats.bytes_sent += len(part)


def _request_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request's body, de-chunked (clients may send ``Transfer-Encoding: chunked``)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                break
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(chunks)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


def _write_throttled(handler: BaseHTTPRequestHandler, data: bytes, bandwidth: float) -> None:
    if bandwidth <= 0:
        handler.wfile.write(data)
        return
    chunk = 256 * 1024
    started = time.monotonic()
    for offset in range(0, len(data), chunk):
        handler.wfile.write(data[offset : offset + chunk])
        ahead = (offset + chunk) / bandwidth - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)


@contextlib.contextmanager
def proxy(server: MotoServer, settings: ProxySettings | None = None) -> Iterator[S3Proxy]:
    """A proxy in front of ``server`` for the duration of a ``with`` block."""
    p = S3Proxy(server.port, settings)
    try:
        yield p
    finally:
        p.close()
