#include "examples/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace examples {
namespace {

namespace fs = std::filesystem;

bool IsQuoteFile(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  const std::string extension = entry.path().extension().string();
  return entry.is_regular_file() && !entry.is_symlink() &&
         extension != ".dat" && extension != ".u8" && name != "ascii-art";
}

// AppendQuotes() adds a fortune file's text without its "%" separator lines.
void AppendQuotes(std::istream& in, std::string& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (line == "%") continue;
    out += line;
    out += '\n';
  }
}

}  // namespace

absl::StatusOr<std::string> LoadFortunes(const std::string& directory) {
  std::error_code error;
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(directory, error)) {
    if (IsQuoteFile(entry)) files.push_back(entry.path());
  }
  if (error || files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no fortune files in ", directory,
        " (Debian's `fortunes` package puts them there; tools/bazel installs "
        "it)"));
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
    AppendQuotes(in, text);
  }
  return text;
}

TextWindows::Batch TextWindows::Gather(std::span<const int64_t> indices) const {
  const int64_t count = static_cast<int64_t>(indices.size());
  std::vector<int64_t> inputs(count * context), targets(count * context);
  for (int64_t row = 0; row < count; ++row) {
    const int64_t start = indices[row] * context;
    for (int64_t t = 0; t < context; ++t) {
      inputs[row * context + t] = static_cast<uint8_t>((*text)[start + t]);
      targets[row * context + t] = static_cast<uint8_t>((*text)[start + t + 1]);
    }
  }
  using Ids = kindling::Tensor<2, kindling::Int>;
  return {Ids::FromData(inputs, {count, context}),
          Ids::FromData(targets, {count, context})};
}

void SplitText(const std::string& text, double validation_fraction,
               std::string& train, std::string& validation) {
  const size_t cut = static_cast<size_t>(static_cast<double>(text.size()) *
                                         (1 - validation_fraction));
  train = text.substr(0, cut);
  validation = text.substr(cut);
}

}  // namespace examples
