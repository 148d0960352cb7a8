// ClangResourceDir: where the builtin headers (stddef.h, stdarg.h, the
// intrinsics headers) of the Clang that kindling-gen links live.
//
// A compiler finds them next to its own binary; kindling-gen is a Bazel
// output far from any Clang installation, so it asks the libclang-cpp it has
// loaded where it sits (/usr/lib/llvm-14/lib/libclang-cpp.so.14 on Debian)
// and derives the directory the way the clang driver does for a file of that
// installation (/usr/lib/llvm-14/lib/clang/14.0.6). Nothing is configured, so
// the generator built in any workspace finds them.
#ifndef KINDLING_CODEGEN_CLANG_RESOURCE_DIR_H_
#define KINDLING_CODEGEN_CLANG_RESOURCE_DIR_H_

#include <optional>
#include <string>

namespace kindling::codegen {

// ClangResourceDir: the resource directory of the linked Clang; derived from
// kindling-gen's own path when no libclang-cpp is loaded (a static link).
std::string ClangResourceDir();

// ResourceDirProblem: why `resource_dir` cannot serve as the builtin headers'
// directory (naming what was looked for and the Debian package that installs
// it), or nothing when it can.
std::optional<std::string> ResourceDirProblem(const std::string& resource_dir);

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_CLANG_RESOURCE_DIR_H_
