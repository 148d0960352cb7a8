#include "kindling/core/check.h"

#include <cstdio>
#include <cstdlib>

namespace kindling::internal {

void CheckFailed(const char* file, int line, const char* condition,
                 const std::string& message) {
  std::fprintf(stderr, "kindling: %s:%d: check failed: %s: %s\n", file, line,
               condition, message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kindling::internal
