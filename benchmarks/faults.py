"""A fault-injecting HTTP proxy on loopback, put in front of an S3-compatible server.

Object stores fail a share of requests in ordinary operation (``503 SlowDown`` under
load, a connection that stalls): :class:`FaultProxy` forwards every request to the
server it fronts and fails or delays a chosen share of them, spread evenly over the
requests it sees, so a run's retries can be tested and timed against a real server
(moto's server mode) with no mock in the client.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
# hop-by-hop headers, which a proxy does not forward
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a storage client timing out) is routine
    here, not a traceback on stderr."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class FaultProxy:
    """Forward HTTP requests to ``target``, failing or delaying a share of them.

    Parameters
    ----------
    target : str
        The server's URL (``http://127.0.0.1:port``).
    fail_share : float
        Share of requests answered ``503 SlowDown`` without reaching the server: the
        n-th request fails where ``floor(n * share)`` steps up, so 0.2 fails every
        fifth and 1.0 every one.
    delay_share : float
        Share of the other requests held for ``delay_s`` seconds before they are
        forwarded (spread the same way).
    delay_s : float
        The delay, in seconds.
    outage_from : str or None
        Fail every request from the first whose path holds this text on
        (``/predictions/``: from the first write of a run's predictions): an outage
        that starts mid-run.
    refuse : (str, str) or None
        ``(method, end of path)``: fail the first ``refuse_times`` requests of that
        method whose path (without its query) ends so (later ones take their chance
        with the other settings): one object that cannot be written for a while, as
        when a publish is interrupted.
    refuse_times : int
        How many such requests fail.

    Attributes
    ----------
    url : str
        The proxy's own URL, to give a client as its endpoint.
    requests, failed, delayed, refused : int
        Requests seen, answered with a failure (refused ones included), delayed, and
        refused as ``refuse`` asks, so far.
    """

    def __init__(
        self,
        target: str,
        fail_share: float = 0.0,
        delay_share: float = 0.0,
        delay_s: float = 0.0,
        outage_from: str | None = None,
        refuse: tuple[str, str] | None = None,
        refuse_times: int = 1,
    ):
        for name, share in (("fail_share", fail_share), ("delay_share", delay_share)):
            if not 0 <= share <= 1:
                raise ValueError(f"{name} must be within [0, 1], not {share}")
        self.target = urlsplit(target)
        self.fail_share, self.delay_share, self.delay_s = fail_share, delay_share, delay_s
        self.outage_from, self.down = outage_from, False
        self.refuse, self.refuse_times = refuse, refuse_times
        self.requests = self.failed = self.delayed = self.refused = 0
        self._count = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FaultProxy:
        """Serve in a background thread; returns the proxy."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _fate(self, method: str, path: str) -> str:
        """``fail``, ``delay`` or ``pass`` for the next request, ``method`` to ``path``."""
        with self._count:
            self.requests += 1
            n = self.requests
            self.down = self.down or (self.outage_from is not None and self.outage_from in path)
            refused = (
                self.refuse is not None
                and self.refused < self.refuse_times
                and method == self.refuse[0]
                and path.split("?")[0].endswith(self.refuse[1])
            )
            self.refused += refused
            if (
                refused
                or self.down
                or math.floor(n * self.fail_share) > math.floor((n - 1) * self.fail_share)
            ):
                self.failed += 1
                return "fail"
            passed = n - self.failed
            if math.floor(passed * self.delay_share) > math.floor((passed - 1) * self.delay_share):
                self.delayed += 1
                return "delay"
            return "pass"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0], 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _forward(self) -> None:
                body = self._body()
                fate = proxy._fate(self.command, self.path)
                if fate == "fail":
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(SLOW_DOWN)
                    return
                if fate == "delay":
                    time.sleep(proxy.delay_s)
                upstream = http.client.HTTPConnection(
                    proxy.target.hostname, proxy.target.port, timeout=60
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                finally:
                    upstream.close()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                if self.command == "HEAD":
                    self.send_header("Content-Length", answer.getheader("Content-Length", "0"))
                    self.end_headers()
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        return Handler
