// data_parallel_worker: one rank of a small data-parallel training job, for
// data_parallel_test.sh. examples::Mlp 16-32-32-LayerNorm-4 on 640
// synthetic samples (class = argmax of the first four features), Adam under
// a cosine schedule, 5 global batches per epoch, 4 epochs (20 steps), each
// rank seeding its initialization differently so that only the broadcast of
// rank 0's parameters can make the ranks agree.
//
//   data_parallel_worker --batch=128 --out=single.txt     # one process
//   RANK=.. WORLD_SIZE=2 ... data_parallel_worker --batch=64 --out=dp.txt
//   mpirun -np 2 data_parallel_worker --batch=64 --out=mpi.txt
//
// Each rank prints `loss <step> <its loss>` per step and, at the end, each
// epoch's test-set accuracy (250 samples of their own, evaluated in shards
// over the ranks) and `rank R: done, step S`; rank 0 writes the final
// weights to --out (hex floats, one line per tensor). --die_rank/--die_step end
// a rank mid-run as a crash does; --signal_rank/--signal_step make a rank send
// itself SIGTERM (a scheduler's preemption notice). Exit status: 0 when
// training finished, 75 (kPreemptedExitCode) when a signal stopped it after a
// checkpoint, 1 on an error (printed).
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "examples/mlp.kindling.h"
#include "kindling/core/check.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/image_dataset.h"
#include "kindling/distributed/connect.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/module/initializer.h"
#include "kindling/module/walk.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/classifier.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/threads.h"
#include "tests/train/tiny_run.h"

ABSL_FLAG(int64_t, batch, 64, "samples per rank per step");
ABSL_FLAG(std::string, backend, "auto", "auto, gloo or mpi");
ABSL_FLAG(std::string, out, "", "rank 0 writes the final weights here");
ABSL_FLAG(std::string, out_dir, "", "checkpoints (each epoch, and on a stop)");
ABSL_FLAG(bool, resume, false, "continue from --out_dir's latest checkpoint");
ABSL_FLAG(int64_t, bucket_bytes, 4096, "gradient bucket size");
ABSL_FLAG(int, die_rank, -1, "this rank ends at --die_step, as a crash");
ABSL_FLAG(int, signal_rank, -1, "this rank gets SIGTERM at --signal_step");
ABSL_FLAG(int64_t, die_step, 0, "");
ABSL_FLAG(int64_t, signal_step, 0, "");
ABSL_FLAG(double, timeout_s, 30, "collective timeout");
ABSL_FLAG(int, mismatch_rank, -1, "this rank builds a wider model");
ABSL_FLAG(int64_t, accumulate, 1, "micro-batches per optimizer step");
ABSL_FLAG(double, dropout, 0,
          "input dropout in training (each rank its own masks)");

namespace kindling::distributed {
namespace {

constexpr int64_t kSamples = 640;
constexpr int64_t kTestSamples = 250;  // 8 test batches of 32, the last of 26
constexpr int64_t kTestBatch = 32;
constexpr int64_t kFeatures = 16;
constexpr int64_t kClasses = 4;

data::ImageDataset SyntheticDataset(uint64_t seed = 11,
                                    int64_t samples = kSamples) {
  Generator generator(seed);
  data::ImageDataset dataset;
  dataset.images = Tensor<2>::RandomNormal({samples, kFeatures}, generator);
  dataset.labels =
      dataset.images.narrow(1, 0, kClasses).argmax(1).reshape<1>({samples});
  dataset.channels = 1;
  dataset.rows = 1;
  dataset.cols = kFeatures;
  return dataset;
}

// LazyOnlyOnRankZero() checks, after the broadcast, that `before` (a copy
// of the model taken while it was lazy) was never initialized on a rank
// other than 0: its parameters came from rank 0, its own init never ran.
bool LazyOnlyOnRankZero(const examples::Mlp& before, int rank) {
  bool ok = true;
  ForEachLeaf(before, [&](std::string_view path, const auto& leaf) {
    if (rank != 0 && leaf.is_initialized()) {
      std::printf("FAIL rank %d initialized %s itself\n", rank,
                  std::string(path).c_str());
      ok = false;
    }
  });
  return ok;
}

int Run() {
  train::SetCpuThreads(1);
  train::InstallInterruptHandler();
  absl::StatusOr<LaunchEnvironment> launch = ReadLaunchEnvironment();
  if (!launch.ok()) {
    std::printf("error: %s\n", launch.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<Backend> backend = ParseBackend(absl::GetFlag(FLAGS_backend));
  KINDLING_CHECK(backend.ok(), "%s", backend.status().ToString());
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(
      *launch, {.backend = *backend,
                .timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s))});
  if (!comm.ok()) {
    std::printf("error: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = (*comm)->rank();
  SetInitSeed(100 + rank);  // only rank 0's initialization may survive
  examples::Mlp model =
      examples::MlpConfig{
          .d_input = kFeatures,
          .d_hidden = rank == absl::GetFlag(FLAGS_mismatch_rank) ? 33 : 32,
          .hidden_layers = 1,
          .num_classes = kClasses}
          .Init();
  const examples::Mlp lazy_copy = model;
  data::DataLoader loader(SyntheticDataset(),
                          {.batch_size = absl::GetFlag(FLAGS_batch),
                           .seed = 5,
                           .shard_index = rank,
                           .shard_count = (*comm)->world_size()});
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 1e-2});
  KINDLING_CHECK(optimizer.ok(), "%s", optimizer.status().ToString());
  optimizer->set_schedule(LrSchedule::Cosine(20, 1e-4));
  const int64_t die_step = absl::GetFlag(FLAGS_die_step);
  const int64_t signal_step = absl::GetFlag(FLAGS_signal_step);
  const bool dies = rank == absl::GetFlag(FLAGS_die_rank);
  const bool signalled = rank == absl::GetFlag(FLAGS_signal_rank);
  train::ClassifierTrainer<examples::Mlp> trainer(
      model, *optimizer, loader, SyntheticDataset(13, kTestSamples),
      [p = absl::GetFlag(FLAGS_dropout)](
          const examples::Mlp& m, const data::Batch& batch,
          nn::ForwardMode mode, PhiloxGenerator& rng) {
        Tensor<2> x = batch.images;
        if (p > 0 && mode == nn::ForwardMode::kTraining) {
          const uint64_t offset = ops::ReserveDropoutBlocks(rng, x.base());
          x = x * Tensor<2>(ops::DropoutMask(x.shape(), x.dtype(), x.device(),
                                             p, rng.seed(), offset));
        }
        return m.Forward(x);
      },
      {.epochs = 4,
       .out_dir = absl::GetFlag(FLAGS_out_dir),
       .resume = absl::GetFlag(FLAGS_resume),
       .eval_batch_size = kTestBatch,
       .progress = {.quiet = true},
       .on_step =
           [&](int64_t step, double loss) {
             std::printf("loss %lld %.9g\n", static_cast<long long>(step),
                         loss);
             std::fflush(stdout);
             if (dies && step == die_step) std::_Exit(9);
             if (signalled && step == signal_step) std::raise(SIGTERM);
           },
       .communicator = comm->get(),
       .gradient_sync = {.bucket_bytes = absl::GetFlag(FLAGS_bucket_bytes)},
       .accumulation_steps = absl::GetFlag(FLAGS_accumulate)});
  absl::StatusOr<train::TrainReport> report = trainer.Run();
  if (!report.ok()) {
    std::printf("error: rank %d: %s\n", rank,
                report.status().ToString().c_str());
    return 1;
  }
  if (!absl::GetFlag(FLAGS_resume) && !LazyOnlyOnRankZero(lazy_copy, rank)) {
    return 1;
  }
  for (const train::EpochReport& epoch : report->epochs) {
    std::printf("rank %d: epoch %lld test_accuracy %.9g\n", rank,
                static_cast<long long>(epoch.epoch),
                epoch.metric("test_accuracy"));
  }
  std::printf("rank %d: %s, step %lld, signal %d, %lld buckets\n", rank,
              report->stopped_early ? "stopped" : "done",
              static_cast<long long>(report->final_state.step),
              report->stop_signal,
              static_cast<long long>(report->communication.buckets));
  if (rank == 0 && !absl::GetFlag(FLAGS_out).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_out)) << train_test::WeightsText(model);
  }
  if (report->stop_signal == SIGTERM || report->stop_signal == SIGUSR1) {
    return train::kPreemptedExitCode;
  }
  return 0;
}

}  // namespace
}  // namespace kindling::distributed

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kindling::distributed::Run();
}
