#!/usr/bin/env python3
"""Loopback origin server for Recall's integration tests and benchmarks.

Every path answers; the query string says how:
  status=N            response status (default 200)
  cc=...              Cache-Control value
  etag=...            ETag (quoted if given bare); If-None-Match matching it answers 304
  lm=SECONDS          Last-Modified SECONDS before now; If-Modified-Since at or after it answers 304
  expires=SECONDS     Expires SECONDS from now (negative for the past); expires=bad sends garbage
  vary=...            Vary value
  retry_after=...     Retry-After value, sent verbatim
  date=omit|SECONDS   omit Date, or send Date shifted by SECONDS
  size=N              body of N bytes (default: a small JSON description of the request)
  stream=N            body of N binary bytes (0, 1, … 255, 0, …: not UTF-8), written 64 KiB at a
                      time and never held whole, so N may be gigabytes; with length=omit, sent
                      without Content-Length (the body ends when the connection closes);
                      with length=VALUE, VALUE sent verbatim as the Content-Length (a hostile
                      one: 9223372036854775807, +5, 5,6) and the connection closed after the body;
                      with gate=NAME, the first 64 KiB is sent and the rest waits until
                      GET /__open?gate=NAME (or 60 s); with truncate=1, the body stops 1,000
                      bytes short of its Content-Length and the connection closes; with
                      reset_mid=1, the connection is reset (TCP RST) half way
  delay_ms=N          wait N ms before answering
  hold=NAME           wait before answering (before delay_ms) until GET /__open?gate=NAME
                      (or 60 s): a fetch that is surely under way until the test says
  drop=1              close the connection without answering
  drop_first=N        the same for the first N requests to the path
  drop_after=N        the same for every request to the path after the first N
  reset=1             reset the connection (TCP RST: SO_LINGER 0) without answering
  truncate=1          promise 1,000 more body bytes than are sent, then close the connection
  bad304=1            answer any If-None-Match with a 304 carrying another ETag ("other")
  fail_first=N        the first N hits of this path answer fail_status (default 503)
  fail_after=N        every hit of this path after the N-th answers fail_status
  header=Name:Value   an extra header field (repeatable)
  content_location=self  a Content-Location naming the request's own path and query
  interim=N           an interim response of status N (1xx) before the answer (repeatable)
  echo=1              answer with the request body
  body=TEXT           answer with TEXT (text/plain unless a header= gives Content-Type)
  ranges=1            answer a single byte range (Range: bytes=a-b, a- or -n) with 206 and
                      Content-Range, unless If-Range differs from the ETag; with size=N the
                      body is "0123456789abcdefghijklmnopqrstuvwxyz" repeated, so bytes can be checked
Hits are counted per path (query excluded):
  GET /__hits?path=/p answers {"path": "/p", "hits": N, "range": R, "ifRange": I} (the Range
  and If-Range fields of the last request to /p, or null); GET /__reset forgets all counts.
The server prints "PORT <n>" once listening and exits when its standard input closes.
"""
import email.utils
import io
import socket
import struct
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HITS = {}
LAST = {}
LOCK = threading.Lock()
GATES = {}


def gate(name):
    """The event a gated stream waits on (made on first use)."""
    with LOCK:
        return GATES.setdefault(name, threading.Event())


PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyz"


def http_date(offset=0.0):
    return email.utils.formatdate(time.time() + offset, usegmt=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.answer()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def answer(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        one = lambda name, default=None: query.get(name, [default])[0]
        length = int(self.headers.get("Content-Length") or 0)
        request_body = self.rfile.read(length) if length else b""

        if parts.path == "/__hits":
            with LOCK:
                hits = HITS.get(one("path", "/"), 0)
                last = LAST.get(one("path", "/"), (None, None))
            return self.send(200, {"Content-Type": "application/json"},
                             json.dumps({"path": one("path", "/"), "hits": hits,
                                         "range": last[0], "ifRange": last[1]}).encode())
        if parts.path == "/__open":
            gate(one("gate", "")).set()
            return self.send(204, {}, b"")
        if parts.path == "/__reset":
            with LOCK:
                HITS.clear()
                LAST.clear()
            return self.send(204, {}, b"")

        with LOCK:
            HITS[parts.path] = HITS.get(parts.path, 0) + 1
            hit = HITS[parts.path]
            LAST[parts.path] = (self.headers.get("Range"), self.headers.get("If-Range"))

        if one("hold"):
            gate(one("hold")).wait(60)
        if one("delay_ms"):
            time.sleep(int(one("delay_ms")) / 1000.0)
        if one("reset") == "1":
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.wfile = io.BytesIO()  # what the handler flushes at the end goes nowhere
            return
        if one("drop") == "1" or hit <= int(one("drop_first", "0")) or \
                (one("drop_after") is not None and hit > int(one("drop_after"))):
            self.close_connection = True
            self.connection.shutdown(2)
            return

        status = int(one("status", "200"))
        if hit <= int(one("fail_first", "0")) or (one("fail_after") is not None and hit > int(one("fail_after"))):
            status = int(one("fail_status", "503"))
        headers = []
        if one("cc") is not None:
            headers.append(("Cache-Control", one("cc")))
        etag = one("etag")
        if etag is not None:
            etag = etag if etag.startswith('"') or etag.startswith("W/") else '"%s"' % etag
            headers.append(("ETag", etag))
        last_modified = None
        if one("lm") is not None:
            last_modified = time.time() - float(one("lm"))
            headers.append(("Last-Modified", email.utils.formatdate(last_modified, usegmt=True)))
        if one("expires") is not None:
            value = one("expires")
            headers.append(("Expires", "bad date" if value == "bad" else http_date(float(value))))
        if one("vary") is not None:
            headers.append(("Vary", one("vary")))
        if one("retry_after") is not None:
            headers.append(("Retry-After", one("retry_after")))
        date = one("date")
        if date != "omit":
            headers.append(("Date", http_date(float(date or 0))))
        if one("content_location") == "self":
            headers.append(("Content-Location", self.path))
        for field in query.get("header", []):
            name, _, value = field.partition(":")
            headers.append((name.strip(), value.strip()))
        headers.append(("X-Hits", str(hit)))

        if one("bad304") == "1" and self.headers.get("If-None-Match") is not None:
            return self.send(304, [("ETag", '"other"'), ("Date", http_date())], b"")
        if status < 400 and self.not_modified(etag, last_modified):
            return self.send(304, headers, b"")

        if one("stream") is not None:
            total = int(one("stream"))
            self.send_response_only(status)
            fields = headers + [("Content-Type", "application/octet-stream")]
            if one("length") == "omit":
                self.close_connection = True
            elif one("length") is not None:
                self.close_connection = True
                fields.append(("Content-Length", one("length")))
            else:
                fields.append(("Content-Length", str(total)))
            for name, value in fields:
                self.send_header(name, value)
            self.end_headers()
            chunk = bytes(range(256)) * 256
            sent = 0
            end = total - 1000 if one("truncate") == "1" else total
            while sent < end and self.command != "HEAD":
                piece = chunk[:min(len(chunk), end - sent)]
                self.wfile.write(piece)  # a client that stops reading ends this with BrokenPipeError
                sent += len(piece)
                if sent == len(piece) and one("gate") is not None:
                    self.wfile.flush()
                    gate(one("gate")).wait(60)
                if one("reset_mid") == "1" and sent >= total // 2:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.wfile = io.BytesIO()
                    return
            if end < total:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
            return
        if one("echo") == "1":
            body = request_body
            headers.append(("Content-Type", self.headers.get("Content-Type") or "application/octet-stream"))
        elif one("body") is not None:
            body = one("body").encode()
            if not any(name.lower() == "content-type" for name, _ in headers):
                headers.append(("Content-Type", "text/plain; charset=utf-8"))
        elif one("size") is not None:
            size = int(one("size"))
            body = (PATTERN * (size // len(PATTERN) + 1))[:size] if one("ranges") == "1" else b"x" * size
            headers.append(("Content-Type", "application/octet-stream"))
        else:
            body = json.dumps({
                "method": self.command,
                "path": parts.path,
                "query": parts.query,
                "hit": hit,
                "headers": {k: v for k, v in self.headers.items()},
                "bodyLength": len(request_body),
            }, sort_keys=True).encode()
            headers.append(("Content-Type", "application/json"))
        if one("ranges") == "1" and status == 200:
            bounds = self.single_range(len(body), etag)
            if bounds is not None:
                first, last = bounds
                headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, len(body))))
                return self.send(206, headers, body[first:last + 1])
        if one("truncate") == "1":
            self.send_response_only(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body) + 1000))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.send(status, headers, body)

    def single_range(self, length, etag):
        """The (first, last) byte positions of a single satisfiable Range, or None (answer 200)."""
        field = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if field is None or not field.startswith("bytes=") or "," in field:
            return None
        if if_range is not None and if_range != etag:
            return None
        first, _, last = field[6:].partition("-")
        try:
            if first == "":
                start, end = max(0, length - int(last)), length - 1
            else:
                start, end = int(first), (min(int(last), length - 1) if last else length - 1)
        except ValueError:
            return None
        return (start, end) if 0 <= start <= end < length else None

    def not_modified(self, etag, last_modified):
        inm = self.headers.get("If-None-Match")
        if inm is not None and etag is not None:
            tags = [t.strip() for t in inm.split(",")]
            weak = lambda t: t[2:] if t.startswith("W/") else t
            return "*" in tags or weak(etag) in [weak(t) for t in tags]
        ims = self.headers.get("If-Modified-Since")
        if ims is not None and last_modified is not None:
            try:
                since = email.utils.parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                return False
            return int(last_modified) <= since
        return False

    def send(self, status, headers, body):
        if isinstance(headers, dict):
            headers = list(headers.items())
        for code in parse_qs(urlsplit(self.path).query).get("interim", []):
            self.wfile.write(b"HTTP/1.1 %d Interim\r\nLink: </x.css>; rel=preload\r\n\r\n" % int(code))
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        if status != 304 and status != 204:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5. A burst of parallel tests overflowed it: the
    # kernel logged "Possible SYN flooding", and a request's connection was reset.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client that gave up (an attempt timeout, a cancelled task) closes its connection
        # while the answer is being written: expected in the tests, not worth a traceback.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)

    def watch_stdin():
        try:
            while sys.stdin.buffer.read(1):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
