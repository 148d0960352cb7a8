"""Kindling's safetensors files against the reference implementation (the
`safetensors` package from PyPI), both ways:

  * a file Kindling writes (every dtype, an empty and a rank-0 tensor,
    `__metadata__` with non-ASCII text) reads in safetensors with identical
    dtypes, shapes, bytes and metadata: through its framework-free
    `deserialize`, `safetensors.numpy.load_file` and, where torch is
    importable, `safetensors.torch.load_file`;
  * files written by `safetensors.numpy.save_file` and
    `safetensors.torch.save_file` read in Kindling with identical bytes and
    metadata.

Usage: safetensors_reference_check.py TOOL
TOOL is bazel-bin/tests/io/safetensors_interop_tool. .ci/run runs this
with `tools/peers --small`'s interpreter (safetensors and numpy from PyPI;
Debian's torch 1.13 through the system site packages). Prints one line per
check and "interop: N passed, M failed"; exits 1 if any failed.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import safetensors
import safetensors.numpy

try:
    import torch
    import safetensors.torch
except ImportError:  # the torch checks are then reported as not run
    torch = None

RESULTS = []


def check(name, ok, detail=""):
    RESULTS.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")


def parse_tool(output):
    """The tool's lines -> ({name: (dtype, shape, bytes)}, {key: value})."""
    tensors, metadata = {}, {}
    for line in output.splitlines():
        words = line.split()
        unhex = lambda w: b"" if w == "-" else bytes.fromhex(w)
        if words[0] == "tensor":
            shape = () if words[3] == "-" else tuple(int(d) for d in words[3].split(","))
            tensors[unhex(words[1]).decode()] = (words[2], shape, unhex(words[4]))
        elif words[0] == "metadata":
            metadata[unhex(words[1]).decode()] = unhex(words[2]).decode()
    return tensors, metadata


def run_tool(tool, mode, path):
    result = subprocess.run([tool, mode, path], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} {mode} {path}: {result.stderr.strip()}")
    return parse_tool(result.stdout)


def torch_bytes(tensor):
    """A torch tensor's elements as raw little-endian bytes (bf16 included,
    which numpy lacks)."""
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    return tensor.contiguous().numpy().tobytes()


def kindling_to_reference(tool, directory):
    path = os.path.join(directory, "kindling.safetensors")
    wrote, wrote_metadata = run_tool(tool, "write", path)
    with open(path, "rb") as f:
        read = dict(safetensors.deserialize(f.read()))
    check("deserialize: the same tensor names", set(read) == set(wrote),
          f"{sorted(read)} vs {sorted(wrote)}")
    for name, (dtype, shape, data) in wrote.items():
        got = read.get(name, {})
        check(f"deserialize {name} ({dtype}{list(shape)})",
              got.get("dtype") == dtype and tuple(got.get("shape", ())) == shape
              and bytes(got.get("data", b"")) == data,
              f"got {got.get('dtype')} {got.get('shape')} {bytes(got.get('data', b'')).hex()}")
    with safetensors.safe_open(path, framework="numpy") as f:
        check("metadata read by safe_open", f.metadata() == wrote_metadata,
              f"{f.metadata()} vs {wrote_metadata}")
        for name, (dtype, shape, data) in wrote.items():
            if dtype == "BF16":
                continue  # numpy has no bfloat16; torch checks it below
            array = f.get_tensor(name)
            check(f"numpy {name}", array.shape == shape and array.tobytes() == data,
                  f"{array.shape} {array.tobytes().hex()}")
    if torch is None:
        print("torch checks not run: torch is not importable here")
        return
    loaded = safetensors.torch.load_file(path)
    for name, (dtype, shape, data) in wrote.items():
        tensor = loaded[name]
        check(f"torch {name}", tuple(tensor.shape) == shape and torch_bytes(tensor) == data,
              f"{tuple(tensor.shape)} {torch_bytes(tensor).hex()}")


def reference_arrays():
    """numpy arrays of every dtype numpy and Kindling share, with edge values."""
    return {
        "f32": np.array([[-1.5, 0.0, 3.4e38], [1e-45, -0.0, 7.25]], np.float32),
        "f64": np.array([1 / 3, -2.5e300, 1e-310], np.float64),
        "f16": np.array([1.0, -2.5, 65504.0, 2.0 ** -24], np.float16),
        "i64": np.array([[-1, 2 ** 62], [-(2 ** 63), 7]], np.int64),
        "i32": np.array([-(2 ** 31), 0, 123456], np.int32),
        "u8": np.array([0, 1, 127, 128, 255], np.uint8),
        "bool": np.array([True, False, False, True]),
        "empty": np.zeros((0, 3), np.float32),
        "scalar": np.array(3.25, np.float32),
        "big": np.arange(3 * 5 * 7, dtype=np.float32).reshape(3, 5, 7) / 7,
    }


def compare_dump(label, tool, path, expected, metadata):
    dumped, dumped_metadata = run_tool(tool, "dump", path)
    check(f"{label}: the same tensor names", set(dumped) == set(expected),
          f"{sorted(dumped)} vs {sorted(expected)}")
    for name, (shape, data) in expected.items():
        got = dumped.get(name, (None, None, None))
        check(f"{label} {name}", got[1] == shape and got[2] == data,
              f"got {got[0]} {got[1]} {got[2].hex() if got[2] else got[2]}")
    check(f"{label}: metadata", dumped_metadata == metadata,
          f"{dumped_metadata} vs {metadata}")


def reference_to_kindling(tool, directory):
    metadata = {"format": "np", "note": "h\u00e9llo \u2713"}
    arrays = reference_arrays()
    path = os.path.join(directory, "numpy.safetensors")
    safetensors.numpy.save_file(arrays, path, metadata=metadata)
    compare_dump("numpy.save_file", tool, path,
                 {n: (a.shape, a.tobytes()) for n, a in arrays.items()}, metadata)
    if torch is None:
        return
    tensors = {n: torch.from_numpy(a.copy()) for n, a in arrays.items()}
    tensors["bf16"] = torch.tensor([1.0, -2.5, 3.3895e38, 9.2e-41], dtype=torch.bfloat16)
    metadata = {"format": "pt"}
    path = os.path.join(directory, "torch.safetensors")
    safetensors.torch.save_file(tensors, path, metadata=metadata)
    compare_dump("torch.save_file", tool, path,
                 {n: (tuple(t.shape), torch_bytes(t)) for n, t in tensors.items()},
                 metadata)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tool = os.path.abspath(sys.argv[1])
    print(f"safetensors {safetensors.__version__}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not importable'}")
    with tempfile.TemporaryDirectory() as directory:
        for step in (kindling_to_reference, reference_to_kindling):
            try:
                step(tool, directory)
            except Exception as error:  # a crash is a failed check, named
                check(step.__name__, False, repr(error))
    failed = RESULTS.count(False)
    print(f"interop: {len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
