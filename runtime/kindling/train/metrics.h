// Metrics: the named figures of an evaluation, and their shardable form.
//
// An evaluation split over N ranks (each on its shard of the test set)
// returns MetricSums: each figure as a sum and the weight it averages over
// (a shard's correct predictions and its examples). AddAcrossRanks() adds
// every rank's and divides, so all ranks get the figures one process would
// compute on the whole set:
//
//   MetricSums mine = {{"test_accuracy", correct, examples}};
//   absl::StatusOr<Metrics> metrics = AddAcrossRanks(mine, communicator);
#ifndef KINDLING_TRAIN_METRICS_H_
#define KINDLING_TRAIN_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kindling/distributed/communicator.h"

namespace kindling::train {

// Metrics: named figures of an evaluation, in the order they print.
using Metrics = std::vector<std::pair<std::string, double>>;

// MetricSum: one figure as `sum` / `weight` (e.g. correct predictions over
// examples, or a summed loss over tokens).
struct MetricSum {
  std::string name;
  double sum = 0;
  double weight = 0;

  // Mean() is sum / weight, 0 where the weight is 0 (nothing evaluated).
  double Mean() const { return weight != 0 ? sum / weight : 0; }
};
using MetricSums = std::vector<MetricSum>;

// EvalShard: the part of an evaluation one rank does: shard `index` of
// `count` (0 of 1 alone).
struct EvalShard {
  int64_t index = 0;
  int64_t count = 1;

  // Range() is the shard's part [begin, end) of `units` units (batches,
  // examples): the units split as evenly as they go, in order, so the
  // shards cover each unit once.
  std::pair<int64_t, int64_t> Range(int64_t units) const {
    return {units * index / count, units * (index + 1) / count};
  }
};

// MeansOf() is each figure's Mean().
Metrics MeansOf(const MetricSums& sums);

// AddAcrossRanks() adds every rank's sums and weights (in f64) and returns
// MeansOf() the totals, on every rank. Collective: every rank calls it with
// the same figures in the same order; a rank whose names or count differ
// makes it FailedPrecondition on every rank, naming the figures.
absl::StatusOr<Metrics> AddAcrossRanks(const MetricSums& sums,
                                       distributed::Communicator& comm);

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_METRICS_H_
