// In-place writes and the autodiff graph: a tensor a backward saved and that
// was written in place afterwards fails Backward() (storage versions,
// kindling/tensor/saved_tensor.h); in-place writes to tensors in the graph
// are refused while grad mode is on (autodiff::CheckInPlaceWrite); and the
// legal uses (writes nothing saved, writes after backward, writes under a
// NoGradGuard, copy on write) keep working.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

Tensor<1> Values(std::vector<float> values) {
  const int64_t size = static_cast<int64_t>(values.size());
  return Tensor<1>::FromData<float>(values, {size});
}

Tensor<1> Leaf(std::vector<float> values) {
  return Values(std::move(values)).set_require_grad(true);
}

std::vector<float> GradOf(const Gradients& grads, const Tensor<1>& leaf) {
  std::optional<TensorBase> grad = grads.Get(leaf.leaf_id());
  EXPECT_TRUE(grad.has_value());
  return !grad.has_value() ? std::vector<float>()
                           : Tensor<1>(*grad).to_data<float>();
}

// --- Saved tensors written after the forward --------------------------------

TEST(InPlaceDeathTest, SavedInputWrittenAfterForwardFailsBackward) {
  const Tensor<1> w = Leaf({1, 2, 3});
  Tensor<1> x = Values({4, 5, 6});  // needs no gradient: writes are allowed
  const Tensor<0> loss = (w * x).sum();
  x.mul_(2.0);  // mul saved x for w's gradient
  EXPECT_DEATH(Backward(loss),
               "backward of 'mul': a tensor it saved, Tensor\\(f32\\[3\\], "
               "cpu\\), was modified by an in-place write after the forward "
               "saved it \\(storage version 1, saved at version 0\\)");
}

TEST(InPlaceDeathTest, LeafStepBeforeBackwardFailsBackward) {
  // The classic mistake: an optimizer-style update under NoGradGuard between
  // the forward and Backward(). matmul saved the weight for x's gradient.
  const Tensor<2> x =
      Tensor<2>::FromData<float>({1, 2, 3, 4}, {2, 2}).set_require_grad(true);
  Tensor<2> w =
      Tensor<2>::FromData<float>({1, 0, 0, 1}, {2, 2}).set_require_grad(true);
  const Tensor<0> loss = matmul(x, w).sum();
  {
    NoGradGuard no_grad;
    w.sub_(Tensor<2>::Ones({2, 2}));
  }
  EXPECT_DEATH(Backward(loss),
               "backward of 'matmul': a tensor it saved, "
               "Tensor\\(f32\\[2, 2\\], cpu\\), was modified");
}

TEST(InPlaceDeathTest, SavedResultWrittenAfterForwardFailsBackward) {
  const Tensor<1> x = Leaf({0, 1});
  Tensor<1> y = x.exp();  // exp's gradient reads its result
  const Tensor<0> loss = y.sum();
  {
    NoGradGuard no_grad;
    y.fill_(0);
  }
  EXPECT_DEATH(Backward(loss), "backward of 'exp': a tensor it saved");
}

TEST(InPlaceDeathTest, WriteThroughAnotherViewOfTheStorageIsSeen) {
  const Tensor<1> w = Leaf({1, 2, 3, 4});
  Tensor<1> data = Values({1, 1, 1, 1});
  const Tensor<0> loss = (w * data.narrow(0, 0, 4)).sum();
  Tensor<1> tail = data.narrow(0, 2, 2);
  tail.fill_(7);
  EXPECT_DEATH(Backward(loss), "backward of 'mul'");
}

TEST(InPlaceDeathTest, WriteBetweenRetainedBackwardsFailsTheSecond) {
  Tensor<1> w = Leaf({1, 2});
  const Tensor<1> x = Values({3, 4});
  const Tensor<0> loss = (w * w * x).sum();
  BackwardOptions retain;
  retain.retain_graph = true;
  const Gradients grads = Backward(loss, retain);
  {
    NoGradGuard no_grad;
    w.sub_(Tensor<1>(*grads.Get(w.leaf_id())));
  }
  EXPECT_DEATH(Backward(loss, retain), "was modified");
}

// --- Writes refused while grad mode is on -----------------------------------

TEST(InPlaceDeathTest, WriteToLeafThatRequiresGradIsRefused) {
  Tensor<1> w = Leaf({1, 2});
  EXPECT_DEATH(w.add_(Values({1, 1})),
               "add_: in-place write to Tensor\\(f32\\[2\\], cpu\\), a leaf "
               "that requires grad, while grad mode is on");
  EXPECT_DEATH(w.fill_(0), "fill_: in-place write to .*a leaf");
  EXPECT_DEATH(w.mul_(2.0), "mul_: in-place write to .*a leaf");
  EXPECT_DEATH(w.assign_(Values({0, 0})),
               "assign_: in-place write to .*a leaf");
}

TEST(InPlaceDeathTest, WriteToGraphResultIsRefused) {
  const Tensor<1> w = Leaf({1, 2});
  Tensor<1> y = w * 2.0;
  EXPECT_DEATH(y.mul_(3.0),
               "mul_: in-place write to Tensor\\(f32\\[2\\], cpu\\), the "
               "result of 'mul' in an autodiff graph");
}

TEST(InPlaceDeathTest, WriteFromTensorThatRequiresGradIsRefused) {
  const Tensor<1> w = Leaf({1, 2});
  Tensor<1> buffer = Values({0, 0});
  EXPECT_DEATH(buffer.add_(w),
               "add_: in-place write from Tensor\\(f32\\[2\\], cpu\\), which "
               "requires grad, .*its gradient would be lost");
}

// --- Legal uses --------------------------------------------------------------

TEST(InPlaceTest, WritingAnInputNoBackwardSavedIsAllowed) {
  // add's gradient reads neither operand, so nothing it needs changed.
  const Tensor<1> w = Leaf({1, 2});
  Tensor<1> x = Values({3, 4});
  const Tensor<0> loss = (w + x).sum();
  x.fill_(100);
  EXPECT_EQ((std::vector<float>{1, 1}), GradOf(Backward(loss), w));
}

TEST(InPlaceTest, WritesAfterBackwardAndUnderNoGradWork) {
  Tensor<1> w = Leaf({1, 2});
  const Tensor<1> x = Values({3, 4});
  for (int step = 0; step < 3; ++step) {
    const Gradients grads = Backward((w * x).sum());
    EXPECT_EQ((std::vector<float>{3, 4}), GradOf(grads, w));
    NoGradGuard no_grad;  // an SGD step in place, as an optimizer takes it
    Tensor<1> grad(*grads.Get(w.leaf_id()));
    w.sub_(grad.mul_(0.5));
  }
  EXPECT_EQ((std::vector<float>{1 - 3 * 1.5f, 2 - 3 * 2.0f}),
            w.to_data<float>());
}

TEST(InPlaceTest, NoGradWriteToALeafNoGraphSavedIsAllowed) {
  Tensor<1> w = Leaf({1, 2});
  const Tensor<0> loss = (w + 1.0).sum();  // saves nothing of w
  {
    NoGradGuard no_grad;
    w.fill_(5);
  }
  EXPECT_EQ((std::vector<float>{1, 1}), GradOf(Backward(loss), w));
  EXPECT_EQ((std::vector<float>{5, 5}), w.to_data<float>());
}

TEST(InPlaceTest, CopyOnWriteLeavesTheSavedValuesValid) {
  // A read-only borrowed input is copied on its first write: the graph's
  // saved handle keeps the original bytes, so backward is still correct.
  auto host = std::make_shared<std::vector<float>>(std::vector<float>{3, 4});
  Tensor<1> x = Tensor<1>::Borrow(host->data(), {2}, DType::kF32, host,
                                  /*read_only=*/true);
  const Tensor<1> w = Leaf({1, 2});
  const Tensor<0> loss = (w * x).sum();
  x.mul_(10.0);
  EXPECT_EQ((std::vector<float>{30, 40}), x.to_data<float>());
  EXPECT_EQ((std::vector<float>{3, 4}), GradOf(Backward(loss), w));
}

TEST(InPlaceTest, EveryInPlaceWriteBumpsTheStorageVersion) {
  Tensor<1> t = Values({1, 2});
  const Storage& storage = *t.base().storage();
  EXPECT_EQ(0u, storage.version());
  t.add_(Values({1, 1}));
  t.sub_(Values({1, 1}));
  t.mul_(Values({2, 2}));
  t.div_(Values({2, 2}));
  t.mul_(3.0);
  t.fill_(1);
  t.assign_(Values({5, 6}));
  EXPECT_EQ(7u, storage.version());
  // Out-of-place ops and views write nothing.
  const Tensor<1> sum = t + t;
  const Tensor<1> view = t.narrow(0, 0, 1);
  EXPECT_EQ(7u, storage.version());
  EXPECT_EQ(0u, sum.base().storage()->version());
}

}  // namespace
}  // namespace kindling
