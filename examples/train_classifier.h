// TrainClassifier(): what the training examples do after parsing flags:
// train a model on Fashion-MNIST with Adam under a cosine schedule, print
// the test accuracy each epoch, checkpoint each epoch (Ctrl-C saves too,
// --resume continues), reload the checkpoint lazily into a fresh model,
// evaluate it again, and end with one summary line. --device picks where the
// model and training live (cpu, cuda, cuda:N).
//
// Data parallel: started as a rank of a job (--nproc, kindling-launch,
// RANK/WORLD_SIZE/MASTER_*, mpirun), each rank trains on its shard of
// every step's --batch_size samples and the Trainer averages the gradients;
// every rank evaluates its shard of the test set after each epoch, and
// rank 0 prints, checkpoints and checks the checkpoint. SIGTERM or SIGUSR1 (a
// scheduler's preemption notice) stops at the next step after a checkpoint
// and exits with kPreemptedExitCode (75); --resume continues.
#ifndef KINDLING_EXAMPLES_TRAIN_CLASSIFIER_H_
#define KINDLING_EXAMPLES_TRAIN_CLASSIFIER_H_

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/data_parallel.h"
#include "examples/train_flags.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/mnist.h"
#include "kindling/distributed/rank_device.h"
#include "kindling/module/initializer.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/classifier.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/threads.h"

namespace examples {

// DeviceFromFlag() is --device parsed for this rank of `job` (a bare
// "cuda" is cuda:LOCAL_RANK, see distributed/rank_device.h), or an error that
// says what to do: a spelling Device::Parse() rejects, a device whose backend
// this binary was built without (the CUDA backend links only under
// --config=cuda), or one other than the GPU the job's NCCL communicator
// reduces on.
inline absl::StatusOr<kindling::Device> DeviceFromFlag(
    const std::string& program, const Job& job) {
  const std::string text = absl::GetFlag(FLAGS_device);
  absl::StatusOr<kindling::Device> device =
      kindling::distributed::RankDevice(text, job.launch);
  if (!device.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device: ", device.status().message()));
  }
  if (!kindling::HasBackend(device->type()) ||
      !kindling::HasDeviceMemory(device->type())) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device=", text, ": this binary has no backend for ",
                     device->ToString(),
                     "; build it with --config=cuda (tools/bazel run "
                     "--config=cuda //examples:",
                     program, " -- --device=", text, ")"));
  }
  const kindling::Device reduces_on = job.communicator->device();
  if (!reduces_on.is_cpu() && *device != reduces_on) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", text, ": rank ", job.rank(), "'s ",
                     job.communicator->backend(), " communicator reduces on ",
                     reduces_on.ToString(),
                     ", so the model must live there (--device=cuda "
                     "picks it)"));
  }
  return *device;
}

// TrainClassifier() runs as this process's part of `job` (JoinJob()) and
// returns the process exit code: 0 when training ran and
// the reloaded model evaluates exactly as the trained one. make_model(device)
// builds a lazy model on `device` (--device), so its parameters initialize
// there; the trainer moves each batch to it.
template <class M, class MakeModel>
int TrainClassifier(
    const std::string& name, const Job& job, const MakeModel& make_model,
    typename kindling::train::ClassifierTrainer<M>::ForwardFn forward) {
  namespace data = kindling::data;
  namespace train = kindling::train;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  if (absl::GetFlag(FLAGS_bucket_kib) < 1 ||
      absl::GetFlag(FLAGS_bucket_kib) > (int64_t{1} << 30)) {
    std::fprintf(stderr, "%s: --bucket_kib=%lld is not in [1, 2^30]\n",
                 name.c_str(),
                 static_cast<long long>(absl::GetFlag(FLAGS_bucket_kib)));
    return 2;
  }
  if (batch_size % job.world_size() != 0) {
    std::fprintf(
        stderr, "%s: --batch_size=%lld is not a multiple of the %d ranks\n",
        name.c_str(), static_cast<long long>(batch_size), job.world_size());
    return 2;
  }
  const absl::StatusOr<kindling::Device> device = DeviceFromFlag(name, job);
  if (!device.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(),
                 std::string(device.status().message()).c_str());
    return 2;
  }
  const data::MnistOptions mnist{.directory = absl::GetFlag(FLAGS_data_dir)};
  absl::StatusOr<data::ImageDataset> train_set =
      data::LoadMnistLike(data::MnistSplit::kTrain, mnist);
  absl::StatusOr<data::ImageDataset> test_set =
      data::LoadMnistLike(data::MnistSplit::kTest, mnist);
  if (!train_set.ok() || !test_set.ok()) {
    std::fprintf(stderr, "loading Fashion-MNIST failed: %s %s\n",
                 train_set.status().ToString().c_str(),
                 test_set.status().ToString().c_str());
    return 1;
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  kindling::SetInitSeed(seed);
  M model = make_model(*device);
  data::DataLoader loader(*train_set,
                          {.batch_size = batch_size / job.world_size(),
                           .seed = seed,
                           .shard_index = job.rank(),
                           .shard_count = job.world_size()});
  const int64_t epochs = absl::GetFlag(FLAGS_epochs);
  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Adam({.lr = absl::GetFlag(FLAGS_lr)});
  if (!optimizer.ok()) {
    std::fprintf(stderr, "%s\n", optimizer.status().ToString().c_str());
    return 1;
  }
  optimizer->set_schedule(kindling::LrSchedule::Cosine(
      epochs * loader.batches_per_epoch(), /*min_lr=*/0));

  std::string out_dir = absl::GetFlag(FLAGS_out_dir);
  if (out_dir.empty()) {
    const char* test_dir = std::getenv("TEST_TMPDIR");  // set by bazel test
    out_dir = std::string(test_dir ? test_dir : "/tmp") + "/kindling_" + name;
  }
  std::printf(
      "training on Fashion-MNIST on %s, %d CPU threads, checkpoints in %s\n",
      device->ToString().c_str(), train::CpuThreads(), out_dir.c_str());
  if (job.world_size() > 1) {
    std::printf(
        "data parallel: %d ranks (%s), %d CPU threads each, %lld "
        "samples per rank per step\n",
        job.world_size(), job.communicator->backend().c_str(),
        train::CpuThreads(),
        static_cast<long long>(batch_size / job.world_size()));
  }
  train::InstallInterruptHandler();
  train::ClassifierTrainer<M> trainer(
      model, *optimizer, loader, *test_set, forward,
      {.epochs = epochs,
       .max_steps = absl::GetFlag(FLAGS_max_steps),
       .out_dir = out_dir,
       .resume = absl::GetFlag(FLAGS_resume),
       .dropout_seed = seed,
       .communicator = job.trainer_communicator(),
       .gradient_sync = {.bucket_bytes = absl::GetFlag(FLAGS_bucket_kib)
                                         << 10}});
  absl::StatusOr<train::TrainReport> report = trainer.Run();
  if (!report.ok()) {
    std::fprintf(stderr, "training failed: %s\n",
                 report.status().ToString().c_str());
    return 1;
  }
  const int stop_code =
      report->stop_signal == SIGTERM || report->stop_signal == SIGUSR1
          ? train::kPreemptedExitCode
          : 0;
  if (job.rank() != 0) return stop_code;  // rank 0 checks the checkpoint
  if (job.world_size() > 1) {
    const kindling::distributed::GradientSyncStats& sync =
        report->communication;
    std::printf(
        "gradient all-reduce: %lld steps, %lld buckets, %.1f MB, %.2f s on "
        "the communication thread, %.2f s of it not hidden behind "
        "backward\n",
        static_cast<long long>(sync.steps),
        static_cast<long long>(sync.buckets), sync.bytes / 1e6,
        sync.communication_seconds, sync.exposed_seconds);
  }
  // A stop mid-epoch: the model as it is now, which the checkpoint holds
  // (not the last finished epoch's accuracy).
  const double accuracy = report->epochs.empty() || report->stopped_early
                              ? trainer.Accuracy()
                              : report->epochs.back().metric("test_accuracy");
  std::printf("test accuracy of the trained model: %.4f\n", accuracy);

  // A fresh lazy model: no init runs, the values come from the checkpoint
  // (borrowed from the file's pages where possible).
  M reloaded = make_model(*device);
  absl::StatusOr<kindling::Optimizer> reloaded_optimizer =
      kindling::Optimizer::Adam({});
  absl::StatusOr<train::TrainState> state = train::LoadLatestTrainingCheckpoint(
      out_dir, reloaded, *reloaded_optimizer);
  if (!state.ok()) {
    std::fprintf(stderr, "reload failed: %s\n",
                 state.status().ToString().c_str());
    return 1;
  }
  const double reloaded_accuracy =
      train::EvaluateAccuracy(reloaded, *test_set, forward);
  std::printf(
      "checkpoint %s (step %lld) reloaded: test accuracy %.4f, matches: %s\n",
      train::LatestCheckpointDir(out_dir)->c_str(),
      static_cast<long long>(state->step), reloaded_accuracy,
      reloaded_accuracy == accuracy ? "yes" : "NO");
  const double wall =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "%s: test accuracy %.4f, %lld epochs, wall %.1f s (training %.3f s), "
      "%.0f samples/s%s\n",
      name.c_str(), accuracy, static_cast<long long>(report->epochs.size()),
      wall, report->train_seconds,
      report->samples_per_second() * job.world_size(),  // equal shards
      report->stopped_early ? " (stopped early)" : "");
  if (stop_code != 0) {
    std::printf("stopped by %s: exit %d, --resume continues\n",
                report->stop_signal == SIGTERM ? "SIGTERM" : "SIGUSR1",
                stop_code);
  }
  return reloaded_accuracy == accuracy ? stop_code : 1;
}

}  // namespace examples

#endif  // KINDLING_EXAMPLES_TRAIN_CLASSIFIER_H_
