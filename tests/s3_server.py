"""A real S3 endpoint on 127.0.0.1 for the tests and the benchmarks: moto in server mode, in a
process of its own, and an optional HTTP proxy in front of it that counts requests, adds a
first-byte latency, caps each response's bandwidth, and injects faults.

Faults (:class:`Fault`, chosen per request by ``ProxySettings.fault``, by hand or by a seeded
:class:`FaultSchedule`) are what a store and the network between do to a client: error answers
(500 ``InternalError``, 503 ``SlowDown``, any status and body), connections reset in the middle of
a body, bodies shorter than their ``Content-Length``, and stalls longer than a client's timeout;
a schedule adds bursts of them and throttling that lasts. The proxy counts what it injected.

Nothing here imports looseleaf: the benchmarks use it for every system they compare.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import parse_qs, urlsplit

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


@dataclass(frozen=True)
class Fault:
    """What the proxy does to one request instead of answering it plainly.

    Build one with :meth:`error`, :meth:`slow_down`, :meth:`reset`, :meth:`short` or
    :meth:`stall`. An error answer never reaches the store (as a store that failed before doing
    anything); a reset or a short body comes after the store has done the request (its answer
    is lost on the way back: a write may have happened that the client never hears of); a stall
    before any answer never reaches the store, one in the middle of a body does.

    An answer without a body (``HEAD``, most answers to writes) has nothing to cut: a reset or
    a short body then ends the connection before the status line.
    """

    kind: Literal["error", "reset", "short", "stall"]
    #: Counted under this name in :attr:`ProxyStats.injected`.
    name: str
    #: An error's status and body.
    status: int = 0
    body: bytes = b""
    #: The part of the body sent before a reset, the end of a short body or a stall (``None``:
    #: a stall before the request is forwarded).
    fraction: float | None = None
    #: How long a stall lasts (the connection is then closed without more).
    seconds: float = 0.0

    @classmethod
    def error(
        cls,
        status: int = 500,
        code: str = "InternalError",
        message: str = "We encountered an internal error. Please try again.",
        *,
        body: bytes | None = None,
    ) -> Fault:
        """An S3 error answer: ``status`` with an ``<Error>`` document of ``code`` and
        ``message``, or with ``body`` as it is."""
        if body is None:
            body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
        return cls("error", code, status=status, body=body)

    @classmethod
    def slow_down(cls) -> Fault:
        """S3's throttling answer: 503 ``SlowDown``."""
        return cls.error(503, "SlowDown", "Please reduce your request rate.")

    @classmethod
    def reset(cls, fraction: float = 0.5) -> Fault:
        """The store's answer, its headers and ``fraction`` of its body sent, then the connection
        reset (RST: ``SO_LINGER`` 0)."""
        return cls("reset", "reset", fraction=fraction)

    @classmethod
    def short(cls, fraction: float = 0.5) -> Fault:
        """The store's answer with its full ``Content-Length`` but ``fraction`` of its body, then
        the connection closed."""
        return cls("short", "short", fraction=fraction)

    @classmethod
    def stall(cls, seconds: float, fraction: float | None = None) -> Fault:
        """Nothing for ``seconds`` (make it longer than the client's timeout), then the
        connection closed: before the request reaches the store, or, with ``fraction``, after
        the headers and that part of the store's answer."""
        return cls("stall", "stall", fraction=fraction, seconds=seconds)


#: What ``ProxySettings.fault`` answers: a :class:`Fault`, an HTTP status (answered with a
#: ``SlowDown`` document, as a :meth:`Fault.error`), or ``None`` to forward the request.
FaultAnswer = Fault | int | None

#: The kinds of fault a :class:`FaultSchedule` draws, by name.
FAULT_KINDS = ("internal_error", "slow_down", "reset", "short", "stall")


def request_kind(method: str, path: str) -> str:
    """What an S3 request does, from its method and path: ``create_upload``, ``upload_part``,
    ``complete_upload``, ``abort_upload``, ``list``, ``delete_objects``, ``get``, ``head``,
    ``put``, ``delete`` (or ``other``)."""
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    if method == "POST":
        if "uploads" in query:
            return "create_upload"
        if "uploadId" in query:
            return "complete_upload"
        if "delete" in query:
            return "delete_objects"
        return "other"
    if method == "PUT":
        return "upload_part" if "partNumber" in query else "put"
    if method == "DELETE":
        return "abort_upload" if "uploadId" in query else "delete"
    if method == "GET":
        return "list" if "list-type" in query or "prefix" in query else "get"
    return "head" if method == "HEAD" else "other"


@dataclass
class FaultSchedule:
    """Seeded random faults, for ``ProxySettings.fault``: each request that ``applies`` to is
    given the fault of a kind with that kind's probability (``probabilities``, by the names of
    :data:`FAULT_KINDS`); a fault starts a burst (the next ``0`` to ``burst - 1`` requests that
    apply get one of the same kind); with ``throttle_probability`` a request starts throttling
    that lasts ``throttle_seconds``, during which every request that applies is answered
    ``SlowDown``. Thread safe: the proxy calls it from a thread per connection.
    """

    probabilities: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0
    burst: int = 1
    throttle_probability: float = 0.0
    throttle_seconds: float = 0.0
    #: How long stalls last (longer than the client's timeout, so that they cost it one), and
    #: the chance that a stall comes in the middle of a body rather than before the request
    #: reaches the store.
    stall_seconds: float = 5.0
    stall_in_body: float = 0.5
    #: Which requests may fail, by ``(method, path)`` (default: every one).
    applies: Callable[[str, str], bool] | None = None
    #: Faults injected at most (lasting throttling aside; ``None``: no limit).
    limit: int | None = None
    #: While false, nothing is injected (a soak checks its results with the faults off).
    enabled: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.probabilities) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; the kinds are {FAULT_KINDS}")
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._burst_left = 0
        self._burst_kind = ""
        self._throttled_until = 0.0
        self._injected = 0

    def throttle(self, seconds: float) -> None:
        """Starts throttling that lasts ``seconds`` from now."""
        with self._lock:
            self._throttled_until = max(self._throttled_until, time.monotonic() + seconds)

    def __call__(self, method: str, path: str) -> Fault | None:
        if not self.enabled or (self.applies is not None and not self.applies(method, path)):
            return None
        with self._lock:
            now = time.monotonic()
            if self.throttle_probability and self._random.random() < self.throttle_probability:
                self._throttled_until = max(self._throttled_until, now + self.throttle_seconds)
            if now < self._throttled_until:
                return Fault.slow_down()
            if self.limit is not None and self._injected >= self.limit:
                return None
            if self._burst_left > 0:
                self._burst_left -= 1
                return self._fault(self._burst_kind)
            draw = self._random.random()
            for kind in FAULT_KINDS:
                draw -= self.probabilities.get(kind, 0.0)
                if draw < 0:
                    self._burst_left = self._random.randrange(self.burst) if self.burst > 1 else 0
                    self._burst_kind = kind
                    return self._fault(kind)
        return None

    def _fault(self, kind: str) -> Fault:
        """A fault of ``kind``, its cut drawn (the caller holds the lock)."""
        self._injected += 1
        if kind == "internal_error":
            return Fault.error()
        if kind == "slow_down":
            return Fault.slow_down()
        fraction = self._random.random()
        if kind == "reset":
            return Fault.reset(fraction)
        if kind == "short":
            return Fault.short(fraction)
        in_body = self._random.random() < self.stall_in_body
        return Fault.stall(self.stall_seconds, fraction if in_body else None)


@dataclass
class ProxyEvent:
    """One request through a :class:`S3Proxy` and what became of it."""

    #: ``time.monotonic()`` at its arrival.
    arrival: float
    method: str
    path: str
    #: The :attr:`Fault.name` injected, or ``None``.
    fault: str | None = None
    #: The store's status, if the request reached it (an injected error or a stall before the
    #: request is forwarded never does).
    store_status: int | None = None


@dataclass
class ProxyStats:
    """What went through a :class:`S3Proxy`."""

    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    """``(method, path, Range header)`` of every request, in arrival order."""
    arrivals: list[float] = field(default_factory=list)
    """``time.time()`` of each request's arrival."""
    bytes_sent: int = 0
    """Bytes of the response bodies sent."""
    injected: Counter[str] = field(default_factory=Counter)
    """Faults injected, by :attr:`Fault.name`."""
    events: list[ProxyEvent] = field(default_factory=list)
    """Every request with what the proxy did to it, in arrival order (for a soak to show what
    happened around a failure)."""
    orphaned_uploads: set[str] = field(default_factory=set)
    """Ids of multipart uploads the store created but whose answer a fault lost: the client
    never learnt them, so cannot abort them (on S3, a bucket's lifecycle rule removes such
    uploads)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, method: str | None = None) -> int:
        with self.lock:
            return sum(1 for m, _, _ in self.requests if method is None or m == method)

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self.arrivals.clear()
            self.bytes_sent = 0
            self.injected.clear()
            self.events.clear()


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
    #: Called with ``(method, path)`` of each request: the fault to inject (:data:`FaultAnswer`),
    #: or None to forward it. A :class:`FaultSchedule` is one.
    fault: Callable[[str, str], FaultAnswer] | None = None
    #: Serve reads of objects (``GET``, ranged or not, and ``HEAD``) from a copy of each object
    #: fetched once. moto copies a whole object, under a lock, for every read of it: without
    #: this, a benchmark would measure that (a read's cost growing with the object's size, reads
    #: of one object serialised) rather than the reader. Objects must not change while cached.
    cache_objects: bool = False
    seed: int = 7


@dataclass
class _Answer:
    """A response to send: the store's, or one made from a cached object."""

    status: int
    reason: str | None
    headers: list[tuple[str, str]]
    body: bytes
    #: The ``Content-Length`` to announce (a ``HEAD`` answer announces its object's).
    length: str


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops the connections of a reader opening dozens at once, whose
    # SYNs are then retried after a second: the benchmark would measure TCP's retransmission
    # timer.
    request_queue_size = 4096
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that gave up (its timeout, a reset it was sent) is no error of the proxy's.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


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
        # Set by close(): stalls end at once, so closing does not wait for them.
        self._closing = threading.Event()
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
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()

    def _delay(self) -> float:
        settings = self.settings
        if settings.first_byte <= 0:
            return 0.0
        with self._random_lock:
            tail = self._random.random() < settings.tail_probability
        return settings.first_byte * (settings.tail_factor if tail else 1.0)

    def _fault(self, method: str, path: str) -> Fault | None:
        """The fault chosen for this request, counted."""
        chosen = self.settings.fault(method, path) if self.settings.fault else None
        if chosen is None:
            return None
        if not isinstance(chosen, Fault):
            chosen = Fault.error(chosen, "SlowDown", "Please reduce your request rate.")
        with self.stats.lock:
            self.stats.injected[chosen.name] += 1
        return chosen

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        with self.stats.lock:
            self.stats.requests.append((method, path, handler.headers.get("Range")))
            self.stats.arrivals.append(time.time())
        body = _request_body(handler)
        fault = self._fault(method, path)
        event = ProxyEvent(time.monotonic(), method, path, fault.name if fault else None)
        with self.stats.lock:
            self.stats.events.append(event)
        if fault is not None and fault.kind == "error":
            handler.send_response(fault.status)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(fault.body)))
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(fault.body)
            return
        if fault is not None and fault.kind == "stall" and fault.fraction is None:
            self._closing.wait(fault.seconds)
            handler.close_connection = True
            return
        answer = None
        if self.settings.cache_objects and method in ("GET", "HEAD") and "?" not in path:
            cached = self._cached(path)
            if cached is not None:
                answer = _cached_answer(handler, *cached)
        if answer is None:
            answer = self._forward(handler, method, path, body)
        event.store_status = answer.status
        time.sleep(self._delay())
        if fault is None:
            self._send(handler, method, answer, len(answer.body))
            return
        if request_kind(method, path) == "create_upload":
            lost = re.search(rb"<UploadId>([^<]+)</UploadId>", answer.body)
            if lost:
                with self.stats.lock:
                    self.stats.orphaned_uploads.add(lost.group(1).decode())
        sent = int(len(answer.body) * (fault.fraction or 0.0))
        if method == "HEAD" or not answer.body:
            # Nothing to cut: the connection ends before the status line.
            if fault.kind == "stall":
                self._closing.wait(fault.seconds)
            _end_connection(handler, reset=fault.kind == "reset")
            return
        self._send(handler, method, answer, sent)
        if fault.kind == "stall":
            self._closing.wait(fault.seconds)
        _end_connection(handler, reset=fault.kind == "reset")

    def _forward(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: bytes) -> _Answer:
        """The store's answer to the request."""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        if body:
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            length = response.getheader("Content-Length") if method == "HEAD" else str(len(data))
            return _Answer(response.status, response.reason, kept, data, length or "0")
        finally:
            upstream.close()

    def _send(self, handler: BaseHTTPRequestHandler, method: str, answer: _Answer, body_bytes: int) -> None:
        """Sends ``answer``'s status line and headers, and the first ``body_bytes`` of its body."""
        handler.send_response(answer.status, answer.reason)
        for key, value in answer.headers:
            handler.send_header(key, value)
        handler.send_header("Content-Length", answer.length)
        handler.end_headers()
        if method != "HEAD":
            part = answer.body[:body_bytes]
            _write_throttled(handler, part, self.settings.bandwidth)
            with self.stats.lock:
                self.stats.bytes_sent += len(part)

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


def _cached_answer(handler: BaseHTTPRequestHandler, data: bytes, headers: list[tuple[str, str]]) -> _Answer:
    """The answer to a ``GET`` (whole, ``Range: bytes=a-b`` or ``bytes=-n``) or ``HEAD`` from a
    cached object's ``data``."""
    spec = handler.headers.get("Range", "").removeprefix("bytes=")
    start, end = 0, len(data)
    if spec:
        first, _, last = spec.partition("-")
        if first == "":
            start = max(0, len(data) - int(last))
        else:
            start, end = int(first), min(len(data), int(last) + 1 if last else len(data))
    part = data[start:end]
    headers = list(headers)
    if spec:
        headers.append(("Content-Range", f"bytes {start}-{end - 1}/{len(data)}"))
    return _Answer(206 if spec else 200, None, headers, part, str(len(part)))


def _end_connection(handler: BaseHTTPRequestHandler, *, reset: bool) -> None:
    """Ends the request's connection after what was sent: closed (FIN), or reset (RST)."""
    handler.close_connection = True
    if not reset:
        return  # the server shuts the connection down once the handler returns
    connection = handler.connection
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # Closing the descriptor itself: the handler's files still refer to the socket, whose
        # own close would wait for them; and a shutdown first would send a FIN, not a reset.
        os.close(connection.detach())


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
