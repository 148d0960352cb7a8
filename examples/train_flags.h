// The command-line flags the training examples share (train_flags.cc):
//   --epochs --batch_size --lr --out_dir --threads --seed --resume --max_steps
//   --device --nproc --backend --bucket_kib --dist_timeout_s
#ifndef KINDLING_EXAMPLES_TRAIN_FLAGS_H_
#define KINDLING_EXAMPLES_TRAIN_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(int64_t, epochs);
ABSL_DECLARE_FLAG(int64_t, batch_size);
ABSL_DECLARE_FLAG(double, lr);
ABSL_DECLARE_FLAG(std::string, out_dir);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, resume);
ABSL_DECLARE_FLAG(int64_t, max_steps);
ABSL_DECLARE_FLAG(std::string, data_dir);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(int, nproc);
ABSL_DECLARE_FLAG(std::string, backend);
ABSL_DECLARE_FLAG(int64_t, bucket_kib);
ABSL_DECLARE_FLAG(double, dist_timeout_s);

#endif  // KINDLING_EXAMPLES_TRAIN_FLAGS_H_
