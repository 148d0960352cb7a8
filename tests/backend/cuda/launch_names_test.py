#!/usr/bin/python3
"""Every CUDA launch in the backend names itself (cuda_check.h).

An asynchronous fault surfaces at a later call, and the message lists the
names of the recent launches; a launch that records no name makes the
message point at an older kernel. This test reads the CUDA sources and
fails, naming file:line, where:
  * a <<<...>>> launch is not followed by KINDLING_CUDA_CHECK_LAUNCH("Name");
  * LaunchStrided / LaunchContiguous / LaunchLines is called without a
    string literal name;
  * a cuBLAS call that queues device work is not wrapped in
    KINDLING_CUBLAS_LAUNCH(cublasX, (...)).
It runs in the default build (no GPU, no nvcc needed).
"""

import os
import re
import sys

# cuBLAS functions that queue no device work: handles, streams, modes, names.
CUBLAS_HOST_ONLY = {
    "cublasCreate", "cublasDestroy", "cublasSetStream", "cublasGetStream",
    "cublasSetMathMode", "cublasGetMathMode", "cublasSetWorkspace",
    "cublasGetStatusName", "cublasGetStatusString", "cublasSetPointerMode",
    "cublasGetVersion",
}
SOURCE_DIRS = ["runtime/kindling/backend/cuda", "tests/backend/cuda"]
SOURCE_SUFFIXES = (".cu", ".cc", ".h", ".cuh")


def strip_comments(text):
    """Blanks out // and /* */ comments, keeping offsets and newlines."""
    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def end_of_call(text, open_paren):
    """The offset just past the ')' matching text[open_paren] == '('."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def check_file(path, text):
    problems = []
    code = strip_comments(text)
    for launch in re.finditer(r">>>\s*\(", code):
        end = end_of_call(code, launch.end() - 1)
        rest = code[end:].lstrip()
        if not rest.startswith(";"):
            problems.append((line_of(code, launch.start()),
                             "a <<<...>>> launch that is not a statement"))
            continue
        after = rest[1:].lstrip()
        # A literal, or the name parameter of a launch helper whose callers
        # pass literals (checked below).
        if not re.match(r'KINDLING_CUDA_CHECK_LAUNCH\(\s*("\w+"|\w+)\s*\)',
                        after):
            problems.append((line_of(code, launch.start()),
                             'a <<<...>>> launch not followed by '
                             'KINDLING_CUDA_CHECK_LAUNCH("KernelName")'))
    for call in re.finditer(
            r"\b(LaunchStrided|LaunchContiguous|LaunchLines)\s*(<[^;(]*>)?\s*\(",
            code):
        args = code[call.end():call.end() + 200].lstrip()
        if re.match(r"const\s+char\s*\*", args):
            continue  # the definition itself
        if not re.match(r'"\w+"\s*,', args):
            problems.append((line_of(code, call.start()),
                             "%s without a string literal kernel name as its "
                             "first argument" % call.group(1)))
    for call in re.finditer(r"\b(cublas[A-Z]\w*)\s*\(", code):
        name = call.group(1)
        if name in CUBLAS_HOST_ONLY:
            continue
        before = code[max(0, call.start() - 40):call.start()]
        if re.search(r"KINDLING_CUBLAS_LAUNCH\(\s*$", before):
            continue
        problems.append((line_of(code, call.start()),
                         "%s queues device work: call it as "
                         "KINDLING_CUBLAS_LAUNCH(%s, (...))" % (name, name)))
    # The wrapped form passes the function name without a call.
    for wrapped in re.finditer(r"KINDLING_CUBLAS_LAUNCH\(\s*(\w+)\s*,", code):
        if not wrapped.group(1).startswith("cublas"):
            problems.append((line_of(code, wrapped.start()),
                             "KINDLING_CUBLAS_LAUNCH of %s, not a cuBLAS "
                             "function" % wrapped.group(1)))
    return [(path, line, what) for line, what in problems]


# The checker's own check: each of these must be reported.
BAD_SAMPLES = [
    "Kernel<<<1, 1, 0, s>>>(x);\nfoo();",
    "Kernel<<<1, 1, 0, s>>>(x);\nKINDLING_CUDA_CHECK(cudaGetLastError());",
    "LaunchStrided(stream, indexer, FillOp<T>{});",
    "KINDLING_CUBLAS_CHECK(cublasSgemm(handle, a, b));",
]
GOOD_SAMPLE = """
Kernel<<<grid, threads, 0, stream>>>(a, f(b, c));
KINDLING_CUDA_CHECK_LAUNCH("Kernel");
LaunchStrided("FillOp", stream, indexer, FillOp<T>{});
KINDLING_CUBLAS_LAUNCH(cublasSgemm, (handle, a, b));
KINDLING_CUBLAS_CHECK(cublasSetStream(handle, stream));
"""


def self_check():
    for sample in BAD_SAMPLES:
        if not check_file("sample.cu", sample):
            print("error: the checker missed a bad launch:\n" + sample)
            return False
    if check_file("sample.cu", GOOD_SAMPLE):
        print("error: the checker rejects good launches: %s" %
              check_file("sample.cu", GOOD_SAMPLE))
        return False
    return True


def main(argv):
    if not self_check():
        return 1
    root = argv[1] if len(argv) > 1 else os.getcwd()
    problems = []
    files = 0
    for directory in SOURCE_DIRS:
        for name in sorted(os.listdir(os.path.join(root, directory))):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(directory, name)
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
            # The macros' own definitions are not launches.
            if name == "cuda_check.h":
                continue
            files += 1
            problems += check_file(path, text)
    for path, line, what in problems:
        print("%s:%d: error: %s" % (path, line, what))
    if files == 0:
        print("error: no CUDA sources found under %s" % ", ".join(SOURCE_DIRS))
        return 1
    print("%d CUDA source files checked, %d problems" % (files, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
