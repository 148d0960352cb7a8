// RunGenerator: one kindling-gen run, from a header to its generated file.
//
// Parses the header as C++ with the given compiler flags (as the Bazel rule
// passes them: the target's include paths and defines), collects the marked
// modules, and writes `<header>.kindling.h`. When the header does not compile
// or holds a mistake, the diagnostics are printed, no output is written (a
// stale one is removed, so a build cannot use it), and the run fails.
#ifndef KINDLING_CODEGEN_GENERATOR_H_
#define KINDLING_CODEGEN_GENERATOR_H_

#include <string>
#include <vector>

namespace kindling::codegen {

struct GeneratorOptions {
  // The header to parse, as the compiler should open it.
  std::string input_path;
  // Where to write the generated file.
  std::string output_path;
  // How the generated file includes the header; the input path if empty.
  std::string include_path;
  // The generated files of the same library's other headers, as included.
  // They are written by other build actions, so they are not looked up.
  std::vector<std::string> sibling_includes;
  // Compiler flags, as after `--` on the command line.
  std::vector<std::string> compiler_flags;
};

// RunGenerator: returns whether the output was written.
bool RunGenerator(const GeneratorOptions& options);

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_GENERATOR_H_
