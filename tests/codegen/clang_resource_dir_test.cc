// ClangResourceDir: kindling-gen finds the builtin headers of the Clang it
// links without configuration, and names the Debian package when they are
// missing.
#include "codegen/clang_resource_dir.h"

#include <filesystem>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::kindling::codegen::ClangResourceDir;
using ::kindling::codegen::ResourceDirProblem;
using ::testing::HasSubstr;

TEST(ClangResourceDirTest, FindsTheLinkedClangsBuiltinHeaders) {
  const std::string resource_dir = ClangResourceDir();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(resource_dir) /
                                      "include" / "stddef.h"))
      << resource_dir;
  EXPECT_EQ(std::nullopt, ResourceDirProblem(resource_dir));
}

TEST(ClangResourceDirTest, MissingHeadersNameTheDebianPackage) {
  const std::optional<std::string> problem =
      ResourceDirProblem("/nonexistent/lib/clang/14.0.6");
  ASSERT_TRUE(problem.has_value());
  EXPECT_THAT(*problem,
              HasSubstr("'/nonexistent/lib/clang/14.0.6/include/stddef.h'"));
  EXPECT_THAT(*problem, HasSubstr("apt-get install libclang-common-14-dev"));
}

}  // namespace
