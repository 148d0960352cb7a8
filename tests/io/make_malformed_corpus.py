#!/usr/bin/env python3
"""Writes tests/io/malformed/: malformed safetensors files, each with the
exact error the reader must give (NAME.expected; NAME is the file label the
test passes to ParseSafetensors).

Run from the repository root:  python3 tests/io/make_malformed_corpus.py
The outputs are checked in; rerun only when adding cases. They also seed the
fuzzer (tests/io/run_fuzzer.sh).
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "malformed")


def file_with(header: bytes, data: bytes = b"", length=None) -> bytes:
    n = len(header) if length is None else length
    return struct.pack("<Q", n) + header + data


def tensor(name, dtype, shape, begin, end):
    shape_text = ",".join(str(d) for d in shape)
    return f'"{name}":{{"dtype":"{dtype}","shape":[{shape_text}],"data_offsets":[{begin},{end}]}}'


CASES = {}


def case(name, contents, expected):
    CASES[name] = (contents, expected)


F = "{name}"  # replaced by the file name in .expected

case("empty", b"", F + ": file is 0 bytes, too short for the 8-byte header length")
case("truncated_length", b"\x10\x00\x00\x00\x00",
     F + ": file is 5 bytes, too short for the 8-byte header length")
case("header_over_limit", file_with(b"{}", length=100_000_001),
     F + ": header length 100000001 exceeds the limit of 100000000 bytes")
case("header_length_max_u64", file_with(b"{}", length=2**64 - 1),
     F + ": header length 18446744073709551615 exceeds the limit of 100000000 bytes")
case("header_past_end", file_with(b"{}", length=64),
     F + ": header length 64 runs past the end of the 10-byte file")
case("header_not_object", file_with(b"[1, 2]  "),
     F + ": header does not start with '{'")
case("empty_header", file_with(b""), F + ": header does not start with '{'")
case("bad_json", file_with(b'{"a": }'),
     F + ": header is not valid JSON: byte 6: unexpected character '}'")
case("trailing_garbage", file_with(b"{} x"),
     F + ": header is not valid JSON: byte 3: unexpected text after the value")
case("bad_utf8_key", file_with(b'{"w\xff":{}}'),
     F + ": header is not valid JSON: byte 3: invalid UTF-8")
case("overlong_utf8", file_with(b'{"\xc0\xaf":{}}'),
     F + ": header is not valid JSON: byte 2: invalid UTF-8")
case("lone_surrogate_escape", file_with(b'{"\\ud800":{}}'),
     F + ": header is not valid JSON: byte 8: high surrogate not followed by a low surrogate")
case("control_char_in_key", file_with(b'{"a\x01":{}}'),
     F + ": header is not valid JSON: byte 3: unescaped control character in a string")
case("duplicate_keys",
     file_with(("{" + tensor("w", "U8", [2], 0, 2) + "," + tensor("w", "U8", [2], 2, 4) + "}").encode(), b"\0" * 4),
     F + ": header is not valid JSON: byte 53: duplicate key \"w\"")
case("null_literal", file_with(b'{"__metadata__":null}'),
     F + ": header is not valid JSON: byte 16: true, false and null are not allowed here")
case("deep_nesting", file_with(b'{"a":' + b"[" * 20 + b"]" * 20 + b"}"),
     F + ": header is not valid JSON: byte 20: nesting deeper than 16 levels")
case("huge_integer", file_with(b'{"w":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,0]}}'),
     F + ": header is not valid JSON: byte 47: integer does not fit in 64 bits")
case("float_dimension", file_with(b'{"w":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}', b"\0\0"),
     F + ": header is not valid JSON: byte 29: only integers are allowed (no fraction or exponent)")
case("unknown_dtype", file_with(("{" + tensor("w", "F31", [2], 0, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": unknown dtype \"F31\"")
case("lowercase_dtype", file_with(("{" + tensor("w", "f32", [2], 0, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": unknown dtype \"f32\"")
case("dtype_not_string", file_with(b'{"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}', b"\0" * 4),
     F + ": tensor \"w\": \"dtype\" must be a string")
case("missing_dtype", file_with(b'{"w":{"shape":[1],"data_offsets":[0,4]}}', b"\0" * 4),
     F + ": tensor \"w\": missing \"dtype\"")
case("unknown_field", file_with(b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}', b"\0" * 4),
     F + ": tensor \"w\": unknown field \"x\"")
case("tensor_not_object", file_with(b'{"w":[1]}'),
     F + ": tensor \"w\": expected an object, got array")
case("negative_dimension", file_with(("{" + tensor("w", "F32", [-1, 2], 0, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": \"shape\" entries must be integers in [0, 2^63-1]")
case("overflowing_shape",
     file_with(("{" + tensor("w", "F32", [2**32, 2**32, 4], 0, 16) + "}").encode(), b"\0" * 16),
     F + ": tensor \"w\": shape [4294967296, 4294967296, 4] x F32 overflows 64 bits")
case("overflowing_bytes",
     file_with(("{" + tensor("w", "F64", [2**62], 0, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": shape [4611686018427387904] x F64 overflows 64 bits")
case("shape_span_mismatch", file_with(("{" + tensor("w", "F32", [3], 0, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": shape [3] of F32 needs 12 bytes but data_offsets [0, 8] span 8")
case("offsets_reversed", file_with(("{" + tensor("w", "U8", [0], 8, 4) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": data_offsets [8, 4] end before they begin")
case("offsets_wrong_count", file_with(b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}}', b"\0"),
     F + ": tensor \"w\": \"data_offsets\" must be an array of 2 integers")
case("offsets_past_end", file_with(("{" + tensor("w", "U8", [16], 0, 16) + "}").encode(), b"\0" * 8),
     F + ": tensor \"w\": data_offsets [0, 16] run past the 8-byte data section")
case("truncated_data",
     file_with(("{" + tensor("a", "F32", [2], 0, 8) + "," + tensor("b", "F32", [2], 8, 16) + "}").encode(), b"\0" * 12),
     F + ": tensor \"b\": data_offsets [8, 16] run past the 12-byte data section")
case("overlapping_offsets",
     file_with(("{" + tensor("a", "U8", [4], 0, 4) + "," + tensor("b", "U8", [4], 2, 6) + "}").encode(), b"\0" * 6),
     F + ": tensor \"b\": data_offsets [2, 6] overlap tensor \"a\", which ends at 4")
case("aliased_offsets",
     file_with(("{" + tensor("a", "U8", [4], 0, 4) + "," + tensor("b", "U8", [4], 0, 4) + "}").encode(), b"\0" * 4),
     F + ": tensor \"b\": data_offsets [0, 4] overlap tensor \"a\", which ends at 4")
case("gap_between",
     file_with(("{" + tensor("a", "U8", [2], 0, 2) + "," + tensor("b", "U8", [2], 4, 6) + "}").encode(), b"\0" * 6),
     F + ": tensor \"b\": data_offsets [4, 6] leave a gap: the previous tensor ends at 2")
case("first_not_at_zero", file_with(("{" + tensor("a", "U8", [4], 4, 8) + "}").encode(), b"\0" * 8),
     F + ": tensor \"a\": data_offsets [4, 8] leave a gap: the previous tensor ends at 0")
case("trailing_bytes", file_with(("{" + tensor("a", "U8", [2], 0, 2) + "}").encode(), b"\0" * 3),
     F + ": tensors cover 2 bytes of the 3-byte data section")
case("metadata_not_object", file_with(b'{"__metadata__":"x"}'),
     F + ": __metadata__ must be an object")
case("metadata_value_not_string", file_with(b'{"__metadata__":{"format":1}}'),
     F + ": __metadata__ \"format\": value must be a string, got integer")

case("rank_over_limit",
     file_with(("{" + tensor("w", "U8", [1] * 65, 0, 1) + "}").encode(), b"\0"),
     F + ': tensor "w": "shape" has 65 dimensions, more than the limit of 64')
case("count_over_int64",
     file_with(("{" + tensor("w", "U8", [2**62, 3], 0, 0) + "}").encode()),
     F + ': tensor "w": shape [4611686018427387904, 3] has more than 2^63-1 elements')


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (contents, expected) in sorted(CASES.items()):
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(contents)
        with open(os.path.join(OUT, name + ".expected"), "w") as f:
            f.write(expected.replace("{name}", name + ".safetensors", 1) + "\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
