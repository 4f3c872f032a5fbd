"""The stand-in web server of the download tests (tests/mirror.py) takes a client that hangs up mid-response
silently, as a real site does: socketserver's traceback on stderr would land among the lines a test reads as the
harness's own (a download refused after its first bytes closes the connection while the body is being sent)."""

from __future__ import annotations

import socket
import struct
import time

from tests.mirror import serving


def test_a_client_hanging_up_mid_response_prints_nothing(tmp_path, capsys):
    url = "http://example.org/big.bin"
    with serving(tmp_path) as mirror:
        mirror.put(url, bytes(32 * 2**20))  # far more than the socket buffers hold
        host, port = mirror.url.removeprefix("http://").split(":")
        client = socket.create_connection((host, int(port)))
        client.sendall(f"GET {mirror.path_of(url)} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        assert client.recv(4096).startswith(b"HTTP/1.0 200")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        client.close()
        time.sleep(1.0)  # the server's write fails within this: the peer is gone
        assert mirror.fetched(url) == [0]
    assert capsys.readouterr().err == ""
