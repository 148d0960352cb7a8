// Optimizer::Step semantics: tied and frozen parameters, missing gradients,
// parameter groups, in-place updates without allocation, read-only storage,
// 16-bit parameters and errors.
#include "kindling/optim/optimizer.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/autodiff/gradients.h"
#include "kindling/module/erased.h"
#include "kindling/optim/clip.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/update_rule.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "tests/optim/optim_test_modules.kindling.h"

namespace {

using ::kindling::Device;
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

// GradsFor() gives every parameter of `model` a gradient that depends on its
// path and `step` only, so two models of one structure get equal gradients.
template <class M>
Gradients GradsFor(const M& model, int step, DType dtype = DType::kF32) {
  Gradients grads;
  kindling::VisitParamsErased(model, [&](const kindling::ParamView& param) {
    const int64_t n = param.lazy_shape().num_elements();
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      values[i] = std::sin(0.7f * static_cast<float>(i + 1) +
                           0.3f * static_cast<float>(step) +
                           static_cast<float>(param.path().size()));
    }
    TensorBase grad =
        Tensor<1>::FromData(values, {n}).base().Reshape(param.lazy_shape());
    grads.Set(param.id(), grad.To(dtype));
  });
  return grads;
}

std::vector<float> Values(const Tensor<2>& t) { return t.to_data<float>(); }
std::vector<float> Values(const Tensor<1>& t) { return t.to_data<float>(); }

TEST(OptimizerStepTest, TiedWeightsAreSteppedOnceAndStayTied) {
  Param<Tensor<2>> embed = ParamFrom<2>(Ramp(6, 0.5f), {2, 3});
  optimtest::Tied model{embed, embed, ParamFrom<2>(Ramp(4, 1.0f), {2, 2})};
  model.frozen = model.frozen.set_require_grad(false);
  absl::StatusOr<Optimizer> optimizer = Optimizer::Sgd({.lr = 0.1});
  ASSERT_TRUE(optimizer.ok());
  Gradients grads;
  grads.Set(embed.id(), Tensor<2>::Full({2, 3}, 1.0).base());
  grads.Set(model.frozen.id(), Tensor<2>::Full({2, 2}, 1.0).base());
  const std::vector<float> before = Values(*embed);
  const std::vector<float> frozen_before = Values(*model.frozen);

  ASSERT_TRUE(optimizer->Step(model, grads).ok());

  const std::vector<float> after = Values(*model.encoder_embed);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_FLOAT_EQ(before[i] - 0.1f, after[i]) << "stepped exactly once";
  }
  EXPECT_TRUE(model.encoder_embed.shares_state_with(model.decoder_embed));
  EXPECT_EQ(after, Values(*model.decoder_embed));
  EXPECT_EQ(frozen_before, Values(*model.frozen));
  EXPECT_FALSE(optimizer->has_state(model.frozen.id()));
}

TEST(OptimizerStepTest, ParamsWithoutGradientKeepParamAndState) {
  optimtest::Net model = optimtest::MakeNet();
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 0.01});
  ASSERT_TRUE(optimizer.ok());
  ASSERT_TRUE(optimizer->Step(model, GradsFor(model, 0)).ok());
  const std::vector<float> fc2_weight = Values(*model.fc2.weight);
  const std::vector<float> fc2_exp_avg =
      Tensor<2>(*optimizer->state_tensor(model.fc2.weight.id(), "exp_avg"))
          .to_data<float>();

  // Second step: only fc1.weight has a gradient (PyTorch: p.grad is None).
  Gradients grads;
  grads.Set(model.fc1.weight.id(),
            *GradsFor(model, 1).Get(model.fc1.weight.id()));
  const std::vector<float> fc1_weight = Values(*model.fc1.weight);
  ASSERT_TRUE(optimizer->Step(model, grads).ok());

  EXPECT_NE(fc1_weight, Values(*model.fc1.weight));
  EXPECT_EQ(fc2_weight, Values(*model.fc2.weight));
  EXPECT_EQ(fc2_exp_avg, Tensor<2>(*optimizer->state_tensor(
                                       model.fc2.weight.id(), "exp_avg"))
                             .to_data<float>());
  EXPECT_EQ(2, optimizer->step_count());
}

TEST(OptimizerStepTest, StateIsCreatedLazilyWithTheParamsDtype) {
  optimtest::Net model = optimtest::MakeNet();
  absl::StatusOr<Optimizer> optimizer = Optimizer::AdamW({.amsgrad = true});
  ASSERT_TRUE(optimizer.ok());
  EXPECT_FALSE(optimizer->has_state(model.fc1.weight.id()));
  ASSERT_TRUE(optimizer->Step(model, GradsFor(model, 0)).ok());
  for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
    const TensorBase* state =
        optimizer->state_tensor(model.fc1.weight.id(), name);
    ASSERT_NE(state, nullptr) << name;
    EXPECT_EQ(model.fc1.weight->shape(), state->shape());
    EXPECT_EQ(DType::kF32, state->dtype());
    EXPECT_EQ(Device::Cpu(), state->device());
  }
  EXPECT_EQ(nullptr,
            optimizer->state_tensor(model.fc1.weight.id(), "momentum_buffer"));
}

// Every optimizer configuration allocates its state on the first step and
// nothing after it (RMSprop and Lion through their fused CPU kernels).
TEST(OptimizerStepTest, NoTensorAllocationAfterTheFirstStep) {
  std::vector<absl::StatusOr<Optimizer>> optimizers;
  optimizers.push_back(Optimizer::Sgd({.lr = 0.1}));
  optimizers.push_back(
      Optimizer::Sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true}));
  optimizers.push_back(Optimizer::Adam({.weight_decay = 0.1}));
  optimizers.push_back(Optimizer::AdamW({.amsgrad = true}));
  optimizers.push_back(Optimizer::RmsProp(
      {.weight_decay = 0.1, .momentum = 0.9, .centered = true}));
  optimizers.push_back(Optimizer::RmsProp({}));
  optimizers.push_back(Optimizer::Lion({.weight_decay = 0.1}));
  for (auto& optimizer : optimizers) {
    ASSERT_TRUE(optimizer.ok());
    optimtest::Net model = optimtest::MakeNet();
    std::vector<Gradients> grads;
    for (int step = 0; step < 4; ++step) grads.push_back(GradsFor(model, step));
    const void* fc1_storage = model.fc1.weight->base().data();
    ASSERT_TRUE(optimizer->Step(model, grads[0]).ok());
    kindling::ResetMemoryStats(Device::Cpu());
    for (int step = 1; step < 4; ++step) {
      ASSERT_TRUE(optimizer->Step(model, grads[step]).ok());
    }
    EXPECT_EQ(0, kindling::GetMemoryStats(Device::Cpu()).allocation_count)
        << optimizer->type();
    EXPECT_EQ(fc1_storage, model.fc1.weight->base().data()) << "in place";
  }
}

TEST(OptimizerStepTest, GroupsChooseLrAndWeightDecayByPath) {
  optimtest::Net model = optimtest::MakeNet();
  // Biases and norms: no decay. fc2.*: lr 0.5. fc2.bias matches the first
  // group, so it keeps the default lr; the first match wins.
  absl::StatusOr<Optimizer> optimizer =
      Optimizer::Sgd({.lr = 0.1, .weight_decay = 0.2},
                     {{.pattern = R"(.*bias|.*norm.*)", .weight_decay = 0.0},
                      {.pattern = R"(fc2\..*)", .lr = 0.5}});
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  EXPECT_DOUBLE_EQ(0.1, optimizer->LearningRate("fc1.weight"));
  EXPECT_DOUBLE_EQ(0.5, optimizer->LearningRate("fc2.weight"));
  EXPECT_DOUBLE_EQ(0.1, optimizer->LearningRate("fc2.bias"));

  Gradients grads = GradsFor(model, 0);
  auto expect_update = [&](const auto& param, double lr, double decay,
                           const std::vector<float>& before) {
    const std::vector<float> grad =
        Tensor<1>(grads.Get(param.id())->Reshape({-1})).to_data<float>();
    const std::vector<float> after = param->template to_data<float>();
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_NEAR(before[i] - lr * (grad[i] + decay * before[i]), after[i],
                  1e-6);
    }
  };
  const auto fc1_weight = Values(*model.fc1.weight);
  const auto fc1_bias = Values(**model.fc1.bias);
  const auto gamma = Values(*model.norm.gamma);
  const auto fc2_weight = Values(*model.fc2.weight);
  const auto fc2_bias = Values(**model.fc2.bias);
  ASSERT_TRUE(optimizer->Step(model, grads).ok());
  expect_update(model.fc1.weight, 0.1, 0.2, fc1_weight);
  expect_update(*model.fc1.bias, 0.1, 0.0, fc1_bias);
  expect_update(model.norm.gamma, 0.1, 0.0, gamma);
  expect_update(model.fc2.weight, 0.5, 0.2, fc2_weight);
  expect_update(*model.fc2.bias, 0.1, 0.0, fc2_bias);
}

TEST(OptimizerStepTest, ReadOnlyStorageGetsAPrivateCopyKeptTied) {
  // A weight borrowing read-only memory, as from a read-only mapping, used
  // in two fields.
  auto memory = std::make_shared<std::vector<float>>(Ramp(6, 0.5f));
  const std::vector<float> original = *memory;
  Param<Tensor<2>> embed = Param<Tensor<2>>::Initialized(
      ParamId::New(), Tensor<2>::Borrow(memory->data(), {2, 3}, DType::kF32,
                                        memory, /*read_only=*/true)
                          .set_require_grad(true));
  optimtest::Tied model{embed, embed, ParamFrom<2>(Ramp(4, 1.0f), {2, 2})};
  absl::StatusOr<Optimizer> optimizer = Optimizer::Sgd({.lr = 0.1});
  ASSERT_TRUE(optimizer.ok());
  Gradients grads;
  grads.Set(embed.id(), Tensor<2>::Full({2, 3}, 1.0).base());

  ASSERT_TRUE(optimizer->Step(model, grads).ok());

  EXPECT_EQ(original, *memory) << "read-only memory must not be written";
  const std::vector<float> after = Values(*model.encoder_embed);
  for (size_t i = 0; i < original.size(); ++i) {
    EXPECT_FLOAT_EQ(original[i] - 0.1f, after[i]);
  }
  EXPECT_TRUE(model.encoder_embed.shares_state_with(model.decoder_embed));
  EXPECT_EQ(embed.id(), model.encoder_embed.id());
  EXPECT_TRUE(model.encoder_embed->is_require_grad());
  // The copy is writable, so the next step writes it in place.
  const void* storage = model.encoder_embed->base().data();
  ASSERT_TRUE(optimizer->Step(model, grads).ok());
  EXPECT_EQ(storage, model.encoder_embed->base().data());
}

// A weight that is a transposed view of contiguous storage (a PyTorch-layout
// Linear weight borrowed from a checkpoint) steps exactly as a contiguous
// copy of it does, with every rule (fused CPU kernels for SGD and Adam), in
// place, and its state saves and loads like any other.
TEST(OptimizerStepTest, TransposedViewParamStepsLikeAContiguousOne) {
  for (const char* rule : {"sgd", "adamw", "rmsprop"}) {
    SCOPED_TRACE(rule);
    const auto make = [&]() -> absl::StatusOr<Optimizer> {
      if (std::string_view(rule) == "sgd") {
        return Optimizer::Sgd({.lr = 0.1, .momentum = 0.9});
      }
      if (std::string_view(rule) == "adamw")
        return Optimizer::AdamW({.lr = 0.01});
      return Optimizer::RmsProp({.lr = 0.01});
    };
    // [out, in] storage, seen as [in, out].
    const Tensor<2> stored = Tensor<2>::FromData(Ramp(12, 0.5f), {4, 3});
    optimtest::Linear viewed{
        Param<Tensor<2>>::Initialized(
            ParamId::New(), Tensor<2>(stored.base().Clone().Transpose(0, 1))
                                .set_require_grad(true)),
        std::nullopt};
    optimtest::Linear packed{
        Param<Tensor<2>>::Initialized(
            ParamId::New(), Tensor<2>(viewed.weight->base().Contiguous())
                                .set_require_grad(true)),
        std::nullopt};
    ASSERT_FALSE(viewed.weight->base().is_contiguous());
    const void* storage = viewed.weight->base().data();
    absl::StatusOr<Optimizer> on_view = make();
    absl::StatusOr<Optimizer> on_packed = make();
    ASSERT_TRUE(on_view.ok() && on_packed.ok());
    for (int step = 0; step < 3; ++step) {
      Gradients view_grads, packed_grads;
      const TensorBase grad = *GradsFor(packed, step).Get(packed.weight.id());
      view_grads.Set(viewed.weight.id(), grad);
      packed_grads.Set(packed.weight.id(), grad);
      ASSERT_TRUE(on_view->Step(viewed, view_grads).ok());
      ASSERT_TRUE(on_packed->Step(packed, packed_grads).ok());
    }
    EXPECT_EQ(Values(*packed.weight), Values(*viewed.weight));
    EXPECT_EQ(storage, viewed.weight->base().data()) << "stepped in place";

    // The state round-trips through a file and keeps stepping alike.
    const std::string path =
        std::string(std::getenv("TEST_TMPDIR")) + "/" + rule + ".safetensors";
    ASSERT_TRUE(on_view->Save(viewed, path).ok());
    absl::StatusOr<Optimizer> reloaded = make();
    ASSERT_TRUE(reloaded.ok());
    ASSERT_TRUE(reloaded->Load(viewed, path).ok());
    Gradients view_grads, packed_grads;
    const TensorBase grad = *GradsFor(packed, 3).Get(packed.weight.id());
    view_grads.Set(viewed.weight.id(), grad);
    packed_grads.Set(packed.weight.id(), grad);
    ASSERT_TRUE(reloaded->Step(viewed, view_grads).ok());
    ASSERT_TRUE(on_packed->Step(packed, packed_grads).ok());
    EXPECT_EQ(Values(*packed.weight), Values(*viewed.weight));
  }
}

// f16 and bf16 parameters are updated in f32 and rounded: the trajectory
// stays within the 16-bit rounding of the f32 one. f64 ones compute in f64.
TEST(OptimizerStepTest, OtherFloatDtypesFollowTheF32Trajectory) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF64}) {
    optimtest::Vector full{ParamFrom<1>(Ramp(64, 0.5f, 0.01f), {64})};
    optimtest::Vector half{Param<Tensor<1>>::Initialized(
        ParamId::New(), full.weight->to(dtype).set_require_grad(true))};
    absl::StatusOr<Optimizer> full_optimizer = Optimizer::AdamW({.lr = 0.01});
    absl::StatusOr<Optimizer> half_optimizer = Optimizer::AdamW({.lr = 0.01});
    ASSERT_TRUE(full_optimizer.ok() && half_optimizer.ok());
    for (int step = 0; step < 5; ++step) {
      ASSERT_TRUE(full_optimizer->Step(full, GradsFor(full, step)).ok());
      ASSERT_TRUE(half_optimizer->Step(half, GradsFor(half, step, dtype)).ok());
    }
    EXPECT_EQ(dtype, half.weight->dtype());
    EXPECT_EQ(
        dtype,
        half_optimizer->state_tensor(half.weight.id(), "exp_avg")->dtype());
    const std::vector<float> expected = Values(*full.weight);
    const std::vector<float> actual = Values(half.weight->to(DType::kF32));
    const double tolerance = dtype == DType::kF16    ? 4e-3
                             : dtype == DType::kBF16 ? 3e-2
                                                     : 1e-5;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(expected[i], actual[i], tolerance * std::fabs(expected[i]))
          << kindling::DTypeName(dtype) << " element " << i;
    }
  }
}

TEST(OptimizerStepTest, BadGradientIsAnErrorAndChangesNothing) {
  optimtest::Net model = optimtest::MakeNet();
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({});
  ASSERT_TRUE(optimizer.ok());
  Gradients grads = GradsFor(model, 0);
  grads.Set(model.fc2.weight.id(), Tensor<2>::Zeros({2, 4}).base());
  const std::vector<float> fc1_weight = Values(*model.fc1.weight);

  absl::Status status = optimizer->Step(model, grads);

  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(), HasSubstr("fc2.weight"));
  EXPECT_THAT(status.message(), HasSubstr("f32[2, 4]"));
  EXPECT_EQ(fc1_weight, Values(*model.fc1.weight));
  EXPECT_FALSE(optimizer->has_state(model.fc1.weight.id()));
  EXPECT_EQ(0, optimizer->step_count());
}

TEST(OptimizerStepTest, OneIdOnTwoDifferentTensorsIsAnError) {
  Param<Tensor<2>> embed = ParamFrom<2>(Ramp(6, 0.5f), {2, 3});
  optimtest::Tied model{embed, embed.map([](Tensor<2> t) { return t.clone(); }),
                        ParamFrom<2>(Ramp(4, 1.0f), {2, 2})};
  absl::StatusOr<Optimizer> optimizer = Optimizer::Sgd({.lr = 0.1});
  ASSERT_TRUE(optimizer.ok());
  Gradients grads;
  grads.Set(embed.id(), Tensor<2>::Full({2, 3}, 1.0).base());
  absl::Status status = optimizer->Step(model, grads);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(), HasSubstr("`encoder_embed` and "
                                          "`decoder_embed` share ParamId"));
}

TEST(OptimizerOptionsTest, InvalidHyperParametersAreRejected) {
  EXPECT_THAT(Optimizer::Adam({.betas = {0.9, 1.0}}).status().message(),
              HasSubstr("betas[1] 1 must be in [0, 1)"));
  EXPECT_THAT(Optimizer::Sgd({.lr = -1}).status().message(),
              HasSubstr("lr -1 must be >= 0"));
  EXPECT_THAT(Optimizer::Sgd({.nesterov = true}).status().message(),
              HasSubstr("nesterov requires momentum > 0"));
  EXPECT_THAT(Optimizer::RmsProp({.alpha = -1}).status().message(),
              HasSubstr("Optimizer::rmsprop: alpha -1 must be >= 0"));
  EXPECT_THAT(Optimizer::Lion({.betas = {1.0, 0.99}}).status().message(),
              HasSubstr("Optimizer::lion: betas[0] 1 must be in [0, 1)"));
  EXPECT_THAT(
      Optimizer::AdamW({}, {{.pattern = "(unclosed"}}).status().message(),
      HasSubstr("pattern `(unclosed` is not a valid regular expression"));
}

TEST(OptimizerOptionsTest, DefaultsArePyTorchs) {
  const kindling::AdamOptions adam;
  EXPECT_EQ(1e-3, adam.lr);
  EXPECT_EQ(0.9, adam.betas.first);
  EXPECT_EQ(0.999, adam.betas.second);
  EXPECT_EQ(1e-8, adam.eps);
  EXPECT_EQ(0.0, adam.weight_decay);
  EXPECT_FALSE(adam.amsgrad);
  EXPECT_EQ(0.01, kindling::AdamWOptions{}.weight_decay);
  const kindling::SgdOptions sgd;
  EXPECT_EQ(0.0, sgd.momentum);
  EXPECT_EQ(0.0, sgd.dampening);
  EXPECT_FALSE(sgd.nesterov);
  const kindling::RmsPropOptions rmsprop;
  EXPECT_EQ(1e-2, rmsprop.lr);
  EXPECT_EQ(0.99, rmsprop.alpha);
  EXPECT_EQ(1e-8, rmsprop.eps);
  EXPECT_EQ(0.0, rmsprop.momentum);
  EXPECT_FALSE(rmsprop.centered);
  // Lion's paper: lr 1e-4, betas (0.9, 0.99).
  const kindling::LionOptions lion;
  EXPECT_EQ(1e-4, lion.lr);
  EXPECT_EQ(0.9, lion.betas.first);
  EXPECT_EQ(0.99, lion.betas.second);
}

// WithoutFusedKernels: while alive, no rule has a CPU kernel, so every rule
// runs its tensor-op path (what a device without kernels runs).
class WithoutFusedKernels {
 public:
  WithoutFusedKernels()
      : sgd_(Take<kindling::SgdStep>()),
        adam_(Take<kindling::AdamStep>()),
        rmsprop_(Take<kindling::RmsPropStep>()),
        lion_(Take<kindling::LionStep>()) {}
  ~WithoutFusedKernels() {
    Put<kindling::SgdStep>(sgd_);
    Put<kindling::AdamStep>(adam_);
    Put<kindling::RmsPropStep>(rmsprop_);
    Put<kindling::LionStep>(lion_);
  }

 private:
  template <class Step>
  using Kernel = typename kindling::FusedUpdates<Step>::Kernel;
  template <class Step>
  static Kernel<Step> Take() {
    const Kernel<Step> kernel =
        kindling::FusedUpdates<Step>::Find(kindling::DeviceKind::kCpu);
    kindling::FusedUpdates<Step>::Register(kindling::DeviceKind::kCpu, nullptr);
    return kernel;
  }
  template <class Step>
  static void Put(Kernel<Step> kernel) {
    kindling::FusedUpdates<Step>::Register(kindling::DeviceKind::kCpu, kernel);
  }

  Kernel<kindling::SgdStep> sgd_;
  Kernel<kindling::AdamStep> adam_;
  Kernel<kindling::RmsPropStep> rmsprop_;
  Kernel<kindling::LionStep> lion_;
};

// Every built-in rule's fused CPU kernel and its tensor-op path take the
// same steps, within rounding (the kernel may fuse a multiply-add, and keeps
// intermediates in registers), for each option that changes the formula.
TEST(OptimizerStepTest, FusedKernelsAgreeWithTheTensorOpPath) {
  using kindling::AdamOptions;
  using kindling::AdamWOptions;
  using kindling::SgdOptions;
  const std::vector<std::function<absl::StatusOr<Optimizer>()>> makers = {
      [] { return Optimizer::Sgd({.lr = 0.05}); },
      [] {
        return Optimizer::Sgd(SgdOptions{.lr = 0.05,
                                         .momentum = 0.9,
                                         .dampening = 0.1,
                                         .weight_decay = 0.01});
      },
      [] {
        return Optimizer::Sgd(
            SgdOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
      },
      [] { return Optimizer::Adam(AdamOptions{.lr = 0.01}); },
      [] {
        return Optimizer::Adam(
            AdamOptions{.lr = 0.01, .weight_decay = 0.1, .amsgrad = true});
      },
      [] {
        return Optimizer::AdamW(AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
      },
      [] { return Optimizer::RmsProp({}); },
      [] {
        return Optimizer::RmsProp({.lr = 0.01,
                                   .alpha = 0.9,
                                   .weight_decay = 0.05,
                                   .momentum = 0.8,
                                   .centered = true});
      },
      [] { return Optimizer::Lion({.lr = 0.01, .weight_decay = 0.5}); },
  };
  for (size_t which = 0; which < makers.size(); ++which) {
    optimtest::Vector fused{ParamFrom<1>(Ramp(257, 0.5f, 0.01f), {257})};
    optimtest::Vector tensor_ops{ParamFrom<1>(Ramp(257, 0.5f, 0.01f), {257})};
    absl::StatusOr<Optimizer> fused_optimizer = makers[which]();
    absl::StatusOr<Optimizer> tensor_op_optimizer = makers[which]();
    ASSERT_TRUE(fused_optimizer.ok() && tensor_op_optimizer.ok()) << which;
    for (int step = 0; step < 6; ++step) {
      ASSERT_TRUE(fused_optimizer->Step(fused, GradsFor(fused, step)).ok());
      Gradients grads;
      GradsFor(fused, step).ForEach([&](ParamId, const TensorBase& grad) {
        grads.Set(tensor_ops.weight.id(), grad);
      });
      const WithoutFusedKernels without;
      ASSERT_TRUE(tensor_op_optimizer->Step(tensor_ops, grads).ok());
    }
    const std::vector<float> want = Values(*fused.weight);
    const std::vector<float> got = Values(*tensor_ops.weight);
    ASSERT_NE(Values(*ParamFrom<1>(Ramp(257, 0.5f, 0.01f), {257})), want);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(want[i], got[i], 1e-6 * std::fabs(want[i]) + 1e-7)
          << fused_optimizer->type() << " case " << which << " element " << i;
    }
  }
}

// --- A rule of the user's own (the example in update_rule.h) ----------------

class SignSgd final : public kindling::UpdateRule {
 public:
  explicit SignSgd(double lr) : lr_(lr) {}
  std::string_view name() const override { return "sign_sgd"; }
  double lr() const override { return lr_; }
  double weight_decay() const override { return 0; }
  std::vector<std::string_view> StateNames() const override { return {}; }
  void Validate(std::vector<std::string>& errors) const override {
    kindling::CheckHyperRange(errors, "lr", lr_, 0);
  }
  void WriteHyper(kindling::HyperWriter& out) const override {
    out.Double("lr", lr_);
  }
  std::shared_ptr<const UpdateRule> ReadHyper(
      kindling::HyperReader& in) const override {
    return std::make_shared<SignSgd>(in.Double("lr"));
  }
  void Update(const kindling::UpdateContext& context,
              kindling::TensorBase& param, const kindling::TensorBase& grad,
              std::span<kindling::TensorBase> state) const override;

 private:
  double lr_;
};

// param -= lr * sign(grad), with tensor ops under no-grad.
void SignSgd::Update(const kindling::UpdateContext& context,
                     kindling::TensorBase& param,
                     const kindling::TensorBase& grad,
                     std::span<kindling::TensorBase> state) const {
  using kindling::BinaryOp;
  kindling::NoGradGuard no_grad;
  const TensorBase up =
      kindling::ops::BinaryScalar(BinaryOp::kGreater, grad, 0).To(grad.dtype());
  const TensorBase down =
      kindling::ops::BinaryScalar(BinaryOp::kLess, grad, 0).To(grad.dtype());
  kindling::ops::BinaryInPlace(
      BinaryOp::kAdd, param,
      kindling::ops::BinaryScalar(
          BinaryOp::kMul, kindling::ops::Binary(BinaryOp::kSub, up, down),
          -context.lr));
}

TEST(UserRuleTest, StepsValidatesSavesAndLoads) {
  EXPECT_THAT(
      Optimizer::FromRule(std::make_shared<SignSgd>(-1)).status().message(),
      HasSubstr("Optimizer::sign_sgd: lr -1 must be >= 0"));

  optimtest::Vector model{ParamFrom<1>({1.0f, 1.0f, 1.0f}, {3})};
  absl::StatusOr<Optimizer> optimizer =
      Optimizer::FromRule(std::make_shared<SignSgd>(0.25));
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  EXPECT_EQ("sign_sgd", optimizer->type());
  Gradients grads;
  grads.Set(model.weight.id(),
            Tensor<1>::FromData({3.0f, -0.5f, 0.0f}, {3}).base());
  ASSERT_TRUE(optimizer->Step(model, grads).ok());
  EXPECT_EQ((std::vector<float>{0.75f, 1.25f, 1.0f}), Values(*model.weight));

  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/sign_sgd.safetensors";
  ASSERT_TRUE(optimizer->Save(model, path).ok());
  // Load restores the saved lr into a rule made with another one.
  absl::StatusOr<Optimizer> loaded =
      Optimizer::FromRule(std::make_shared<SignSgd>(9.0));
  ASSERT_TRUE(loaded.ok());
  absl::Status status = loaded->Load(model, path);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(0.25, loaded->rule().lr());
  EXPECT_EQ(1, loaded->step_count());
  // Another rule refuses the file, naming both.
  absl::StatusOr<Optimizer> adam = Optimizer::Adam({});
  ASSERT_TRUE(adam.ok());
  EXPECT_THAT(adam->Load(model, path).message(),
              HasSubstr("the file holds `sign_sgd` state but this optimizer "
                        "is `adam`"));
}

TEST(ClipTest, BadArgumentsAreErrorsAndLeaveGradientsAlone) {
  Gradients grads;
  const ParamId id = ParamId::New();
  grads.Set(id, Tensor<1>::FromData({3.0f, 4.0f}, {2}).base());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            kindling::ClipGradNorm(grads, -1.0).status().code());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            kindling::ClipGradNorm(grads, 1.0, 0.0).status().code());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            kindling::ClipGradValue(grads, -0.5).code());
  EXPECT_EQ((std::vector<float>{3.0f, 4.0f}),
            Tensor<1>(*grads.Get(id)).to_data<float>());
  absl::StatusOr<double> norm = kindling::ClipGradNorm(grads, 1.0);
  ASSERT_TRUE(norm.ok());
  EXPECT_DOUBLE_EQ(5.0, *norm);
}

}  // namespace
