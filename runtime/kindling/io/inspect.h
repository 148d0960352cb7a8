// RunInspect(): the kindling-inspect command, as a function so tests can run
// it without a process.
//
//   kindling-inspect [--json] FILE
//
// Validates FILE with the same reader LoadModule() uses (safetensors.h, or
// torch_zip.h for a torch.save file, told from its first bytes) and prints a
// table of keys, dtypes, shapes and byte sizes, the metadata and totals;
// --json prints the same as one JSON object ("format" in its totals). Exit
// status 0 for a valid file, 1 with the reader's error on one line of `err` for
// a malformed or unreadable one, 2 for bad usage. Whatever the bytes, it never
// crashes: nothing is printed from the file before the reader accepted all of
// it.
#ifndef KINDLING_IO_INSPECT_H_
#define KINDLING_IO_INSPECT_H_

#include <ostream>
#include <string>
#include <vector>

namespace kindling::io {

int RunInspect(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace kindling::io

#endif  // KINDLING_IO_INSPECT_H_
