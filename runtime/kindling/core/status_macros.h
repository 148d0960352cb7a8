// Early return on error for absl::Status and absl::StatusOr, so that code
// which calls several fallible steps reads as the steps themselves:
//
//   absl::Status SaveAll(const Model& model, kindling::Optimizer& optimizer) {
//     KINDLING_RETURN_IF_ERROR(kindling::SaveModule(model,
//     "model.safetensors")); KINDLING_ASSIGN_OR_RETURN(kindling::LoadReport
//     report,
//                               kindling::LoadModule(copy,
//                               "model.safetensors"));
//     return optimizer.Save(model, "optimizer.safetensors");
//   }
//
// KINDLING_RETURN_IF_ERROR(expr): evaluates `expr` (an absl::Status) once and
// returns it from the enclosing function when it is not OK.
//
// KINDLING_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an
// absl::StatusOr<T>) once; returns its status when it is not OK, else moves
// its value into `lhs`, which may declare a variable (`auto x`, `T x`) or
// name an existing one. The enclosing function returns absl::Status or any
// absl::StatusOr<U>. `lhs` must not contain an unparenthesized comma: write
// `(std::pair<A, B> p)` as `auto p`.
//
// The macros carry the Kindling prefix so that they never collide with a
// project's own RETURN_IF_ERROR.
#ifndef KINDLING_CORE_STATUS_MACROS_H_
#define KINDLING_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KINDLING_RETURN_IF_ERROR(expr)                                      \
  do {                                                                      \
    if (::absl::Status kindling_status_ = (expr); !kindling_status_.ok()) { \
      return kindling_status_;                                              \
    }                                                                       \
  } while (false)

#define KINDLING_ASSIGN_OR_RETURN(lhs, expr) \
  KINDLING_ASSIGN_OR_RETURN_IMPL_(           \
      KINDLING_STATUS_MACROS_CONCAT_(kindling_statusor_, __LINE__), lhs, expr)

// Implementation details.
#define KINDLING_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define KINDLING_STATUS_MACROS_CONCAT_(a, b) \
  KINDLING_STATUS_MACROS_CONCAT_INNER_(a, b)
#define KINDLING_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) {                                      \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = *std::move(statusor)

#endif  // KINDLING_CORE_STATUS_MACROS_H_
