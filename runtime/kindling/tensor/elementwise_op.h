// UnaryOp and BinaryOp, and what the op table (elementwise_ops.def) says of
// each: its name, the dtypes it takes, and what its gradient reads.
//
//   UnaryOpName(UnaryOp::kSigmoid)       // "sigmoid"
//   UnaryOperands(UnaryOp::kExp)         // OpOperands::kFloating
//   UnarySaves(UnaryOp::kTanh)           // GradientReads::kResult
//   WritesBool(BinaryOp::kLess)          // true: a comparison
//   for (UnaryOp op : kAllUnaryOps) ...  // every op, in table order
#ifndef KINDLING_TENSOR_ELEMENTWISE_OP_H_
#define KINDLING_TENSOR_ELEMENTWISE_OP_H_

#include <array>

namespace kindling {

// OpOperands: the dtypes an op takes (elementwise_ops.def).
enum class OpOperands { kArithmetic, kFloating, kBool, kComparison, kLogical };

// GradientReads: what a unary op's gradient reads.
enum class GradientReads { kNothing, kInput, kResult, kInputAndResult };

enum class UnaryOp {
#define KINDLING_UNARY_OP(name, text, operands, saves) k##name,
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_UNARY_OP
};

enum class BinaryOp {
#define KINDLING_BINARY_OP(name, text, kind) k##name,
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_BINARY_OP
};

inline constexpr std::array kAllUnaryOps = {
#define KINDLING_UNARY_OP(name, text, operands, saves) UnaryOp::k##name,
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_UNARY_OP
};

inline constexpr std::array kAllBinaryOps = {
#define KINDLING_BINARY_OP(name, text, kind) BinaryOp::k##name,
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_BINARY_OP
};

namespace elementwise_op_internal {

struct UnaryRow {
  const char* name;
  OpOperands operands;
  GradientReads saves;
};

inline constexpr UnaryRow kUnaryRows[] = {
#define KINDLING_UNARY_OP(name, text, operands, saves) \
  {text, OpOperands::operands, GradientReads::saves},
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_UNARY_OP
};

struct BinaryRow {
  const char* name;
  OpOperands kind;
};

inline constexpr BinaryRow kBinaryRows[] = {
#define KINDLING_BINARY_OP(name, text, kind) {text, OpOperands::kind},
#include "kindling/tensor/elementwise_ops.def"
#undef KINDLING_BINARY_OP
};

}  // namespace elementwise_op_internal

// UnaryOpName() / BinaryOpName() are the op names used in messages.
constexpr const char* UnaryOpName(UnaryOp op) {
  return elementwise_op_internal::kUnaryRows[static_cast<int>(op)].name;
}
constexpr const char* BinaryOpName(BinaryOp op) {
  return elementwise_op_internal::kBinaryRows[static_cast<int>(op)].name;
}

// UnaryOperands(): kArithmetic, kFloating or kBool.
constexpr OpOperands UnaryOperands(UnaryOp op) {
  return elementwise_op_internal::kUnaryRows[static_cast<int>(op)].operands;
}

// UnarySaves(): what the op's gradient reads (kBool ops have no gradient).
constexpr GradientReads UnarySaves(UnaryOp op) {
  return elementwise_op_internal::kUnaryRows[static_cast<int>(op)].saves;
}

// BinaryKind(): kArithmetic, kFloating, kComparison or kLogical.
constexpr OpOperands BinaryKind(BinaryOp op) {
  return elementwise_op_internal::kBinaryRows[static_cast<int>(op)].kind;
}

// IsLogical() is true for the BinaryOps that take and write bool;
// WritesBool() for those and the comparisons (any dtype in, bool out).
constexpr bool IsLogical(BinaryOp op) {
  return BinaryKind(op) == OpOperands::kLogical;
}
constexpr bool WritesBool(BinaryOp op) {
  return BinaryKind(op) == OpOperands::kComparison || IsLogical(op);
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_ELEMENTWISE_OP_H_
