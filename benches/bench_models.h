// Models for benches/module_bench, processed by kindling-gen.
#ifndef KINDLING_BENCHES_BENCH_MODELS_H_
#define KINDLING_BENCHES_BENCH_MODELS_H_

#include <vector>

#include "kindling/module/annotations.h"
#include "kindling/nn/linear.h"

namespace kindling::bench {

// Deep: a stack of Linear layers (100 in the visit/map benchmark, 100 of
// 1732 x 1732 for the 300M-parameter lazy-init benchmark).
struct KINDLING_MODULE Deep {
  std::vector<nn::Linear> layers;
};

}  // namespace kindling::bench

#endif  // KINDLING_BENCHES_BENCH_MODELS_H_
