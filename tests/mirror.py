"""A web server on 127.0.0.1 standing in for the official download sites: ``/HOST/PATH`` serves the file the test
put at ``root/HOST/PATH`` (``$CONSERT_TEST_MIRROR`` points the harness at it), answers HTTP ``Range`` requests as a
real server does (206 with ``Content-Range``, 416 past the end), logs every request, and can break off a file's next
response after a given number of bytes, as a dropped connection does."""

from __future__ import annotations

import contextlib
import re
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

    def path_of(self, official_url: str) -> str:
        """The server path an official URL is served at."""
        parts = urlsplit(official_url)
        return f"/{parts.netloc}{parts.path}"

    def put(self, official_url: str, data: bytes) -> Path:
        """Serve ``data`` for ``official_url``."""
        target = self.root / self.path_of(official_url).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return target

    def cut_next(self, official_url: str, after: int) -> None:
        """Break off the next response for ``official_url`` after ``after`` bytes of its body."""
        self.cuts[self.path_of(official_url)] = after

    def fetched(self, official_url: str) -> list[int]:
        """The first byte of every request made for ``official_url``."""
        return [start for path, start in self.requests if path == self.path_of(official_url)]


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
            asked = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
            start = int(asked.group(1)) if asked else 0
            mirror.requests.append((self.path, start))
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
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            cut = mirror.cuts.pop(self.path, None)
            self.wfile.write(body if cut is None else body[:cut])
            if cut is not None:
                self.wfile.flush()
                self.close_connection = True

        def root_path(self) -> Path:
            return mirror.root / self.path.lstrip("/")

    return Handler


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Mirror]:
    """A :class:`Mirror` of ``root`` on a free port of 127.0.0.1, for the block's duration."""
    mirror = Mirror(root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mirror))
    mirror.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield mirror
    finally:
        server.shutdown()
        server.server_close()
