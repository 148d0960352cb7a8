// Kindling's optimizers, schedules and clipping against PyTorch 1.13's
// numbers, written by make_torch_optim_reference.py into
// testdata/torch_optim_reference.safetensors.
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "kindling/autodiff/gradients.h"
#include "kindling/io/tensor_file.h"
#include "kindling/optim/clip.h"
#include "kindling/optim/lr_schedule.h"
#include "kindling/optim/optimizer.h"
#include "tests/optim/optim_test_modules.kindling.h"

namespace {

using ::kindling::AdamOptions;
using ::kindling::AdamWOptions;
using ::kindling::DType;
using ::kindling::Gradients;
using ::kindling::LrSchedule;
using ::kindling::Optimizer;
using ::kindling::ParamId;
using ::kindling::SgdOptions;
using ::kindling::Tensor;
using ::kindling::TensorBase;

constexpr char kReference[] =
    "tests/optim/testdata/torch_optim_reference.safetensors";

// Reference: the file's tensors, read as flat host vectors.
class Reference {
 public:
  Reference() {
    auto file = kindling::io::TensorFile::Open(kReference);
    KINDLING_CHECK(file.ok(), "%s", std::string(file.status().message()));
    file_ = *file;
  }

  bool Has(const std::string& key) const {
    return file_->header().Find(key) != nullptr;
  }

  TensorBase Read(const std::string& key, DType dtype) const {
    const auto* info = file_->header().Find(key);
    KINDLING_CHECK(info != nullptr, "reference has no `%s`", key);
    auto tensor =
        kindling::io::ReadTensor(file_, *info, dtype, kindling::Device::Cpu());
    KINDLING_CHECK(tensor.ok(), "%s", std::string(tensor.status().message()));
    return *tensor;
  }

  std::vector<float> Floats(const std::string& key) const {
    return Tensor<1>(Read(key, DType::kF32).Reshape({-1})).to_data<float>();
  }
  std::vector<double> Doubles(const std::string& key) const {
    return Tensor<1>(Read(key, DType::kF64).Reshape({-1})).to_data<double>();
  }
  kindling::Shape ShapeOf(const std::string& key) const {
    const auto* info = file_->header().Find(key);
    return kindling::Shape(std::span<const int64_t>(info->shape));
  }

 private:
  std::shared_ptr<const kindling::io::TensorFile> file_;
};

// ExpectClose() compares within 1e-6 relative (plus a 1e-7 absolute floor
// for values near zero).
void ExpectClose(const std::vector<double>& expected,
                 const std::vector<double>& actual, const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(expected[i], actual[i], 1e-6 * std::fabs(expected[i]) + 1e-7)
        << what << " element " << i;
  }
}
std::vector<double> Widen(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// The optimizer of each case in make_torch_optim_reference.py's CASES.
absl::StatusOr<Optimizer> MakeCase(const std::string& name) {
  if (name == "sgd_plain") return Optimizer::Sgd({.lr = 0.1});
  if (name == "sgd_momentum") {
    return Optimizer::Sgd({.lr = 0.1, .momentum = 0.9});
  }
  if (name == "sgd_dampening") {
    return Optimizer::Sgd({.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  }
  if (name == "sgd_nesterov") {
    return Optimizer::Sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true});
  }
  if (name == "sgd_weight_decay") {
    return Optimizer::Sgd({.lr = 0.1, .momentum = 0.8, .weight_decay = 0.05});
  }
  if (name == "adam_default") return Optimizer::Adam({});
  if (name == "adam_lr") {
    return Optimizer::Adam({.lr = 0.05, .betas = {0.8, 0.95}});
  }
  if (name == "adam_weight_decay") {
    return Optimizer::Adam({.lr = 0.05, .weight_decay = 0.1});
  }
  if (name == "adam_amsgrad") {
    return Optimizer::Adam({.lr = 0.05, .eps = 1e-6, .amsgrad = true});
  }
  if (name == "adamw_default") return Optimizer::AdamW({.lr = 0.05});
  if (name == "adamw_amsgrad") {
    return Optimizer::AdamW({.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
  }
  if (name == "rmsprop_default") return Optimizer::RmsProp({});
  if (name == "rmsprop_weight_decay") {
    return Optimizer::RmsProp({.lr = 0.02, .eps = 1e-6, .weight_decay = 0.1});
  }
  if (name == "rmsprop_momentum_centered") {
    return Optimizer::RmsProp({.lr = 0.01,
                               .alpha = 0.9,
                               .weight_decay = 0.05,
                               .momentum = 0.8,
                               .centered = true});
  }
  return absl::NotFoundError(name);
}

const char* const kCases[] = {"sgd_plain",
                              "sgd_momentum",
                              "sgd_dampening",
                              "sgd_nesterov",
                              "sgd_weight_decay",
                              "adam_default",
                              "adam_lr",
                              "adam_weight_decay",
                              "adam_amsgrad",
                              "adamw_default",
                              "adamw_amsgrad",
                              "rmsprop_default",
                              "rmsprop_weight_decay",
                              "rmsprop_momentum_centered"};

// ExpectTrajectory() steps `optimizer` from `param0` with the `steps`
// gradients in `grads` (row-major [steps, N]) and compares the parameter
// after each step with row step + 1 of `expected` ([steps + 1, N]).
void ExpectTrajectory(Optimizer& optimizer, const std::vector<float>& param0,
                      const std::vector<float>& grads, int64_t steps,
                      const std::vector<float>& expected,
                      const std::string& name) {
  const int64_t n = static_cast<int64_t>(param0.size());
  optimtest::Vector model{optimtest::ParamFrom<1>(param0, {n})};
  for (int64_t step = 0; step < steps; ++step) {
    Gradients gradients;
    std::vector<float> grad(grads.begin() + step * n,
                            grads.begin() + (step + 1) * n);
    gradients.Set(model.weight.id(), Tensor<1>::FromData(grad, {n}).base());
    ASSERT_TRUE(optimizer.Step(model, gradients).ok());
    std::vector<float> want(expected.begin() + (step + 1) * n,
                            expected.begin() + (step + 2) * n);
    ExpectClose(Widen(want), Widen(model.weight->to_data<float>()),
                name + " after step " + std::to_string(step + 1));
  }
}

class TrajectoryTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TrajectoryTest, MatchesPyTorchStepByStep) {
  const std::string name = GetParam();
  Reference reference;
  ASSERT_TRUE(reference.Has("traj." + name)) << "rerun the generator";
  const std::vector<float> param0 = reference.Floats("traj.param0");
  const kindling::Shape grads_shape = reference.ShapeOf("traj.grads");
  const std::vector<float> grads = reference.Floats("traj.grads");
  const std::vector<float> expected = reference.Floats("traj." + name);
  absl::StatusOr<Optimizer> optimizer = MakeCase(name);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  ExpectTrajectory(*optimizer, param0, grads, grads_shape[0], expected, name);
}

INSTANTIATE_TEST_SUITE_P(Cases, TrajectoryTest, ::testing::ValuesIn(kCases));

// Lion has no PyTorch 1.13 implementation: its reference is the paper's
// Algorithm 2, written here in f32 with each operation rounded once, in the
// order lion_rule.cc applies them, over the same parameter and gradients
// as the PyTorch cases.
std::vector<float> ReferenceLion(std::vector<float> param,
                                 const std::vector<float>& grads, int64_t steps,
                                 float lr, float beta1, float beta2,
                                 float weight_decay) {
  const int64_t n = static_cast<int64_t>(param.size());
  std::vector<float> exp_avg(n, 0.0f);
  std::vector<float> trajectory = param;
  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t i = 0; i < n; ++i) {
      const float g = grads[step * n + i];
      const float c = exp_avg[i] * beta1 + g * (1.0f - beta1);
      const float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : 0.0f);
      if (weight_decay != 0) param[i] *= 1.0f - lr * weight_decay;
      param[i] += sign * -lr;
      exp_avg[i] = exp_avg[i] * beta2 + g * (1.0f - beta2);
    }
    trajectory.insert(trajectory.end(), param.begin(), param.end());
  }
  return trajectory;
}

TEST(LionTest, MatchesTheReferenceStepByStep) {
  Reference reference;
  const std::vector<float> param0 = reference.Floats("traj.param0");
  const std::vector<float> grads = reference.Floats("traj.grads");
  const int64_t steps = reference.ShapeOf("traj.grads")[0];
  struct Case {
    kindling::LionOptions options;
    const char* name;
  };
  const Case cases[] = {
      {{}, "defaults"},
      {{.lr = 0.01, .betas = {0.8, 0.95}, .weight_decay = 0.5}, "decay"},
  };
  for (const Case& c : cases) {
    const std::vector<float> expected =
        ReferenceLion(param0, grads, steps, static_cast<float>(c.options.lr),
                      static_cast<float>(c.options.betas.first),
                      static_cast<float>(c.options.betas.second),
                      static_cast<float>(c.options.weight_decay));
    absl::StatusOr<Optimizer> optimizer = Optimizer::Lion(c.options);
    ASSERT_TRUE(optimizer.ok()) << optimizer.status();
    ExpectTrajectory(*optimizer, param0, grads, steps, expected,
                     std::string("lion ") + c.name);
  }
}

// sign(0) is 0: a first step with a zero gradient (exp_avg starts at 0)
// moves nothing but the weight decay.
TEST(LionTest, ZeroInterpolationDoesNotMove) {
  optimtest::Vector model{optimtest::ParamFrom<1>({1.0f, -2.0f}, {2})};
  absl::StatusOr<Optimizer> optimizer =
      Optimizer::Lion({.lr = 0.1, .weight_decay = 0.5});
  ASSERT_TRUE(optimizer.ok());
  Gradients gradients;
  gradients.Set(model.weight.id(),
                Tensor<1>::FromData({0.0f, 0.0f}, {2}).base());
  ASSERT_TRUE(optimizer->Step(model, gradients).ok());
  EXPECT_EQ((std::vector<float>{0.95f, -1.9f}), model.weight->to_data<float>());
}

TEST(LrScheduleTest, MatchesPyTorchSchedulers) {
  Reference reference;
  const std::map<std::string, LrSchedule> schedules = {
      {"constant", LrSchedule::Constant()},
      {"step", LrSchedule::Step(7, 0.5)},
      {"linear_warmup", LrSchedule::LinearWarmup(5, 0.25)},
      {"cosine", LrSchedule::Cosine(20, 0.001)},
      {"cosine_warmup", LrSchedule::CosineWithWarmup(5, 30, 0.001, 0.1)},
      {"sequential3", LrSchedule::Sequential({LrSchedule::LinearWarmup(3, 0.5),
                                              LrSchedule::Step(4, 0.5),
                                              LrSchedule::Cosine(10, 0.0)},
                                             {6, 14})},
  };
  for (const auto& [name, schedule] : schedules) {
    const std::vector<double> expected = reference.Doubles("lr." + name);
    std::vector<double> actual;
    for (size_t step = 0; step < expected.size(); ++step) {
      actual.push_back(schedule.LearningRate(0.1, step));
    }
    ExpectClose(expected, actual, "schedule " + name);
  }
}

// LambdaLR's rule, base_lr * factor(completed steps): a lambda written as
// StepLR's formula gives StepLR's rates, alone and inside Sequential (where
// it counts its steps from its milestone), and survives a copy.
TEST(LrScheduleTest, LambdaScalesTheBaseRateByItsFactor) {
  const LrSchedule step = LrSchedule::Step(7, 0.5);
  const LrSchedule lambda = LrSchedule::Lambda(
      [](int64_t t) { return std::pow(0.5, static_cast<double>(t / 7)); });
  const LrSchedule copy = lambda;
  const LrSchedule warm_then_lambda =
      LrSchedule::Sequential({LrSchedule::LinearWarmup(3, 0.5), lambda}, {3});
  const LrSchedule warm_then_step =
      LrSchedule::Sequential({LrSchedule::LinearWarmup(3, 0.5), step}, {3});
  for (int64_t t = 0; t < 30; ++t) {
    EXPECT_EQ(step.LearningRate(0.1, t), lambda.LearningRate(0.1, t)) << t;
    EXPECT_EQ(step.LearningRate(0.1, t), copy.LearningRate(0.1, t)) << t;
    EXPECT_EQ(warm_then_step.LearningRate(0.1, t),
              warm_then_lambda.LearningRate(0.1, t))
        << t;
  }
}

TEST(LrScheduleDeathTest, LambdaFactorThatIsNotAFiniteNonNegativeDies) {
  const LrSchedule negative =
      LrSchedule::Lambda([](int64_t t) { return t < 4 ? 1.0 : -0.5; });
  EXPECT_EQ(0.1, negative.LearningRate(0.1, 3));
  EXPECT_DEATH(negative.LearningRate(0.1, 4),
               "LrSchedule::Lambda: factor\\(4\\) is -0.5");
  const LrSchedule nan = LrSchedule::Lambda([](int64_t) { return NAN; });
  EXPECT_DEATH(nan.LearningRate(0.1, 0), "factor\\(0\\) is nan");
  EXPECT_DEATH(LrSchedule::Lambda(nullptr), "factor is empty");
}

TEST(LrScheduleTest, OptimizerUsesTheScheduledRate) {
  // SGD without momentum moves by exactly lr * grad, so the parameter's
  // trajectory reads the schedule back.
  optimtest::Vector model{optimtest::ParamFrom<1>({0.0f}, {1})};
  absl::StatusOr<Optimizer> optimizer = Optimizer::Sgd({.lr = 0.5});
  ASSERT_TRUE(optimizer.ok());
  const LrSchedule schedule = LrSchedule::Step(2, 0.1);
  optimizer->set_schedule(schedule);
  double expected = 0;
  for (int step = 0; step < 5; ++step) {
    EXPECT_DOUBLE_EQ(schedule.LearningRate(0.5, step),
                     optimizer->LearningRate("weight"));
    Gradients grads;
    grads.Set(model.weight.id(), Tensor<1>::FromData({-1.0f}, {1}).base());
    ASSERT_TRUE(optimizer->Step(model, grads).ok());
    expected += schedule.LearningRate(0.5, step);
    EXPECT_NEAR(expected, model.weight->to_data<float>()[0], 1e-6);
  }
}

// The clipping cases of the generator: the three gradients in, clipped out.
class ClipTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ClipTest, MatchesPyTorch) {
  const std::string name = GetParam();
  Reference reference;
  Gradients grads;
  std::vector<ParamId> ids;
  for (int i = 0; i < 3; ++i) {
    const std::string key = "clip.grads." + std::to_string(i);
    ids.push_back(ParamId::New());
    grads.Set(ids.back(), reference.Read(key, DType::kF32).Clone());
  }
  const std::map<std::string, std::pair<double, double>> norm_cases = {
      {"norm2", {1.0, 2.0}},
      {"norm2_loose", {100.0, 2.0}},
      {"norm1", {2.0, 1.0}},
      {"norm_inf", {0.5, std::numeric_limits<double>::infinity()}},
      {"norm3", {1.5, 3.0}},
  };
  if (name == "value") {
    ASSERT_TRUE(kindling::ClipGradValue(grads, 0.7).ok());
  } else {
    const auto [max_norm, norm_type] = norm_cases.at(name);
    absl::StatusOr<double> norm =
        kindling::ClipGradNorm(grads, max_norm, norm_type);
    ASSERT_TRUE(norm.ok()) << norm.status();
    ExpectClose(reference.Doubles("clip." + name + ".norm"), {*norm},
                name + " norm");
  }
  for (int i = 0; i < 3; ++i) {
    const std::string key = "clip." + name + "." + std::to_string(i);
    std::optional<TensorBase> clipped = grads.Get(ids[i]);
    ASSERT_TRUE(clipped.has_value());
    ExpectClose(Widen(reference.Floats(key)),
                Widen(Tensor<1>(clipped->Reshape({-1})).to_data<float>()), key);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ClipTest,
                         ::testing::Values("norm2", "norm2_loose", "norm1",
                                           "norm_inf", "norm3", "value"));

}  // namespace
