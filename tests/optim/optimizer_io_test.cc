// Optimizer::Save / Load: bit-exact resume, matching by ParamId and by
// remapped path, and all-or-nothing errors.
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/autodiff/gradients.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/module_file.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"
#include "kindling/module/erased.h"
#include "kindling/optim/optimizer.h"
#include "tests/optim/optim_test_modules.kindling.h"

namespace {

using ::kindling::DType;
using ::kindling::Gradients;
using ::kindling::Optimizer;
using ::kindling::Param;
using ::kindling::ParamId;
using ::kindling::Tensor;
using ::kindling::TensorBase;
using ::optimtest::ParamFrom;
using ::optimtest::Ramp;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// GradsFor(): a gradient per parameter depending on its path and the step.
template <class M>
Gradients GradsFor(const M& model, int step) {
  Gradients grads;
  kindling::VisitParamsErased(model, [&](const kindling::ParamView& param) {
    const int64_t n = param.lazy_shape().num_elements();
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      values[i] = std::sin(0.37f * static_cast<float>(i + 1) * (step + 1) +
                           static_cast<float>(param.path().size()));
    }
    grads.Set(
        param.id(),
        Tensor<1>::FromData(values, {n}).base().Reshape(param.lazy_shape()));
  });
  return grads;
}

// Bits(): every parameter's value, in walk order, for exact comparison.
template <class M>
std::vector<std::vector<float>> Bits(const M& model) {
  std::vector<std::vector<float>> values;
  kindling::VisitParamsErased(model, [&](const kindling::ParamView& param) {
    values.push_back(Tensor<1>(param.value().Reshape({-1})).to_data<float>());
  });
  return values;
}

using MakeOptimizer = std::function<absl::StatusOr<Optimizer>()>;

// Resume test: 3 steps, save model and optimizer, load both into fresh
// objects, 3 more steps; equal bit for bit to 6 uninterrupted steps.
void ExpectBitExactResume(const MakeOptimizer& make, const std::string& tag) {
  optimtest::Net straight = optimtest::MakeNet();
  absl::StatusOr<Optimizer> straight_optimizer = make();
  ASSERT_TRUE(straight_optimizer.ok());
  straight_optimizer->set_schedule(
      kindling::LrSchedule::CosineWithWarmup(2, 8));
  for (int step = 0; step < 6; ++step) {
    ASSERT_TRUE(
        straight_optimizer->Step(straight, GradsFor(straight, step)).ok());
  }

  const std::string model_path = TempPath(tag + ".model.safetensors");
  const std::string optimizer_path = TempPath(tag + ".optim.safetensors");
  {
    optimtest::Net first = optimtest::MakeNet();
    absl::StatusOr<Optimizer> optimizer = make();
    ASSERT_TRUE(optimizer.ok());
    optimizer->set_schedule(kindling::LrSchedule::CosineWithWarmup(2, 8));
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(optimizer->Step(first, GradsFor(first, step)).ok());
    }
    ASSERT_TRUE(kindling::SaveModule(first, model_path).ok());
    ASSERT_TRUE(optimizer->Save(first, optimizer_path).ok());
  }
  // A fresh process would build the model anew (new ids) and load both.
  optimtest::Net resumed = optimtest::MakeNet();
  ASSERT_TRUE(kindling::LoadModule(resumed, model_path).ok());
  absl::StatusOr<Optimizer> optimizer = make();
  ASSERT_TRUE(optimizer.ok());
  optimizer->set_schedule(kindling::LrSchedule::CosineWithWarmup(2, 8));
  absl::Status loaded = optimizer->Load(resumed, optimizer_path);
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_EQ(3, optimizer->step_count());
  for (int step = 3; step < 6; ++step) {
    ASSERT_TRUE(optimizer->Step(resumed, GradsFor(resumed, step)).ok());
  }
  EXPECT_EQ(Bits(straight), Bits(resumed)) << tag;
}

TEST(OptimizerIoTest, ResumeIsBitExactAdamAmsgrad) {
  ExpectBitExactResume(
      [] { return Optimizer::Adam({.lr = 0.01, .amsgrad = true}); }, "adam");
}

TEST(OptimizerIoTest, ResumeIsBitExactAdamWWithGroups) {
  ExpectBitExactResume(
      [] {
        return Optimizer::AdamW(
            {.lr = 0.02, .weight_decay = 0.1},
            {{.pattern = ".*bias|.*norm.*", .weight_decay = 0.0},
             {.pattern = "fc2\\..*", .lr = 0.005}});
      },
      "adamw");
}

TEST(OptimizerIoTest, ResumeIsBitExactSgdNesterov) {
  ExpectBitExactResume(
      [] {
        return Optimizer::Sgd({.lr = 0.05,
                               .momentum = 0.9,
                               .weight_decay = 1e-3,
                               .nesterov = true});
      },
      "sgd");
}

TEST(OptimizerIoTest, ResumeIsBitExactRmsPropCenteredWithMomentum) {
  ExpectBitExactResume(
      [] {
        return Optimizer::RmsProp({.lr = 0.01,
                                   .weight_decay = 0.01,
                                   .momentum = 0.5,
                                   .centered = true});
      },
      "rmsprop");
}

TEST(OptimizerIoTest, ResumeIsBitExactLion) {
  ExpectBitExactResume(
      [] { return Optimizer::Lion({.lr = 0.003, .weight_decay = 0.1}); },
      "lion");
}

TEST(OptimizerIoTest, LoadRestoresHyperParametersAndGroups) {
  optimtest::Net model = optimtest::MakeNet();
  absl::StatusOr<Optimizer> saved =
      Optimizer::AdamW({.lr = 0.125}, {{.pattern = "fc2\\..*", .lr = 0.25}});
  ASSERT_TRUE(saved.ok());
  ASSERT_TRUE(saved->Step(model, GradsFor(model, 0)).ok());
  const std::string path = TempPath("hyper.safetensors");
  ASSERT_TRUE(saved->Save(model, path).ok());

  absl::StatusOr<Optimizer> loaded = Optimizer::AdamW({});
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->Load(model, path).ok());
  EXPECT_EQ(0.125, loaded->LearningRate("fc1.weight"));
  EXPECT_EQ(0.25, loaded->LearningRate("fc2.weight"));
  EXPECT_EQ(1, loaded->step_count());

  auto file = kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok());
  const auto& header = (*file)->header();
  EXPECT_NE(nullptr, header.Find("fc1.weight.exp_avg"));
  EXPECT_NE(nullptr, header.Find("norm.gamma.exp_avg_sq"));
  ASSERT_NE(nullptr, header.FindMetadata("kindling.optim.type"));
  EXPECT_EQ("adamw", *header.FindMetadata("kindling.optim.type"));
  ASSERT_NE(nullptr, header.FindMetadata("kindling.optim.param_id.fc1.weight"));
  EXPECT_EQ(model.fc1.weight.id().ToString(),
            *header.FindMetadata("kindling.optim.param_id.fc1.weight"));
  EXPECT_EQ("1", *header.FindMetadata("kindling.optim.param_step.fc1.weight"));
}

// A saved Vector ("weight") loaded into RenamedVector ("w").
class RenamedFieldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    optimtest::Vector model{ParamFrom<1>(Ramp(5, 0.5f), {5})};
    id_ = model.weight.id();
    absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({});
    ASSERT_TRUE(optimizer.ok());
    ASSERT_TRUE(optimizer->Step(model, GradsFor(model, 0)).ok());
    exp_avg_ =
        Tensor<1>(*optimizer->state_tensor(id_, "exp_avg")).to_data<float>();
    path_ = TempPath("renamed.safetensors");
    ASSERT_TRUE(optimizer->Save(model, path_).ok());
  }

  ParamId id_ = ParamId::FromValue(0);
  std::vector<float> exp_avg_;
  std::string path_;
};

TEST_F(RenamedFieldTest, StateFollowsTheParamId) {
  optimtest::RenamedVector renamed{
      Param<Tensor<1>>::Initialized(id_, Tensor<1>::Zeros({5}))};
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({});
  ASSERT_TRUE(optimizer.ok());
  ASSERT_TRUE(optimizer->Load(renamed, path_).ok());
  EXPECT_EQ(
      exp_avg_,
      Tensor<1>(*optimizer->state_tensor(id_, "exp_avg")).to_data<float>());
}

TEST_F(RenamedFieldTest, RemapRuleMatchesANewId) {
  optimtest::RenamedVector renamed{ParamFrom<1>(Ramp(5, 0.0f), {5})};
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({});
  ASSERT_TRUE(optimizer.ok());
  absl::Status unmatched = optimizer->Load(renamed, path_);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, unmatched.code());
  EXPECT_THAT(unmatched.message(),
              HasSubstr("the state of `weight` (param id " + id_.ToString() +
                        ") matches no parameter of the model"));
  ASSERT_TRUE(
      optimizer->Load(renamed, path_, {.key_remap = {{"^weight$", "w"}}}).ok());
  EXPECT_EQ(exp_avg_,
            Tensor<1>(*optimizer->state_tensor(renamed.w.id(), "exp_avg"))
                .to_data<float>());
}

// Rewrite() copies a saved state file, changing its metadata and dropping or
// adding tensors, to build broken files.
void Rewrite(const std::string& from, const std::string& to,
             const std::function<void(
                 std::vector<std::pair<std::string, std::string>>&)>& edit_meta,
             const std::string& drop_tensor, bool add_extra) {
  auto file = kindling::io::TensorFile::Open(from);
  ASSERT_TRUE(file.ok());
  const auto& header = (*file)->header();
  auto metadata = header.metadata();
  edit_meta(metadata);
  std::vector<kindling::io::TensorSpec> specs;
  std::vector<TensorBase> tensors;
  for (const auto& info : header.tensors()) {
    if (info.name == drop_tensor) continue;
    specs.push_back({info.name, info.dtype, info.shape});
    auto tensor = kindling::io::ReadTensor(*file, info, DType::kF32,
                                           kindling::Device::Cpu());
    ASSERT_TRUE(tensor.ok());
    tensors.push_back(*tensor);
  }
  if (add_extra) {
    specs.push_back(
        {"stray.exp_avg", kindling::io::SafetensorsDType::kF32, {1}});
    tensors.push_back(Tensor<1>::Zeros({1}).base());
  }
  uint64_t data_size = 0;
  auto encoded =
      kindling::io::EncodeSafetensorsHeader(specs, metadata, &data_size);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  auto out = kindling::io::AtomicFile::Create(to);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Write(*encoded).ok());
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(
        kindling::io::WriteTensorData(*out, tensors[i], specs[i].dtype).ok());
  }
  ASSERT_TRUE(out->Commit().ok());
}

class LoadErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 0.01});
    ASSERT_TRUE(optimizer.ok());
    ASSERT_TRUE(optimizer->Step(model_, GradsFor(model_, 0)).ok());
    good_ = TempPath("good.safetensors");
    ASSERT_TRUE(optimizer->Save(model_, good_).ok());

    // The optimizer under test has state of its own, which a failed load
    // must leave alone.
    absl::StatusOr<Optimizer> target = Optimizer::Adam({.lr = 0.01});
    ASSERT_TRUE(target.ok());
    target_.emplace(*std::move(target));
    for (int step = 0; step < 2; ++step) {
      ASSERT_TRUE(target_->Step(model_, GradsFor(model_, 5 + step)).ok());
    }
    before_ = ExpAvg();
  }

  std::vector<float> ExpAvg() const {
    return Tensor<2>(*target_->state_tensor(model_.fc1.weight.id(), "exp_avg"))
        .to_data<float>();
  }

  // ExpectFailure() loads `path` and checks the error and that nothing
  // changed.
  void ExpectFailure(const std::string& path, const std::string& message) {
    absl::Status status = target_->Load(model_, path);
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code()) << status;
    EXPECT_THAT(status.message(), HasSubstr(message));
    EXPECT_EQ(2, target_->step_count());
    EXPECT_EQ(before_, ExpAvg());
  }

  optimtest::Net model_ = optimtest::MakeNet();
  std::string good_;
  std::optional<Optimizer> target_;
  std::vector<float> before_;
};

auto SetMeta(const std::string& key, const std::string& value) {
  return [key, value](std::vector<std::pair<std::string, std::string>>& meta) {
    for (auto& [k, v] : meta) {
      if (k == key) v = value;
    }
  };
}
void KeepMeta(std::vector<std::pair<std::string, std::string>>&) {}

// A rule name no built-in rule has (a user's rule, or a corrupt file).
TEST_F(LoadErrorTest, UnknownOptimizerType) {
  const std::string path = TempPath("mystery.safetensors");
  Rewrite(good_, path, SetMeta("kindling.optim.type", "mystery"), "", false);
  ExpectFailure(path,
                "the file holds `mystery` state but this optimizer is `adam`");
}

TEST_F(LoadErrorTest, OtherOptimizerType) {
  const std::string path = TempPath("sgd.safetensors");
  Rewrite(good_, path, SetMeta("kindling.optim.type", "sgd"), "", false);
  ExpectFailure(path,
                "the file holds `sgd` state but this optimizer is `adam`");
}

TEST_F(LoadErrorTest, MissingTensor) {
  const std::string path = TempPath("missing.safetensors");
  Rewrite(good_, path, KeepMeta, "fc2.bias.exp_avg_sq", false);
  ExpectFailure(path, "missing tensor `fc2.bias.exp_avg_sq`");
}

TEST_F(LoadErrorTest, UnexpectedTensor) {
  const std::string path = TempPath("extra.safetensors");
  Rewrite(good_, path, KeepMeta, "", true);
  ExpectFailure(path, "unexpected tensor `stray.exp_avg`");
}

TEST_F(LoadErrorTest, ShapeMismatchNamesTheKey) {
  // The same ids on a model whose fc1 is wider.
  optimtest::Net wider = model_;
  wider.fc1.weight = Param<Tensor<2>>::Initialized(model_.fc1.weight.id(),
                                                   Tensor<2>::Zeros({3, 5}));
  absl::Status status = target_->Load(wider, good_);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(),
              HasSubstr("`fc1.weight.exp_avg` is F32[3, 4] but parameter "
                        "`fc1.weight` is f32[3, 5]"));
  EXPECT_EQ(before_, ExpAvg());
}

TEST_F(LoadErrorTest, DtypeMismatchNamesTheKey) {
  optimtest::Net half = model_;
  half.norm.gamma = Param<Tensor<1>>::Initialized(
      model_.norm.gamma.id(), Tensor<1>::Zeros({4}).to(DType::kF16));
  absl::Status status = target_->Load(half, good_);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(), HasSubstr("`norm.gamma.exp_avg` is F32[4] "
                                          "but parameter `norm.gamma` is f16"));
  EXPECT_EQ(before_, ExpAvg());
}

TEST_F(LoadErrorTest, NotAnOptimizerFile) {
  const std::string path = TempPath("model.safetensors");
  ASSERT_TRUE(kindling::SaveModule(model_, path).ok());
  ExpectFailure(path, "not an optimizer state file");
}

TEST_F(LoadErrorTest, MissingFileIsAnError) {
  absl::Status status = target_->Load(model_, TempPath("absent.safetensors"));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(2, target_->step_count());
}

}  // namespace
