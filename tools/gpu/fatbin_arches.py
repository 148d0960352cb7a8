#!/usr/bin/python3
"""Lists the CUDA code in ELF binaries, as `cuobjdump --list-elf/--list-ptx`
would (this machine's CUDA Toolkit ships no cuobjdump), and checks that each
binary with CUDA code holds machine code for the GPUs we run on.

  fatbin_arches.py [--require-elf 90] BINARY...

Prints "BINARY: elf sm_80, elf sm_90, ptx sm_90" per binary ("no CUDA code"
for a host-only one) and exits 1 if a binary with CUDA code lacks an ELF
(cubin) for a required architecture: a GPU would then have to JIT from PTX,
or could not run it at all.

The format, as nvcc writes it into the .nv_fatbin section: containers, each
a 16-byte header (u32 magic 0xBA55ED50, u16 version, u16 header size, u64
size of the entries) followed by entries, each with a header of its own
(u16 kind: 1 PTX, 2 ELF; u16 version; u32 header size; u64 padded payload
size; ...; u32 architecture at byte 28).
"""

import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def section(data, wanted):
    """The bytes of the ELF64 section named `wanted`, or None."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(index):
        base = shoff + index * shentsize
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", data, base)
        return name, offset, size

    _, names_offset, _ = header(shstrndx)
    for index in range(shnum):
        name, offset, size = header(index)
        end = data.index(b"\0", names_offset + name)
        if data[names_offset + name:end].decode() == wanted:
            return data[offset:offset + size]
    return None


def fatbin_entries(blob):
    """(kind, arch) of every entry of every container in `blob`."""
    entries = []
    position = 0
    while position + 16 <= len(blob):
        magic, _, header_size, fat_size = struct.unpack_from("<IHHQ", blob,
                                                             position)
        if magic != FATBIN_MAGIC:
            position += 8  # containers are 8-byte aligned; skip padding
            continue
        entry = position + header_size
        end = entry + fat_size
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob,
                                                                entry)
            arch, = struct.unpack_from("<I", blob, entry + 28)
            entries.append((KINDS.get(kind, "kind%d" % kind), arch))
            if entry_header == 0:
                break
            entry += entry_header + payload
        position = end
    return entries


def main(argv):
    required = []
    paths = []
    args = argv[1:]
    while args:
        arg = args.pop(0)
        if arg == "--require-elf":
            required.append(int(args.pop(0)))
        else:
            paths.append(arg)
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = False
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            blob = section(data, ".nv_fatbin")
        except ValueError as error:
            print("%s: %s" % (path, error))
            failed = True
            continue
        if blob is None:
            print("%s: no CUDA code" % path)
            continue
        entries = sorted(set(fatbin_entries(blob)))
        listed = ", ".join("%s sm_%d" % entry for entry in entries)
        missing = [arch for arch in required if ("elf", arch) not in entries]
        if missing:
            failed = True
            listed += "  MISSING elf " + ", ".join("sm_%d" % a for a in missing)
        print("%s: %s" % (path, listed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
