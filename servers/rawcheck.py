#!/usr/bin/env python3
"""Print the raw bytes of an HTTP/1.1 response and count them.

A dev tool for writing a server of the zoo: fairbench compares servers by the
bytes they put on the wire, and a browser or curl hides most of those. This
sends plain `GET PATH HTTP/1.1` requests over one persistent connection and
shows, per response, the exact header block, the framing and the byte counts.

    python3 servers/rawcheck.py HOST PORT PATH [-n N] [--body] [--timeout S]

    python3 servers/rawcheck.py 127.0.0.1 8080 /
    python3 servers/rawcheck.py ::1 8080 /hello-16k.txt -n 3

HOST is a literal address (`127.0.0.1`, `::1`, `[::1]`); point it only at
servers on this machine. With the default `-n 2` the second request proves the
connection stayed open (keep-alive). Exit status: 0 if every response arrived
complete, 1 otherwise.

Standard library only, so it runs wherever python3 does.
"""

import argparse
import socket
import sys
import time

MAX_HEADER = 64 * 1024
MAX_BODY = 64 * 1024 * 1024


class Conn:
    """A socket with a read buffer, so responses can be framed exactly."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed by server")
        self.buf += chunk

    def read_until(self, marker, limit):
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise ValueError(f"no {marker!r} within {limit} bytes")
            self.fill()
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_to_eof(self, limit):
        try:
            while len(self.buf) <= limit:
                self.fill()
        except EOFError:
            pass
        out, self.buf = self.buf, b""
        return out


def read_response(conn):
    """Returns (head bytes, wire body bytes, decoded body, framing, headers)."""
    head = conn.read_until(b"\r\n\r\n", MAX_HEADER)
    lines = head[:-4].split(b"\r\n")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.append((name.decode("latin-1"), value.strip().decode("latin-1")))
    get = lambda key: [v for k, v in headers if k.lower() == key]

    if any("chunked" in v.lower() for v in get("transfer-encoding")):
        wire, body = b"", b""
        for _ in range(1_000_000):  # bounded: a chunk per iteration
            size_line = conn.read_until(b"\r\n", MAX_HEADER)
            size = int(size_line.split(b";")[0].strip(), 16)
            wire += size_line
            if size == 0:
                # Trailers (if any) then the empty line that ends the message.
                for _ in range(1000):
                    line = conn.read_until(b"\r\n", MAX_HEADER)
                    wire += line
                    if line == b"\r\n":
                        break
                return head, wire, body, "chunked", headers
            data = conn.read_exact(size + 2)
            wire += data
            body += data[:-2]
            if len(body) > MAX_BODY:
                raise ValueError("chunked body too large")
        raise ValueError("too many chunks")
    if get("content-length"):
        n = int(get("content-length")[0])
        body = conn.read_exact(n)
        return head, body, body, "content-length", headers
    body = conn.read_to_eof(MAX_BODY)
    return head, body, body, "until-close", headers


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("path")
    p.add_argument("-n", type=int, default=2, help="requests on one connection (default 2)")
    p.add_argument("--body", action="store_true", help="print the whole body, not its first 200 bytes")
    p.add_argument("--timeout", type=float, default=5.0, help="socket timeout in seconds (default 5)")
    a = p.parse_args()

    host = a.host.strip("[]")
    request = f"GET {a.path} HTTP/1.1\r\nHost: {a.host}\r\n\r\n".encode()
    ok = True
    try:
        sock = socket.create_connection((host, a.port), timeout=a.timeout)
    except OSError as e:
        print(f"connect {host} port {a.port}: {e}", file=sys.stderr)
        return 1
    with sock:
        conn = Conn(sock)
        for i in range(1, max(1, min(a.n, 1000)) + 1):
            t0 = time.monotonic()
            try:
                sock.sendall(request)
                head, wire, body, framing, headers = read_response(conn)
            except (OSError, EOFError, ValueError) as e:
                print(f"--- response {i}: FAILED: {e}")
                ok = False
                break
            ms = (time.monotonic() - t0) * 1000
            print(f"--- response {i} ({ms:.1f} ms)")
            sys.stdout.write(head.decode("latin-1").replace("\r\n", "\\r\\n\n"))
            shown = body if a.body else body[:200]
            print(repr(shown) + ("" if len(shown) == len(body) else f" ... ({len(body) - len(shown)} more)"))
            print(f"header bytes: {len(head)}  body bytes on wire: {len(wire)}  "
                  f"total: {len(head) + len(wire)}  (decoded body {len(body)}, framing {framing}, "
                  f"{len(headers)} headers)")
            if framing == "until-close":
                break
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
