#!/usr/bin/python3
"""Writes the first N training samples and every test sample of an MNIST-like
data set (IDX files, gzip-compressed) into another directory, for the GPU
bundle: the full training images are 26 MB, more than a device trip spares.

  mnist_subset.py SOURCE_DIR OUT_DIR N
"""

import gzip
import os
import shutil
import struct
import sys


def copy_prefix(source, dest, count):
    """Copies an IDX file keeping its first `count` entries along axis 0."""
    with gzip.open(source, "rb") as f:
        magic = f.read(4)
        if len(magic) != 4 or magic[0] != 0 or magic[1] != 0:
            raise ValueError("%s: not an IDX file" % source)
        rank = magic[3]
        dims = list(struct.unpack(">%dI" % rank, f.read(4 * rank)))
        item_bytes = 1
        for dim in dims[1:]:
            item_bytes *= dim
        if magic[2] != 0x08:
            raise ValueError("%s: expected unsigned bytes" % source)
        kept = min(count, dims[0])
        body = f.read(kept * item_bytes)
        if len(body) != kept * item_bytes:
            raise ValueError("%s: truncated" % source)
    dims[0] = kept
    with gzip.open(dest, "wb", compresslevel=9) as out:
        out.write(magic + struct.pack(">%dI" % rank, *dims) + body)


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    source, out, count = argv[1], argv[2], int(argv[3])
    os.makedirs(out, exist_ok=True)
    for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
        name = "train-%s.gz" % kind
        copy_prefix(os.path.join(source, name), os.path.join(out, name), count)
        name = "t10k-%s.gz" % kind
        shutil.copyfile(os.path.join(source, name), os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
