"""A web server on 127.0.0.1 standing in for the official download sites: ``/HOST/PATH`` serves the file the test
put at ``root/HOST/PATH`` (``$CONSERT_TEST_MIRROR`` points the harness at it), answers HTTP ``Range`` requests as a
real server does (206 with ``Content-Range``, 416 past the end), with the file's validators (a strong ``ETag`` of
its content, and a ``Last-Modified`` that moves on with each version put) and ``If-Range`` (the range only while the
validator sent is the file's, else the whole file, 200), logs every request, and can break off a file's next
response after a given number of bytes, as a dropped connection does; send a file without ``Content-Length`` (the
body ends when the connection closes); and replace a file once its next response was sent (it changed between two
tries of a download)."""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


@dataclass
class Mirror:
    """The served folder, the requests seen (``(path, first byte asked for)``) and the responses to break off."""

    root: Path
    url: str = ""
    requests: list[tuple[str, int]] = field(default_factory=list)
    cuts: dict[str, int] = field(default_factory=dict)  # path -> bytes its next response sends before closing
    unannounced: set[str] = field(default_factory=set)  # paths served without Content-Length
    validators: set[str] = field(default_factory=lambda: {"ETag", "Last-Modified"})  # the headers a response sends
    changes: dict[str, bytes] = field(default_factory=dict)  # path -> what the file becomes after its next response
    if_ranges: list[tuple[str, str]] = field(default_factory=list)  # (path, its If-Range or "") of every request
    versions: dict[str, int] = field(default_factory=dict)  # path -> how many times it was put

    def path_of(self, official_url: str) -> str:
        """The server path an official URL is served at."""
        parts = urlsplit(official_url)
        return f"/{parts.netloc}{parts.path}"

    def put(self, official_url: str, data: bytes) -> Path:
        """Serve ``data`` for ``official_url``."""
        path = self.path_of(official_url)
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.versions[path] = self.versions.get(path, 0) + 1
        return target

    def last_modified(self, path: str) -> str:
        """The Last-Modified of a path's current version: a day later for each version put."""
        return email.utils.formatdate(1_700_000_000 + 86_400 * self.versions.get(path, 1), usegmt=True)

    def send_without_length(self, official_url: str) -> None:
        """Serve ``official_url`` with no Content-Length: the body ends when the connection closes."""
        self.unannounced.add(self.path_of(official_url))

    def change_after_next(self, official_url: str, data: bytes) -> None:
        """Replace the file of ``official_url`` by ``data`` once its next response has been sent."""
        self.changes[self.path_of(official_url)] = data

    def cut_next(self, official_url: str, after: int) -> None:
        """Break off the next response for ``official_url`` after ``after`` bytes of its body."""
        self.cuts[self.path_of(official_url)] = after

    def fetched(self, official_url: str) -> list[int]:
        """The first byte of every request made for ``official_url``."""
        return [start for path, start in self.requests if path == self.path_of(official_url)]

    def if_range_sent(self, official_url: str) -> list[str]:
        """The If-Range of every request made for ``official_url`` ("" where none was sent)."""
        return [value for path, value in self.if_ranges if path == self.path_of(official_url)]


class LocalServer(ThreadingHTTPServer):
    """A threading server on 127.0.0.1 that takes a client hanging up mid-response as a real site does: silently.
    (socketserver prints the traceback to stderr, where it lands among the output the test reads; a download that
    refuses a file after its first bytes closes the connection while the body is still being sent.)"""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exception(), ConnectionError):
            super().handle_error(request, client_address)


def _handler(mirror: Mirror) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet: the test reads mirror.requests
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.root_path()
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
            etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
            modified = mirror.last_modified(self.path)
            asked = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
            if_range = self.headers.get("If-Range", "")
            mirror.if_ranges.append((self.path, if_range))
            mirror.requests.append((self.path, int(asked.group(1)) if asked else 0))
            if asked and if_range and if_range not in (etag, modified):  # RFC 9110: the file changed, send it whole
                asked = None
            start = int(asked.group(1)) if asked else 0
            if start >= len(data) and asked:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = data[start:]
            self.send_response(206 if asked else 200)
            if asked:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            if self.path not in mirror.unannounced:
                self.send_header("Content-Length", str(len(body)))
            for name, value in (("ETag", etag), ("Last-Modified", modified)):
                if name in mirror.validators:
                    self.send_header(name, value)
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            cut = mirror.cuts.pop(self.path, None)
            self.wfile.write(body if cut is None else body[:cut])
            self.wfile.flush()
            if cut is not None or self.path in mirror.unannounced:
                self.close_connection = True
            if self.path in mirror.changes:
                mirror.put(f"http://{self.path.lstrip('/')}", mirror.changes.pop(self.path))

        def root_path(self) -> Path:
            return mirror.root / self.path.lstrip("/")

    return Handler


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Mirror]:
    """A :class:`Mirror` of ``root`` on a free port of 127.0.0.1, for the block's duration."""
    mirror = Mirror(root)
    server = LocalServer(("127.0.0.1", 0), _handler(mirror))
    mirror.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield mirror
    finally:
        server.shutdown()
        server.server_close()
