// Stand-ins for the runtime's leaf types, for the golden tests.
//
// kindling-gen recognizes kindling::Param and kindling::Buffer by their
// qualified names, so the generated text is the same as for the real types;
// the golden headers then parse in milliseconds and do not change when the
// runtime does.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_

namespace kindling {

template <int Rank>
struct Tensor {};

template <class T>
struct Param {
  T value;
};

template <class T>
struct Buffer {
  T value;
};

}  // namespace kindling

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_
