// Median(): the middle of a benchmark's repeated timings.
#ifndef KINDLING_BENCHES_MEDIAN_H_
#define KINDLING_BENCHES_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace kindling::bench {

// Median() is the middle value (the upper of the two middle ones for an even
// count), 0 for no values.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

}  // namespace kindling::bench

#endif  // KINDLING_BENCHES_MEDIAN_H_
