// Modules in nested, inline and global namespaces, and a submodule from
// another namespace.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_NAMESPACES_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_NAMESPACES_H_

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace outer::inner {

struct KINDLING_MODULE Embedding {
  kindling::Param<kindling::Tensor<2>> table;
};

struct KINDLING_MODULE Encoder {
  Embedding embedding;
};

}  // namespace outer::inner

namespace outer {
inline namespace v2 {

struct KINDLING_MODULE Decoder {
  inner::Embedding embedding;
};

}  // namespace v2
}  // namespace outer

struct KINDLING_MODULE Seq2Seq {
  outer::inner::Encoder encoder;
  outer::Decoder decoder;
};

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_NAMESPACES_H_
