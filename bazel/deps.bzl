"""kindling_dependencies: the external repositories Kindling's BUILD files name.

In a workspace that uses Kindling, after the `kindling` repository itself:

    load("@kindling//bazel:deps.bzl", "kindling_dependencies")

    kindling_dependencies()

Kindling's own WORKSPACE makes the same call, so the two cannot drift.

Everything is local: Debian's system libraries (headers in /usr/include,
libraries in the multiarch directory) through new_local_repository with the
BUILD files in Kindling's third_party/, LLVM/Clang 14 from /usr/lib/llvm-14,
the CUDA Toolkit from /usr/local/cuda (read only by --config=cuda builds), and
three tiny stand-ins for the repositories Bazel 4.2.3 would otherwise download
(rules_cc, rules_java, remote_coverage_tools). Nothing is fetched from the
network.

A repository the workspace has already declared under one of these names is
left alone, so a project keeps its own googletest or absl. Kindling's BUILD
files then use it under that name, and it must provide the targets they use:

    @absl//:absl, @absl//:absl_flags        (Abseil, linked from the system)
    @googletest//:gtest, @googletest//:gtest_main
    @benchmark//:benchmark, @benchmark//:benchmark_main
    @openblas//:openblas, @onednn//:onednn, @zlib//:zlib, @minizip//:minizip, @llvm//:clang
    @gloo//:gloo, @mpi//:mpi, @openssl//:crypto
    @cuda//:headers, @cuda//:cudart, @cuda//:cublas, @cuda//:nccl

A differently named copy is mapped onto these names with the `repo_mapping`
attribute of the `kindling` repository (`repo_mapping = {"@googletest":
"@com_google_googletest"}`), provided it has those targets.
"""

# The system libraries: name -> (path, BUILD file in Kindling's third_party/,
# a Label so that it names Kindling's file from any workspace).
_SYSTEM_REPOSITORIES = {
    "absl": ("/usr", Label("//third_party:absl.BUILD")),
    "googletest": ("/usr", Label("//third_party:googletest.BUILD")),
    "benchmark": ("/usr", Label("//third_party:benchmark.BUILD")),
    "openblas": ("/usr", Label("//third_party:openblas.BUILD")),
    # oneDNN: the CPU convolutions and matmul where they beat Kindling's own.
    "onednn": ("/usr", Label("//third_party:onednn.BUILD")),
    # LLVM/Clang 14 for kindling-gen (codegen/). Its own path: the headers
    # live in /usr/lib/llvm-14/include, not on the system include path.
    "llvm": ("/usr/lib/llvm-14", Label("//third_party:llvm.BUILD")),
    "zlib": ("/usr", Label("//third_party:zlib.BUILD")),
    "minizip": ("/usr", Label("//third_party:minizip.BUILD")),
    # The data-parallel engines (runtime/kindling/distributed): Gloo (TCP),
    # Open MPI (its headers under /usr/lib/x86_64-linux-gnu/openmpi), and
    # OpenSSL's libcrypto for the rendezvous store's HMAC.
    "gloo": ("/usr", Label("//third_party:gloo.BUILD")),
    "mpi": ("/usr", Label("//third_party:mpi.BUILD")),
    "openssl": ("/usr", Label("//third_party:openssl.BUILD")),
    # The CUDA Toolkit (nvcc, cudart, cuBLAS), used only by --config=cuda
    # builds (runtime/cuda.bzl); the default build never reads it.
    "cuda": ("/usr/local/cuda", Label("//third_party/cuda:cuda.BUILD")),
}

# Offline stand-ins for repositories Bazel 4.2.3 asks for on every build: the
# directories under Kindling's third_party/shims/.
_SHIMS = ["rules_cc", "rules_java", "remote_coverage_tools"]

def _kindling_shim_impl(repository_ctx):
    # Kindling's checkout, wherever the workspace put it: the directory of a
    # file Kindling always has (repository_ctx.path needs a file in a package).
    third_party = repository_ctx.path(Label("//third_party:BUILD.bazel")).dirname
    shim = third_party.get_child("shims").get_child(repository_ctx.attr.shim)
    if not shim.exists:
        fail("Kindling's offline stand-in for @%s is missing: %s" % (repository_ctx.name, shim))
    for entry in shim.readdir():
        repository_ctx.symlink(entry, entry.basename)

_kindling_shim = repository_rule(
    implementation = _kindling_shim_impl,
    doc = "A repository made of the files of third_party/shims/<shim> in Kindling's checkout.",
    attrs = {
        "shim": attr.string(mandatory = True, doc = "The directory under third_party/shims."),
    },
    local = True,
)

def kindling_dependencies():
    """Declares every repository Kindling needs that the workspace has not declared."""
    for name in _SHIMS:
        if not native.existing_rule(name):
            _kindling_shim(name = name, shim = name)
    for name, (path, build_file) in _SYSTEM_REPOSITORIES.items():
        if not native.existing_rule(name):
            native.new_local_repository(
                name = name,
                path = path,
                # new_local_repository takes the BUILD file as a label string;
                # Label() resolves it in Kindling's repository.
                build_file = str(build_file),
            )
