// Param and Buffer leaves: a batch norm keeps running statistics in Buffers.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_AND_BUFFERS_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_AND_BUFFERS_H_

#include <cstdint>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE BatchNorm {
  kindling::Param<kindling::Tensor<1>> gamma;
  kindling::Param<kindling::Tensor<1>> beta;
  kindling::Buffer<kindling::Tensor<1>> running_mean;
  kindling::Buffer<kindling::Tensor<1>> running_var;
  double momentum;
  double epsilon;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_AND_BUFFERS_H_
