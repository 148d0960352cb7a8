// KINDLING_CHECK: aborts on a programming error, saying what and where.
//
// Kindling separates two kinds of failure. Anything a user's input can cause
// (a bad file, a shape mismatch on load) returns absl::Status. A broken
// precondition in code (reading a moved-from Param, a rank mismatch in an op)
// is a bug in the caller: continuing would corrupt state, so the process stops
// with the source location and a message that names the operands.
//
//   KINDLING_CHECK(lhs.rank() == rhs.rank(), "add: rank mismatch %d vs %d",
//                  lhs.rank(), rhs.rank());
//
// Checks stay on in optimized builds: they guard memory safety, and each costs
// one predictable branch.
#ifndef KINDLING_CORE_CHECK_H_
#define KINDLING_CORE_CHECK_H_

// Kindling is C++20 (concepts, designated initializers, std::span); gcc 12
// defaults to C++17. Say so before the errors C++17 would give.
#if __cplusplus < 202002L
#error \
    "Kindling needs C++20: add `build --cxxopt=-std=c++20 --host_cxxopt=-std=c++20` to your .bazelrc (docs/use-in-your-project.md)"
#endif

#include <string>

#include "absl/base/optimization.h"
#include "absl/strings/str_format.h"

namespace kindling::internal {

// Prints "kindling: <file>:<line>: check failed: <condition>: <message>" to
// stderr and aborts.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& message);

}  // namespace kindling::internal

#define KINDLING_CHECK(condition, ...)                                   \
  do {                                                                   \
    if (ABSL_PREDICT_FALSE(!(condition))) {                              \
      ::kindling::internal::CheckFailed(__FILE__, __LINE__, #condition,  \
                                        ::absl::StrFormat(__VA_ARGS__)); \
    }                                                                    \
  } while (false)

#endif  // KINDLING_CORE_CHECK_H_
