// Checkpoints written by real PyTorch (tests/data/make_torch_checkpoints.py)
// load into Kindling's layers and reproduce PyTorch's outputs within 1e-5;
// Kindling writes files in PyTorch's layout that read back the same way.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/module_file.h"
#include "kindling/io/tensor_file.h"
#include "kindling/nn/conv2d.kindling.h"
#include "kindling/nn/embedding.kindling.h"
#include "kindling/nn/layer_norm.kindling.h"
#include "kindling/nn/linear.kindling.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/tensor.h"

namespace {

using ::kindling::LoadModule;
using ::kindling::LoadOptions;
using ::kindling::Tensor;
using ::kindling::io::ReadTensor;
using ::kindling::io::TensorFile;
using ::testing::HasSubstr;

constexpr char kData[] = "tests/data/";

LoadOptions PyTorch() {
  LoadOptions options;
  options.pytorch = kindling::PyTorchAdapter{};
  return options;
}

// A tensor of `dtype` read from `file` (a *_io.safetensors).
template <int D, kindling::TensorKind K = kindling::Float>
Tensor<D, K> Read(const std::string& file, const std::string& key,
                  kindling::DType dtype = K::kDefaultDType) {
  auto opened = TensorFile::Open(kData + file);
  EXPECT_TRUE(opened.ok()) << opened.status();
  const auto* info = (*opened)->header().Find(key);
  EXPECT_NE(nullptr, info) << key;
  auto tensor = ReadTensor(*opened, *info, dtype, kindling::Device::Cpu());
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  return Tensor<D, K>(*tensor);
}

template <int D>
void ExpectNear(const Tensor<D>& expected, const Tensor<D>& actual,
                double tolerance = 1e-5) {
  ASSERT_EQ(expected.shape(), actual.shape());
  const std::vector<float> want = expected.template to_data<float>();
  const std::vector<float> got = actual.template to_data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(want[i], got[i], tolerance) << "element " << i;
  }
}

// ExpectSameTensors(): the two files hold the same keys with the same
// dtypes, shapes and bytes.
void ExpectSameTensors(const std::string& theirs_path,
                       const std::string& ours_path) {
  auto theirs = TensorFile::Open(theirs_path);
  auto ours = TensorFile::Open(ours_path);
  ASSERT_TRUE(theirs.ok() && ours.ok());
  ASSERT_EQ((*theirs)->header().tensors().size(),
            (*ours)->header().tensors().size());
  for (const auto& info : (*theirs)->header().tensors()) {
    const auto* mine = (*ours)->header().Find(info.name);
    ASSERT_NE(nullptr, mine) << info.name;
    EXPECT_EQ(info.dtype, mine->dtype) << info.name;
    EXPECT_EQ(info.shape, mine->shape) << info.name;
    ASSERT_EQ(info.nbytes(), mine->nbytes()) << info.name;
    EXPECT_EQ(0, std::memcmp((*theirs)->data(info), (*ours)->data(*mine),
                             info.nbytes()))
        << info.name;
  }
}

TEST(TorchInteropTest, LinearMatchesPyTorch) {
  kindling::nn::Linear linear = kindling::nn::LinearConfig{4, 3}.Init();
  absl::StatusOr<kindling::LoadReport> report = LoadModule(
      linear, std::string(kData) + "torch_linear.safetensors", PyTorch());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ((kindling::Shape{4, 3}), linear.weight->shape());
  ExpectNear(Read<2>("torch_linear_io.safetensors", "output"),
             linear.Forward(Read<2>("torch_linear_io.safetensors", "input")));
}

TEST(TorchInteropTest, LinearWithoutAdapterIsAShapeMismatch) {
  kindling::nn::Linear linear = kindling::nn::LinearConfig{4, 3}.Init();
  absl::StatusOr<kindling::LoadReport> report =
      LoadModule(linear, std::string(kData) + "torch_linear.safetensors");
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()),
              HasSubstr("\"weight\": shape mismatch: the file has [3, 4], the "
                        "module expects [4, 3]"));
  EXPECT_FALSE(linear.weight.is_initialized());
}

TEST(TorchInteropTest, Bfloat16CheckpointConvertsToTheModuleDtype) {
  kindling::nn::Linear full = kindling::nn::LinearConfig{4, 3}.Init();
  kindling::nn::Linear half = kindling::nn::LinearConfig{4, 3}.Init();
  ASSERT_TRUE(LoadModule(full, std::string(kData) + "torch_linear.safetensors",
                         PyTorch())
                  .ok());
  ASSERT_TRUE(LoadModule(half,
                         std::string(kData) + "torch_linear_bf16.safetensors",
                         PyTorch())
                  .ok());
  EXPECT_EQ(kindling::DType::kF32, half.weight->dtype());
  const std::vector<float> exact = full.weight->to_data<float>();
  const std::vector<float> rounded = half.weight->to_data<float>();
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_EQ(
        kindling::BFloat16BitsToFloat(kindling::FloatToBFloat16Bits(exact[i])),
        rounded[i]);
  }
}

// A bf16 checkpoint trained in f32 goes back to bf16 on save: the round
// trip bf16 -> f32 -> bf16 gives PyTorch's bytes back exactly.
TEST(TorchInteropTest, Bfloat16CheckpointSavesBackAsBfloat16BitForBit) {
  const std::string theirs_path =
      std::string(kData) + "torch_linear_bf16.safetensors";
  kindling::nn::Linear linear = kindling::nn::LinearConfig{4, 3}.Init();
  ASSERT_TRUE(LoadModule(linear, theirs_path, PyTorch()).ok());
  ASSERT_EQ(kindling::DType::kF32, linear.weight->dtype());
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string ours_path =
      std::string(dir != nullptr ? dir : "/tmp") + "/linear_bf16.safetensors";
  kindling::SaveOptions save;
  save.pytorch = kindling::PyTorchAdapter{};
  save.precision = kindling::Precision::kBF16;
  ASSERT_TRUE(kindling::SaveModule(linear, ours_path, save).ok());
  ExpectSameTensors(theirs_path, ours_path);
}

TEST(TorchInteropTest, Conv2dMatchesPyTorch) {
  kindling::nn::Conv2d conv = kindling::nn::Conv2dConfig{
      .in_channels = 2,
      .out_channels = 3,
      .kernel_size = {3, 3},
      .padding = {1, 1}}.Init();
  absl::StatusOr<kindling::LoadReport> report = LoadModule(
      conv, std::string(kData) + "torch_conv2d.safetensors", PyTorch());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(2, report->borrowed);  // same layout and dtype: zero copy
  ExpectNear(Read<4>("torch_conv2d_io.safetensors", "output"),
             conv.Forward(Read<4>("torch_conv2d_io.safetensors", "input")));
}

TEST(TorchInteropTest, LayerNormMatchesPyTorch) {
  kindling::nn::LayerNorm norm = kindling::nn::LayerNormConfig{6}.Init();
  absl::StatusOr<kindling::LoadReport> report = LoadModule(
      norm, std::string(kData) + "torch_layer_norm.safetensors", PyTorch());
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectNear(Read<2>("torch_layer_norm_io.safetensors", "output"),
             norm.Forward(Read<2>("torch_layer_norm_io.safetensors", "input")));
}

TEST(TorchInteropTest, EmbeddingMatchesPyTorch) {
  kindling::nn::Embedding embedding =
      kindling::nn::EmbeddingConfig{10, 4}.Init();
  ASSERT_TRUE(LoadModule(embedding,
                         std::string(kData) + "torch_embedding.safetensors",
                         PyTorch())
                  .ok());
  const auto ids = Read<2, kindling::Int>("torch_embedding_io.safetensors",
                                          "input", kindling::DType::kI64);
  ExpectNear(Read<3>("torch_embedding_io.safetensors", "output"),
             embedding.Forward(ids));
}

// Saved with the adapter, Kindling's files have PyTorch's keys, shapes and
// dtypes, byte for byte the tensors PyTorch wrote. (PyTorch itself reading
// them back: tests/data/check_torch_reads_kindling.py.)
TEST(TorchInteropTest, SavedWithAdapterMatchesPyTorchsFile) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string out_dir = dir != nullptr ? dir : "/tmp";
  for (const std::string layer : {"linear", "layer_norm"}) {
    SCOPED_TRACE(layer);
    const std::string torch_path =
        std::string(kData) + "torch_" + layer + ".safetensors";
    const std::string kindling_path =
        out_dir + "/kindling_" + layer + ".safetensors";
    kindling::SaveOptions save;
    save.pytorch = kindling::PyTorchAdapter{};
    if (layer == "linear") {
      kindling::nn::Linear linear = kindling::nn::LinearConfig{4, 3}.Init();
      ASSERT_TRUE(LoadModule(linear, torch_path, PyTorch()).ok());
      ASSERT_TRUE(kindling::SaveModule(linear, kindling_path, save).ok());
    } else {
      kindling::nn::LayerNorm norm = kindling::nn::LayerNormConfig{6}.Init();
      ASSERT_TRUE(LoadModule(norm, torch_path, PyTorch()).ok());
      ASSERT_TRUE(kindling::SaveModule(norm, kindling_path, save).ok());
    }
    ExpectSameTensors(torch_path, kindling_path);
  }
}

}  // namespace
