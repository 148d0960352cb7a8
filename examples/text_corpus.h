// A byte-level text corpus and the Dataset of training windows over it
// (examples/char_lm.cc).
#ifndef KINDLING_EXAMPLES_TEXT_CORPUS_H_
#define KINDLING_EXAMPLES_TEXT_CORPUS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kindling/tensor/tensor.h"

namespace examples {

// LoadFortunes() is the quotes of Debian's `fortunes` package, in file-name
// order, with the "%" lines between quotes removed: every regular file of
// `directory` but the .dat indexes, the .u8 links and ascii-art. NotFound
// naming the directory when it has none.
absl::StatusOr<std::string> LoadFortunes(
    const std::string& directory = "/usr/share/games/fortunes");

// TextWindows: a Dataset (kindling/data/dataset.h) of the non-overlapping
// windows of `context` + 1 bytes of a text: sample i is bytes
// [i * context, i * context + context], whose first `context` bytes are
// the inputs and last `context` the targets (next bytes).
struct TextWindows {
  struct Batch {
    kindling::Tensor<2, kindling::Int> inputs;   // [B, context]
    kindling::Tensor<2, kindling::Int> targets;  // [B, context]
    int64_t size() const { return inputs.dim(0); }
  };

  std::shared_ptr<const std::string> text;
  int64_t context = 128;

  int64_t size() const {
    return text->size() > 0 ? (static_cast<int64_t>(text->size()) - 1) / context
                            : 0;
  }
  Batch Gather(std::span<const int64_t> indices) const;
};

// SplitText() cuts `text` into a training part and the last
// `validation_fraction` of it.
void SplitText(const std::string& text, double validation_fraction,
               std::string& train, std::string& validation);

}  // namespace examples

#endif  // KINDLING_EXAMPLES_TEXT_CORPUS_H_
