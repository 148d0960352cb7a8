#include "codegen/clang_resource_dir.h"

#include <link.h>

#include <string>

#include "clang/Basic/Version.h"
#include "clang/Config/config.h"
#include "clang/Driver/Driver.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace kindling::codegen {
namespace {

// The Debian package that installs the builtin headers of Clang 14 (clang-14
// depends on it).
constexpr char kBuiltinHeadersPackage[] = "libclang-common-14-dev";

// The loaded shared object whose file name starts with `prefix`, with every
// symlink resolved; empty if none is loaded.
std::string LoadedLibraryPath(llvm::StringRef prefix) {
  struct Search {
    llvm::StringRef prefix;
    std::string path;
  } search{prefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t /*size*/, void* data) {
        auto* search = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr) return 0;
        const llvm::StringRef name(info->dlpi_name);
        if (!llvm::sys::path::filename(name).startswith(search->prefix)) {
          return 0;
        }
        search->path = name.str();
        return 1;
      },
      &search);
  if (search.path.empty()) return "";
  llvm::SmallString<256> real_path;
  if (llvm::sys::fs::real_path(search.path, real_path)) return search.path;
  return std::string(real_path);
}

}  // namespace

std::string ClangResourceDir() {
  // The driver maps a file in <prefix>/bin or <prefix>/lib to
  // <prefix>/lib/clang/<version>: /usr/lib/llvm-14/lib/libclang-cpp.so.14
  // gives /usr/lib/llvm-14/lib/clang/14.0.6.
  std::string anchor_file = LoadedLibraryPath("libclang-cpp.so");
  if (anchor_file.empty()) {
    // Statically linked: the installation kindling-gen itself sits in.
    static int anchor;
    anchor_file = llvm::sys::fs::getMainExecutable("kindling-gen", &anchor);
  }
  return clang::driver::Driver::GetResourcesPath(anchor_file,
                                                 CLANG_RESOURCE_DIR);
}

std::optional<std::string> ResourceDirProblem(const std::string& resource_dir) {
  llvm::SmallString<256> stddef(resource_dir);
  llvm::sys::path::append(stddef, "include", "stddef.h");
  if (llvm::sys::fs::exists(stddef)) return std::nullopt;
  return "clang's builtin headers are missing: '" + std::string(stddef) +
         "' not found (Clang " CLANG_VERSION_STRING
         "); install the Debian package " +
         kBuiltinHeadersPackage + " (apt-get install " +
         kBuiltinHeadersPackage + "), or pass -resource-dir=<dir> after --";
}

}  // namespace kindling::codegen
