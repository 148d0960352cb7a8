// KINDLING_MODULE, KINDLING_SKIP and KINDLING_KEY: the marks kindling-gen
// looks for.
//
//   struct KINDLING_MODULE Mlp {
//     kindling::nn::Linear fc1;
//     int64_t num_classes;              // a constant: kept, not saved
//     KINDLING_SKIP std::string label;  // ignored by the generator
//     // Named "LayerNorm" in paths, records and checkpoints (a Hugging Face
//     // key) while the C++ field keeps its own name.
//     KINDLING_KEY("LayerNorm") kindling::nn::LayerNorm layer_norm;
//   };
//
// A key is a string literal of letters, digits, '_' and '-' (one path
// component), and no two fields of a module may end up with one name;
// kindling-gen reports either mistake.
//
// Under clang (which kindling-gen uses to parse headers) the marks are
// `annotate` attributes the generator finds in the AST. Under gcc, which
// compiles the program, they expand to nothing: the marks cost nothing at
// runtime and need no base class or registration.
#ifndef KINDLING_MODULE_ANNOTATIONS_H_
#define KINDLING_MODULE_ANNOTATIONS_H_

// Kindling is C++20 (concepts, designated initializers, std::span); gcc 12
// defaults to C++17. Say so before the errors C++17 would give.
#if __cplusplus < 202002L
#error \
    "Kindling needs C++20: add `build --cxxopt=-std=c++20 --host_cxxopt=-std=c++20` to your .bazelrc (docs/use-in-your-project.md)"
#endif

#if defined(__clang__)
#define KINDLING_MODULE [[clang::annotate("kindling::module")]]
#define KINDLING_SKIP [[clang::annotate("kindling::skip")]]
#define KINDLING_KEY(name) [[clang::annotate("kindling::key=" name)]]
#else
#define KINDLING_MODULE
#define KINDLING_SKIP
#define KINDLING_KEY(name)
#endif

#endif  // KINDLING_MODULE_ANNOTATIONS_H_
