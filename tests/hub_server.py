"""A Hugging Face hub on 127.0.0.1: a model folder served in the hub's URL layout (the model API's revision record,
the ``resolve`` URLs with the commit and ETag headers huggingface_hub reads), for tests of the downloads a user with
network runs (``HF_ENDPOINT`` pointed at it)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import unquote, urlparse

from tests.mirror import LocalServer

#: The commit every served model is at (40 hex digits, as the hub's).
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@contextmanager
def serve_models(models: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    """Serve each ``{repo id: folder}``; yields the endpoint (``http://127.0.0.1:PORT``) and the paths requested."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _file(self) -> tuple[Path, str] | None:
            path = unquote(urlparse(self.path).path)
            for repo, folder in models.items():
                prefix = f"/{repo}/resolve/"
                if path.startswith(prefix):
                    _revision, _, name = path.removeprefix(prefix).partition("/")
                    file = folder / name
                    return (file, hashlib.sha256(file.read_bytes()).hexdigest()) if file.is_file() else None
            return None

        def _api(self) -> bytes | None:
            path = unquote(urlparse(self.path).path)
            for repo, folder in models.items():
                files = sorted(p for p in folder.rglob("*") if p.is_file())
                names = [str(p.relative_to(folder)) for p in files]
                if path.startswith(f"/api/models/{repo}/tree/"):  # the files' list: name, size, git oid
                    tree = [
                        {
                            "type": "file",
                            "path": n,
                            "size": p.stat().st_size,
                            "oid": hashlib.sha1(p.read_bytes()).hexdigest(),
                        }
                        for n, p in zip(names, files, strict=True)
                    ]
                    return json.dumps(tree).encode()
                if path.startswith(f"/api/models/{repo}"):  # the revision's record
                    record = {"id": repo, "modelId": repo, "sha": COMMIT, "siblings": [{"rfilename": n} for n in names]}
                    return json.dumps(record).encode()
            return None

        def _answer(self, body: bool) -> None:
            requested.append(self.path)
            api = self._api()
            if api is not None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(api)))
                self.end_headers()
                if body:
                    self.wfile.write(api)
                return
            found = self._file()
            if found is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            file, digest = found
            data = file.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{digest}"')
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self):
            self._answer(body=False)

        def do_GET(self):
            self._answer(body=True)

    server = LocalServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()
