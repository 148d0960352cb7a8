#include "kindling/train/metrics.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kindling/core/status_macros.h"
#include "kindling/tensor/dtype.h"

namespace kindling::train {
namespace {

// NamesFingerprint(): FNV-1a over the figures' names in order (each with
// its terminating zero), as 62 bits so that its negation below cannot
// overflow. (absl::Hash is seeded per process, so ranks would disagree.)
int64_t NamesFingerprint(const MetricSums& sums) {
  uint64_t hash = 14695981039346656037ull;
  for (const MetricSum& sum : sums) {
    for (const char c : sum.name) {
      hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    hash *= 1099511628211ull;  // the terminating zero: ("ab","c") != ("a","bc")
  }
  return static_cast<int64_t>(hash >> 2);
}

std::string Names(const MetricSums& sums) {
  return absl::StrJoin(sums, ", ", [](std::string* out, const MetricSum& sum) {
    out->append(sum.name);
  });
}

// CheckSameFigures(): one all-reduce of (count, fingerprint, -count,
// -fingerprint) by max, which gives every rank the largest and the smallest
// of each: they differ when any rank's figures do.
absl::Status CheckSameFigures(const MetricSums& sums,
                              distributed::Communicator& comm) {
  const int64_t count = static_cast<int64_t>(sums.size());
  const int64_t fingerprint = NamesFingerprint(sums);
  int64_t extremes[4] = {count, fingerprint, -count, -fingerprint};
  KINDLING_RETURN_IF_ERROR(comm.AllReduceHost(extremes, 4, DType::kI64,
                                              distributed::ReduceOp::kMax));
  if (extremes[0] != -extremes[2] || extremes[1] != -extremes[3]) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "AddAcrossRanks: the ranks' evaluations return different figures "
        "(rank %d has %d: %s)",
        comm.rank(), count, Names(sums)));
  }
  return absl::OkStatus();
}

}  // namespace

Metrics MeansOf(const MetricSums& sums) {
  Metrics means;
  means.reserve(sums.size());
  for (const MetricSum& sum : sums) {
    means.emplace_back(sum.name, sum.Mean());
  }
  return means;
}

absl::StatusOr<Metrics> AddAcrossRanks(const MetricSums& sums,
                                       distributed::Communicator& comm) {
  KINDLING_RETURN_IF_ERROR(CheckSameFigures(sums, comm));
  std::vector<double> totals;
  totals.reserve(2 * sums.size());
  for (const MetricSum& sum : sums) {
    totals.push_back(sum.sum);
    totals.push_back(sum.weight);
  }
  KINDLING_RETURN_IF_ERROR(
      comm.AllReduceHost(totals.data(), static_cast<int64_t>(totals.size()),
                         DType::kF64, distributed::ReduceOp::kSum));
  MetricSums added = sums;
  for (size_t i = 0; i < added.size(); ++i) {
    added[i].sum = totals[2 * i];
    added[i].weight = totals[2 * i + 1];
  }
  return MeansOf(added);
}

}  // namespace kindling::train
