"""Secrets never shown: credentials from the storage options or the environment, and query
strings of URLs (SAS tokens, presigned signatures), are scrubbed out of every error — of reads
and of writes — even when the store's answer echoes them; and a process whose environment's
credentials change builds its store again instead of using the old ones for ever.

The store here is a server that refuses every request (403) with a body echoing what it was
sent — the request line and every header, as a misconfigured proxy or a verbose gateway does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pytest

import looseleaf

ACCESS_KEY = "AKIAECHOTESTKEY00001"
SECRET = "echo-secret-access-key-never-shown"
TOKEN = "echo-session-token-never-shown-0123456789"
SIGNATURE = "presigned-signature-never-shown"


class EchoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.access_keys: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _refuse(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                authorization = self.headers.get("Authorization", "")
                if "Credential=" in authorization:
                    server.access_keys.append(authorization.split("Credential=")[1].split("/")[0])
                headers = " ".join(f"{k}: {v}" for k, v in self.headers.items())
                echoed = f"{self.command} {self.path} {headers}"
                body = f"<Error><Code>AccessDenied</Code><Message>{echoed}</Message></Error>".encode()
                self.send_response(403)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _refuse

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _options(echo: EchoServer) -> dict[str, str]:
    return {
        "aws_endpoint": echo.endpoint,
        "aws_allow_http": "true",
        "aws_region": "us-east-1",
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET,
        "aws_session_token": TOKEN,
    }


def _assert_scrubbed(error: BaseException) -> None:
    shown = f"{error!s} {error!r}"
    for secret in (ACCESS_KEY, SECRET, TOKEN, SIGNATURE):
        assert secret not in shown, f"{secret} shown in {shown}"


TABLE = pa.table({"x": pa.array(range(1_000), pa.int64())})


def test_read_and_write_errors_are_scrubbed_of_the_options_credentials(echo):
    options = _options(echo)
    path = "s3://bucket/echo.leaf"
    attempts = [
        lambda: looseleaf.open(path, storage_options=options),
        lambda: looseleaf.write_table(TABLE, path, storage_options=options),
        lambda: looseleaf.write_dataset(TABLE, "s3://bucket/echo-ds", storage_options=options),
        lambda: looseleaf.dataset("s3://bucket/echo-ds", storage_options=options),
    ]
    for attempt in attempts:
        with pytest.raises(looseleaf.LooseleafError) as raised:
            attempt()
        _assert_scrubbed(raised.value)
        assert "s3://bucket/echo" in str(raised.value), raised.value
        assert "<redacted>" in str(raised.value), "the echo was there, scrubbed"
    # The error comes when the upload starts, at a write or at the close: any of them.
    with (
        pytest.raises(looseleaf.LooseleafError) as raised,
        looseleaf.FileWriter(path, TABLE.schema, storage_options=options) as writer,
    ):
        writer.write(TABLE)
    _assert_scrubbed(raised.value)


_FROM_ENVIRONMENT = textwrap.dedent(
    """
    import os, sys
    import pyarrow as pa
    import looseleaf

    endpoint = sys.argv[1]
    options = {"aws_endpoint": endpoint, "aws_allow_http": "true", "aws_region": "us-east-1"}
    table = pa.table({"x": [1, 2, 3]})
    for attempt in (
        lambda: looseleaf.open("s3://bucket/env.leaf", storage_options=options),
        lambda: looseleaf.write_table(table, "s3://bucket/env.leaf", storage_options=options),
    ):
        try:
            attempt()
        except looseleaf.LooseleafError as e:
            print(repr(e))
    # New credentials in the environment: the next store is built with them.
    os.environ["AWS_ACCESS_KEY_ID"] = "AKIAROTATEDKEY000002"
    try:
        looseleaf.open("s3://bucket/env.leaf", storage_options=options)
    except looseleaf.LooseleafError as e:
        print(repr(e))
    """
)


def test_credentials_from_the_environment_are_scrubbed_and_rotate(echo):
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": TOKEN,
    }
    echo.access_keys.clear()
    done = subprocess.run(
        [sys.executable, "-c", _FROM_ENVIRONMENT, echo.endpoint],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert shown.count("PermissionDeniedError") >= 3, shown
    assert "<redacted>" in shown, shown
    for secret in (ACCESS_KEY, SECRET, TOKEN):
        assert secret not in shown, f"{secret} shown in {shown}"
    assert echo.access_keys[0] == ACCESS_KEY
    assert echo.access_keys[-1] == "AKIAROTATEDKEY000002", "the store was built again with the new key"


def test_query_strings_of_locations_are_never_shown(echo):
    signed = f"{echo.endpoint}/bucket/x.leaf?X-Amz-Signature={SIGNATURE}&X-Amz-Credential={ACCESS_KEY}"
    bad = [
        signed,
        f"ftp://host/x.leaf?sig={SIGNATURE}",
        f"s3://[bad/x.leaf?X-Amz-Signature={SIGNATURE}",
        f"https://host?sig={SIGNATURE}",
    ]
    attempts = (
        looseleaf.open,
        looseleaf.dataset,
        lambda location: looseleaf.write_table(TABLE, location),
    )
    for location in bad:
        for attempt in attempts:
            with pytest.raises(looseleaf.LooseleafError) as raised:
                attempt(location)
            _assert_scrubbed(raised.value)
