// KINDLING_KEY: fields saved under the names a foreign checkpoint uses (a
// Hugging Face BERT output block) while the C++ fields keep their own.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_KEYS_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_KEYS_H_

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE HfLayerNorm {
  kindling::Param<kindling::Tensor<1>> weight;
  kindling::Param<kindling::Tensor<1>> bias;
};

struct KINDLING_MODULE HfOutput {
  KINDLING_KEY("dense") kindling::Param<kindling::Tensor<2>> projection;
  KINDLING_KEY("LayerNorm") HfLayerNorm layer_norm;
  KINDLING_KEY("dropout_prob") double dropout;  // a constant, printed so
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_KEYS_H_
