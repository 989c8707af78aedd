#!/usr/bin/env python3
"""Writes the named seed inputs of corpus/ (RFC 7541 Appendix C blocks, RFC
9113 frames, the test servers' responses). Run from fuzz/; the fuzzers grow
the corpus from these."""
import os
import struct

h = bytes.fromhex


def w(target, name, data):
    os.makedirs(f"corpus/{target}", exist_ok=True)
    with open(f"corpus/{target}/{name}", "wb") as f:
        f.write(data)


# RFC 7541 Appendix C, one list per example (a sequence shares a decoder).
C = {
    "c2_1": [h("400a637573746f6d2d6b65790d637573746f6d2d686561646572")],
    "c2_2": [h("040c2f73616d706c652f70617468")],
    "c2_3": [h("100870617373776f726406736563726574")],
    "c2_4": [h("82")],
    "c3": [h("828684410f7777772e6578616d706c652e636f6d"),
           h("828684be58086e6f2d6361636865"),
           h("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565")],
    "c4": [h("828684418cf1e3c2e5f23a6ba0ab90f4ff"),
           h("828684be5886a8eb10649cbf"),
           h("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf")],
    "c5": [h("4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d"),
           h("4803333037c1c0bf"),
           h("88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31")],
    "c6": [h("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3"),
           h("4883640effc1c0bf"),
           h("88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007")],
    "size_update_then_field": [h("3fe11f82")],
    "size_update_alone": [h("20")],
    "huffman_eos": [h("0081ff0161")],
}


def blocks(bs):
    return b"".join(bytes([len(b)]) + b for b in bs)


for k, bs in C.items():
    for t in ("hpack_decode", "hpack_differential"):
        w(t, k, blocks(bs))


def fr(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


SET = fr(4, 0, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 65535))
ACK = fr(4, 1, 0)
RESP = fr(1, 4, 1, h("88")) + fr(0, 1, 1, b"hello")
frames = {
    "settings_response": SET + ACK + RESP,
    "c5_headers": SET + fr(1, 4, 1, C["c5"][0]) + fr(1, 5, 3, C["c5"][1]) + fr(1, 5, 5, C["c5"][2]),
    "c6_headers_continuation": SET + fr(1, 0, 1, C["c6"][0][:20]) + fr(9, 4, 1, C["c6"][0][20:]) + fr(0, 1, 1, b"x"),
    "padded": SET + fr(1, 0xC, 1, b"\x03" + h("88") + b"\0\0\0") + fr(0, 0x9, 1, b"\x02ab\0\0"),
    "priority": SET + fr(1, 0x25, 1, struct.pack(">IB", 3, 15) + h("88")) + fr(2, 0, 3, struct.pack(">IB", 0, 1)),
    "ping": SET + fr(6, 0, 0, b"12345678") + fr(6, 1, 0, b"abcdefgh"),
    "goaway": SET + fr(7, 0, 0, struct.pack(">II", 1, 0) + b"debug"),
    "rst": SET + fr(3, 0, 1, struct.pack(">I", 7)) + fr(3, 0, 3, struct.pack(">I", 8)),
    "window_update": SET + fr(8, 0, 0, struct.pack(">I", 1000)) + fr(8, 0, 3, struct.pack(">I", 1 << 20)),
    "push_promise": SET + fr(5, 4, 1, struct.pack(">I", 2) + h("82")),
    "unknown_type": SET + fr(0xB, 0xFF, 0, b"xyz") + RESP,
    "trailers": SET + fr(1, 4, 1, h("88")) + fr(0, 0, 1, b"body") + fr(1, 5, 1, h("400174017a")),
    "settings_table_size": fr(4, 0, 0, struct.pack(">HI", 1, 0) + struct.pack(">HI", 5, 1 << 14)) + RESP,
}
for k, v in frames.items():
    w("h2_frames", k, v)
    w("conversation", "h2_" + k, b"\x01" + v)

# The test servers' responses (fairbench_testkit), and framings to know.
h1 = {
    "hello": b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n",
    "hello_type": b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello World!\n",
    "not_found": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    "busy_ok": b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
    "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    "close": b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    "connection_close": b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
    "not_modified": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    "two_lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    "te_and_cl": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "switching": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
}
for k, v in h1.items():
    w("http1_response", k, v)
    w("conversation", "h1_" + k, b"\x00" + v)

chunks = {
    "one": b"5\r\nhello\r\n0\r\n\r\n",
    "ext_trailer": b"3;a=b\r\nabc\r\n0\r\nX: y\r\nZ: w\r\n\r\n",
    "hex_upper": b"A\r\n0123456789\r\n0\r\n\r\n",
    "huge": b"ffffffffffffffff\r\nab",
    "many": b"".join(b"1\r\nx\r\n" for _ in range(20)) + b"0\r\n\r\n",
    "bad_crlf": b"2\r\nabXY0\r\n\r\n",
}
for k, v in chunks.items():
    w("chunked", k, v)


# HTTP/3 (RFC 9114 frames, RFC 9204 field sections with a zero-capacity
# table): a request stream's bytes for h3_frames, sections for qpack_decode.
def qv(v):
    """A QUIC variable-length integer."""
    for n, tag in ((1, 0), (2, 0x40), (4, 0x80), (8, 0xC0)):
        if v < 1 << (8 * n - 2):
            b = bytearray(v.to_bytes(n, "big"))
            b[0] |= tag
            return bytes(b)
    raise ValueError(v)


def f3(kind, payload=b""):
    return qv(kind) + qv(len(payload)) + payload


STATUS_200 = h("0000d9")
sections = {
    "status_200": STATUS_200,
    "rfc9204_b1_path": h("0000510b2f696e6465782e68746d6c"),
    "rfc9204_b2_dynamic": h("038110"),
    "literal_name": h("0000") + b"\x23x-a\x01b",
    "status_then_type": h("0000d9") + h("5f1d") + b"\x0atext/plain",
    "post_base": h("000010"),
}
for k, v in sections.items():
    w("qpack_decode", k, v)
stream = {
    "headers_data": f3(1, STATUS_200) + f3(0, b"hello"),
    "headers_data_trailers": f3(1, STATUS_200) + f3(0, b"he") + f3(0, b"llo") + f3(1, h("0000") + b"\x23x-a\x01b"),
    "reserved_type": f3(0x21, b"grease") + f3(1, STATUS_200),
    "h2_frame_type": f3(1, STATUS_200) + f3(0x02, b"\x00"),
    "settings_on_request": f3(4) + f3(1, STATUS_200),
    "long_length": qv(0) + h("c000000000100000") + b"x" * 16,
    "truncated": f3(1, STATUS_200)[:3],
    "dynamic_section": f3(1, h("038110")),
}
for k, v in stream.items():
    w("h3_frames", k, v)
