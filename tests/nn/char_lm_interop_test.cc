// examples/char_lm.h against its PyTorch 1.13 twin
// (benches/peers/char_lm_torch.py --export wrote testdata/torch_char_lm*):
// the torch model's state_dict loads through the PyTorch adapter and gives
// the same logits; bad input is an error naming what is wrong.
#include <cmath>
#include <string>
#include <vector>

#include "examples/char_lm.kindling.h"
#include "gtest/gtest.h"
#include "kindling/io/module_file.h"
#include "kindling/io/tensor_file.h"
#include "kindling/tensor/tensor.h"

namespace {

using kindling::Int;
using kindling::Tensor;

constexpr char kData[] = "tests/nn/testdata/";

template <int D, kindling::TensorKind K = kindling::Float>
Tensor<D, K> Read(const std::string& key) {
  auto file = kindling::io::TensorFile::Open(std::string(kData) +
                                             "torch_char_lm_io.safetensors");
  EXPECT_TRUE(file.ok()) << file.status();
  const auto* info = (*file)->header().Find(key);
  EXPECT_NE(nullptr, info) << key;
  auto tensor = kindling::io::ReadTensor(*file, *info, K::kDefaultDType,
                                         kindling::Device::Cpu());
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  return Tensor<D, K>(*tensor);
}

examples::CharLm TorchTwin() {
  examples::CharLm model =
      examples::CharLmConfig{
          .layers = 2, .d_model = 16, .heads = 2, .context = 12}
          .Init();
  kindling::LoadOptions options;
  options.pytorch = kindling::PyTorchAdapter{};
  const auto report = kindling::LoadModule(
      model, std::string(kData) + "torch_char_lm.safetensors", options);
  EXPECT_TRUE(report.ok()) << report.status();
  return model;
}

TEST(CharLmInteropTest, TorchStateDictGivesTheSameLogits) {
  const examples::CharLm model = TorchTwin();
  const Tensor<3> logits = model.Forward(Read<2, Int>("ids"), {});
  const std::vector<float> want = Read<3>("logits").to_data<float>();
  const std::vector<float> got = logits.to_data<float>();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(want[i], got[i], 1e-4) << "logit " << i;
  }
}

TEST(CharLmInteropDeathTest, BadInputIsNamed) {
  const examples::CharLm model = TorchTwin();
  EXPECT_DEATH(model.Forward(Tensor<2, Int>::Zeros({1, 13}), {}),
               "a sequence of 13 positions, but the table holds 12");
  EXPECT_DEATH(model.Forward(Tensor<2, Int>::Full({1, 4}, 256), {}), "256");
}

TEST(CharLmInteropTest, AnotherArchitectureIsRefusedNamingKeys) {
  examples::CharLm wide =
      examples::CharLmConfig{
          .layers = 2, .d_model = 32, .heads = 2, .context = 12}
          .Init();
  kindling::LoadOptions options;
  options.pytorch = kindling::PyTorchAdapter{};
  const auto report = kindling::LoadModule(
      wide, std::string(kData) + "torch_char_lm.safetensors", options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(std::string(report.status().message()).find("tokens.weight"),
            std::string::npos)
      << report.status();
}

}  // namespace
