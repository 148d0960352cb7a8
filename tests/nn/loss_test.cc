// The fused losses (kindling/nn/loss.h): values and input gradients against
// PyTorch (tests/nn/torch_loss_reference.txt, written by
// make_torch_loss_reference.py), and gradients against finite differences in
// f64, including non-contiguous inputs and batch size 1.
#include "kindling/nn/loss.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling::nn {
namespace {

using testing::Gradcheck;
using testing::RandomLeaf;
using testing::ToDoubles;
using Inputs = std::span<const TensorBase>;

// --- The PyTorch reference file ----------------------------------------------

struct Values {
  Shape shape;
  std::vector<double> data;
};
using Case = std::map<std::string, Values>;

std::map<std::string, Case> ReadReference() {
  std::ifstream file("tests/nn/torch_loss_reference.txt");
  EXPECT_TRUE(file.good()) << "cannot open tests/nn/torch_loss_reference.txt";
  std::map<std::string, Case> cases;
  std::string line, current;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "case") {
      words >> current;
      continue;
    }
    Values values;
    std::string word;
    while (words >> word && word != ":")
      values.shape.push_back(std::stoll(word));
    double value;
    while (words >> value) values.data.push_back(value);
    cases[current][key] = values;
  }
  return cases;
}

const Values& Get(const Case& c, const std::string& key) {
  const auto it = c.find(key);
  KINDLING_CHECK(it != c.end(), "reference has no %s", key);
  return it->second;
}

Tensor<1, Int> Labels(const Values& values) {
  std::vector<int64_t> labels(values.data.begin(), values.data.end());
  return Tensor<1, Int>::FromData(labels, values.shape);
}

// Leaf() is an f64 leaf holding `values`, flattened to rank D (1 or the
// file's own rank).
template <int D>
Tensor<D> Leaf(const Values& values) {
  const TensorBase base = TensorBase::FromHost(values.data.data(), values.shape,
                                               DType::kF64, Device::Cpu());
  const Shape shape = D == 1 ? Shape{base.numel()} : values.shape;
  return Tensor<D>(base.Reshape(shape)).set_require_grad(true);
}

void ExpectNear(const std::vector<double>& expected,
                const std::vector<double>& actual, double tolerance,
                const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(expected[i], actual[i], tolerance) << what << " element " << i;
  }
}

class TorchReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cases_ = new auto(ReadReference()); }
  static void TearDownTestSuite() { delete cases_; }
  static const Case& Reference(const std::string& name) {
    const auto it = cases_->find(name);
    KINDLING_CHECK(it != cases_->end(), "reference has no case %s", name);
    return it->second;
  }
  static std::map<std::string, Case>* cases_;
};
std::map<std::string, Case>* TorchReferenceTest::cases_ = nullptr;

TEST_F(TorchReferenceTest, CrossEntropyMatchesPyTorch) {
  for (const char* name :
       {"cross_entropy", "cross_entropy_smoothed",
        "cross_entropy_smoothed_batch1", "cross_entropy_large_logits"}) {
    const Case& c = Reference(name);
    const Tensor<2> logits = Leaf<2>(Get(c, "logits"));
    const Tensor<0> loss = CrossEntropy(logits, Labels(Get(c, "labels")),
                                        Get(c, "smoothing").data[0]);
    ExpectNear(Get(c, "loss").data, {loss.item<double>()}, 1e-12, name);
    const Gradients grads = Backward(loss);
    ExpectNear(Get(c, "grad_logits").data,
               ToDoubles(*grads.Get(logits.leaf_id())), 1e-12, name);
  }
}

TEST_F(TorchReferenceTest, CrossEntropyInF32MatchesPyTorch) {
  const Case& c = Reference("cross_entropy_smoothed");
  const Tensor<2> logits =
      Leaf<2>(Get(c, "logits")).detach().to(DType::kF32).set_require_grad(true);
  const Tensor<0> loss = CrossEntropy(logits, Labels(Get(c, "labels")), 0.1);
  EXPECT_EQ(DType::kF32, loss.dtype());
  ExpectNear(Get(c, "loss").data, {loss.item<double>()}, 1e-5, "f32 loss");
  const Gradients grads = Backward(loss);
  const TensorBase grad = *grads.Get(logits.leaf_id());
  EXPECT_EQ(DType::kF32, grad.dtype());
  ExpectNear(Get(c, "grad_logits").data, ToDoubles(grad), 1e-6, "f32 grad");
}

TEST_F(TorchReferenceTest, MseMatchesPyTorch) {
  const Case& c = Reference("mse");
  const Tensor<2> prediction = Leaf<2>(Get(c, "prediction"));
  const Tensor<2> target = Leaf<2>(Get(c, "target"));
  const Tensor<0> loss = MseLoss(prediction, target);
  ExpectNear(Get(c, "loss").data, {loss.item<double>()}, 1e-12, "mse");
  const Gradients grads = Backward(loss);
  ExpectNear(Get(c, "grad_prediction").data,
             ToDoubles(*grads.Get(prediction.leaf_id())), 1e-12, "mse");
  ExpectNear(Get(c, "grad_target").data,
             ToDoubles(*grads.Get(target.leaf_id())), 1e-12, "mse");
}

TEST_F(TorchReferenceTest, BinaryCrossEntropyWithLogitsMatchesPyTorch) {
  for (const char* name : {"bce_with_logits", "bce_with_logits_large"}) {
    const Case& c = Reference(name);
    const Tensor<1> logits = Leaf<1>(Get(c, "logits"));
    const Tensor<1> targets = Leaf<1>(Get(c, "targets"));
    const Tensor<0> loss = BinaryCrossEntropyWithLogits(logits, targets);
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << name;
    ExpectNear(Get(c, "loss").data, {loss.item<double>()}, 1e-12, name);
    const Gradients grads = Backward(loss);
    ExpectNear(Get(c, "grad_logits").data,
               ToDoubles(*grads.Get(logits.leaf_id())), 1e-12, name);
    ExpectNear(Get(c, "grad_targets").data,
               ToDoubles(*grads.Get(targets.leaf_id())), 1e-12, name);
  }
}

// --- Finite differences
// ---------------------------------------------------------

TensorBase LabelTensor(const std::vector<int64_t>& labels) {
  return TensorBase::FromHost(labels.data(),
                              Shape{static_cast<int64_t>(labels.size())},
                              DType::kI64, Device::Cpu());
}

TEST(CrossEntropyGradientTest, FiniteDifferencesWithAndWithoutSmoothing) {
  Generator generator(3);
  const Tensor<1, Int> labels(LabelTensor({2, 0, 4}));
  for (const double smoothing : {0.0, 0.2, 1.0}) {
    EXPECT_TRUE(Gradcheck(
        [&](Inputs x) {
          return CrossEntropy(Tensor<2>(x[0]), labels, smoothing).base();
        },
        {RandomLeaf({3, 5}, generator)}))
        << "label_smoothing " << smoothing;
  }
}

TEST(CrossEntropyGradientTest, TransposedLogitsAndBatchOfOne) {
  Generator generator(4);
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return CrossEntropy(Tensor<2>(x[0].Transpose(0, 1)),
                            Tensor<1, Int>(LabelTensor({1, 3, 0})), 0.1)
            .base();
      },
      {RandomLeaf({4, 3}, generator)}));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return CrossEntropy(Tensor<2>(x[0]), Tensor<1, Int>(LabelTensor({5})))
            .base();
      },
      {RandomLeaf({1, 6}, generator)}));
}

TEST(CrossEntropyGradientTest, RecordsOneNode) {
  Generator generator(5);
  const TensorBase logits = RandomLeaf({2, 3}, generator);
  const Tensor<0> loss =
      CrossEntropy(Tensor<2>(logits), Tensor<1, Int>(LabelTensor({0, 2})));
  ASSERT_NE(nullptr, loss.base().autodiff_meta()->node);
  EXPECT_STREQ("cross_entropy", loss.base().autodiff_meta()->node->name());
  // Its only edge leads straight to the leaf.
  EXPECT_EQ(logits.autodiff_meta(),
            loss.base().autodiff_meta()->node->inputs()[0].meta);
}

TEST(CrossEntropyGradientTest, NoGradientNeededRecordsNothing) {
  Generator generator(6);
  const TensorBase logits = RandomLeaf({2, 3}, generator).Detach();
  const Tensor<0> loss =
      CrossEntropy(Tensor<2>(logits), Tensor<1, Int>(LabelTensor({0, 2})));
  EXPECT_FALSE(loss.is_require_grad());
}

TEST(MseGradientTest, FiniteDifferencesBothOperands) {
  Generator generator(7);
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return MseLoss(Tensor<2>(x[0].Transpose(0, 1)), Tensor<2>(x[1])).base();
      },
      {RandomLeaf({4, 3}, generator), RandomLeaf({3, 4}, generator)}));
}

TEST(BinaryCrossEntropyGradientTest, FiniteDifferencesBothOperands) {
  Generator generator(8);
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return BinaryCrossEntropyWithLogits(Tensor<2>(x[0]),
                                            Tensor<2>(x[1].Transpose(0, 1)))
            .base();
      },
      {RandomLeaf({2, 5}, generator, -4, 4),
       RandomLeaf({5, 2}, generator, 0, 1)}));
}

TEST(BinaryCrossEntropyGradientTest, HugeLogitsStayFinite) {
  const Tensor<1> logits =
      Tensor<1>::FromData<float>({-1000, 1000}, {2}).set_require_grad(true);
  const Tensor<1> targets = Tensor<1>::FromData<float>({0, 1}, {2});
  const Tensor<0> loss = BinaryCrossEntropyWithLogits(logits, targets);
  EXPECT_EQ(0.0, loss.item<double>());
  const std::vector<double> grad =
      ToDoubles(*Backward(loss).Get(logits.leaf_id()));
  EXPECT_EQ(0.0, grad[0]);
  EXPECT_EQ(0.0, grad[1]);
}

}  // namespace
}  // namespace kindling::nn
