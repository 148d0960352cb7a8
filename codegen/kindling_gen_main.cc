// kindling-gen: writes the module traits for the KINDLING_MODULE structs of a
// C++ header.
//
//   kindling-gen examples/mlp.h -o out/examples/mlp.kindling.h
//       --include=examples/mlp.h -- -std=c++20 -iquote . -I ...
//
// Everything after `--` is passed to the compiler as is. codegen/defs.bzl runs
// this once per header with the target's real include paths and defines.
#include <string>
#include <utility>
#include <vector>

#include "codegen/generator.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace {

llvm::cl::OptionCategory generator_category("kindling-gen options");

llvm::cl::opt<std::string> input_path(llvm::cl::Positional, llvm::cl::Required,
                                      llvm::cl::desc("<header>"),
                                      llvm::cl::cat(generator_category));

llvm::cl::opt<std::string> output_path(
    "o", llvm::cl::Required,
    llvm::cl::desc("Where to write the generated file"),
    llvm::cl::value_desc("path"), llvm::cl::cat(generator_category));

llvm::cl::opt<std::string> include_path(
    "include",
    llvm::cl::desc("How the generated file includes the header (default: the "
                   "header's path as given)"),
    llvm::cl::value_desc("path"), llvm::cl::cat(generator_category));

llvm::cl::list<std::string> sibling_includes(
    "sibling",
    llvm::cl::desc(
        "The generated file of another header of the same library, "
        "as included; trusted to exist at compile time (repeatable)"),
    llvm::cl::value_desc("path"), llvm::cl::cat(generator_category));

constexpr char kOverview[] =
    "Generates <header>.kindling.h: kindling::ModuleTraits and a record type "
    "for every struct marked KINDLING_MODULE in <header>. Compiler flags "
    "follow "
    "`--`.\n";

}  // namespace

int main(int argc, const char** argv) {
  llvm::InitLLVM init_llvm(argc, argv);
  int tool_argc = argc;
  std::vector<std::string> compiler_flags;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      tool_argc = i;
      compiler_flags.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  llvm::cl::HideUnrelatedOptions(generator_category);
  if (!llvm::cl::ParseCommandLineOptions(tool_argc, argv, kOverview)) {
    return 2;
  }
  const kindling::codegen::GeneratorOptions options = {
      .input_path = input_path,
      .output_path = output_path,
      .include_path = include_path,
      .sibling_includes = {sibling_includes.begin(), sibling_includes.end()},
      .compiler_flags = std::move(compiler_flags),
  };
  return kindling::codegen::RunGenerator(options) ? 0 : 1;
}
