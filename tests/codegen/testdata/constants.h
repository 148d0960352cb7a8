// Constants (kept, copied, not saved) and KINDLING_SKIP fields (ignored).
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_CONSTANTS_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_CONSTANTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

enum class Activation { kRelu, kGelu };

// A config struct with no parameters: a constant, needs no mark.
struct DropoutConfig {
  double probability = 0.1;
  bool inplace = false;
};

struct KINDLING_MODULE Classifier {
  kindling::Param<kindling::Tensor<2>> weight;
  int64_t num_classes;
  float temperature;
  Activation activation;
  std::string name;
  DropoutConfig dropout;
  std::vector<int64_t> hidden_sizes;
  std::map<std::string, int> label_ids;
  const char* description;
  KINDLING_SKIP std::string debug_label;
  KINDLING_SKIP std::shared_ptr<int> cache;
};

// Only constants: generated with a warning, and valid.
struct KINDLING_MODULE Identity {
  int64_t features;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_CONSTANTS_H_
