// CountCorrect(): the metric of the classification loop (trainer.h).
//
//   int64_t correct = CountCorrect(logits, labels);  // argmax == label
#ifndef KINDLING_TRAIN_ACCURACY_H_
#define KINDLING_TRAIN_ACCURACY_H_

#include <cstdint>
#include <vector>

#include "kindling/tensor/tensor.h"

namespace kindling::train {

// CountCorrect() is how many rows' argmax equals their label.
inline int64_t CountCorrect(const Tensor<2>& logits,
                            const Tensor<1, Int>& labels) {
  const std::vector<int64_t> predicted = logits.argmax(1).to_data<int64_t>();
  const std::vector<int64_t> truth = labels.to_data<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i];
  return correct;
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_ACCURACY_H_
