#!/usr/bin/env python3
"""Writes tests/distributed/store_corpus/: seed inputs for the store frame
fuzzer (store_protocol_fuzzer.cc), valid frames and malformed ones.

Each file is one seed byte (how the fuzzer cuts the rest into reads) and a
stream of frames in the layout of runtime/kindling/distributed/
store_protocol.h. Run it from anywhere; it rewrites the directory.
"""
import os
import struct

MAGIC = 0x5453444B
SET, GET, WAIT, IDENTIFY, GOODBYE, AUTH = 1, 2, 3, 4, 5, 6
HELLO, OK, ERROR = 0x80, 0x81, 0x82


def frame(opcode, fields, arg=0, version=1, reserved=0, count=None,
          payload=None):
    body = b"".join(struct.pack("<I", len(f)) + f for f in fields)
    return struct.pack("<IBBHIII", MAGIC, version, opcode, reserved, arg,
                       len(fields) if count is None else count,
                       len(body) if payload is None else payload) + body


CASES = {
    # Well-formed streams.
    "set_get": frame(SET, [b"rank/0", b"10.0.0.1:4000"]) +
               frame(GET, [b"rank/0"], arg=5000),
    "wait_many": frame(WAIT, [b"k%d" % i for i in range(20)], arg=100) +
                 frame(GOODBYE, []),
    "identify_auth": frame(IDENTIFY, [b"3"]) + frame(AUTH, [b"\x01" * 32]),
    "replies": frame(HELLO, [b"\x02" * 32], arg=1) + frame(OK, [b"value"]) +
               frame(ERROR, [b"missing: \"k\""], arg=4),
    "empty_fields": frame(SET, [b"", b""]) + frame(OK, []),
    "large_value": frame(SET, [b"blob", b"v" * 3000]),
    # Malformed ones.
    "bad_magic": b"GET / HTTP/1.1\r\nHost: store\r\n\r\n",
    "bad_version": frame(SET, [b"k", b"v"], version=2),
    "unknown_opcode": frame(0x42, []),
    "reserved_set": frame(GET, [b"k"], reserved=1),
    "too_many_fields": frame(SET, [b"k", b"v", b"w"]),
    "oversized_key": frame(SET, [b"k" * 4097, b"v"]),
    "oversized_value_header": frame(SET, [], count=2, payload=1 << 30),
    "payload_mismatch": frame(GET, [b"key"], payload=100),
    "field_past_payload": frame(GET, [b"key"], payload=5),
    "short_mac": frame(AUTH, [b"\x01" * 31]),
    "truncated": frame(SET, [b"key", b"value"])[:-3],
    "truncated_header": frame(SET, [b"key", b"value"])[:11],
    "valid_then_garbage": frame(GET, [b"k"]) + bytes(range(256)),
}


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "store_corpus")
    os.makedirs(out, exist_ok=True)
    for seed, (name, data) in enumerate(sorted(CASES.items())):
        with open(os.path.join(out, name + ".frame"), "wb") as f:
            f.write(bytes([seed * 29 % 256]) + data)


if __name__ == "__main__":
    main()
