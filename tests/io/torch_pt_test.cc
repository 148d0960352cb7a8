// torch.save files read without Python: make_torch_pt_files.py writes them
// with real PyTorch (Debian's 1.13 here; .ci/run repeats the test over
// today's PyTorch through KINDLING_PT_DIR), and each good file's values, packed
// by hand, beside it.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/device_read.h"
#include "kindling/io/module_file.h"
#include "kindling/io/tensor_file.h"
#include "kindling/io/torch_zip.h"
#include "kindling/module/module.h"
#include "kindling/tensor/memory_stats.h"
#include "tests/io/torch_pt_modules.kindling.h"
#include "tests/support/fake_cuda.h"

namespace {

using ::kindling::DType;
using ::kindling::LoadModule;
using ::kindling::LoadOptions;
using ::kindling::LoadReport;
using ::kindling::Tensor;
using ::kindling::TensorBase;
using ::kindling::io::ReadTensor;
using ::kindling::io::TensorFile;
using ::kindling::io::TensorInfo;
using ::testing::HasSubstr;

// The directory of the generated files: KINDLING_PT_DIR, or made here once
// with Debian's PyTorch.
const std::string& PtDir() {
  static const std::string* const dir = [] {
    if (const char* given = std::getenv("KINDLING_PT_DIR")) {
      return new std::string(given);
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    auto* made = new std::string(std::string(tmp ? tmp : "/tmp") + "/pt");
    const std::string command =
        "/usr/bin/python3 "
        "tests/io/make_torch_pt_files.py " +
        *made + " >/dev/null";
    if (std::system(command.c_str()) != 0) {
      ADD_FAILURE() << "failed: " << command;
    }
    return made;
  }();
  return *dir;
}

std::string PtFile(const std::string& name) { return PtDir() + "/" + name; }

std::shared_ptr<const TensorFile> Open(const std::string& name) {
  absl::StatusOr<std::shared_ptr<const TensorFile>> file =
      TensorFile::Open(PtFile(name));
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *file : nullptr;
}

// Host bytes of `key` read from `file` as the Kindling dtype of its file
// dtype (I64 for I8/I16, which Kindling has no tensors of).
std::vector<uint8_t> Bytes(const std::shared_ptr<const TensorFile>& file,
                           const TensorInfo& info, bool* borrowed = nullptr) {
  const DType dtype =
      kindling::io::FromSafetensorsDType(info.dtype).value_or(DType::kI64);
  absl::StatusOr<TensorBase> tensor =
      ReadTensor(file, info, dtype, kindling::Device::Cpu(), borrowed);
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  if (!tensor.ok()) return {};
  std::vector<uint8_t> bytes(tensor->numel() * tensor->element_size());
  if (!bytes.empty()) tensor->CopyToHost(bytes.data());
  return bytes;
}

void ExpectSameTensors(const std::string& name) {
  SCOPED_TRACE(name);
  const auto pt = Open(name + ".pt");
  const auto expected = Open(name + ".expected.safetensors");
  ASSERT_TRUE(pt != nullptr && expected != nullptr);
  EXPECT_EQ(expected->header().tensors().size(), pt->header().tensors().size());
  for (const TensorInfo& want : expected->header().tensors()) {
    const TensorInfo* got = pt->header().Find(want.name);
    ASSERT_NE(nullptr, got) << want.name;
    EXPECT_EQ(want.dtype, got->dtype) << want.name;
    EXPECT_EQ(want.shape, got->shape) << want.name;
    EXPECT_EQ(Bytes(expected, want), Bytes(pt, *got)) << want.name;
  }
}

TEST(TorchPtTest, EveryDtypeReadsBitForBit) { ExpectSameTensors("dtypes"); }

TEST(TorchPtTest, ViewsOffsetsStridesAndTiedTensorsReadBitForBit) {
  ExpectSameTensors("views");
}

TEST(TorchPtTest, ContiguousTensorsAreBorrowedSharedAndStridedOnesCopied) {
  const auto pt = Open("views.pt");
  ASSERT_NE(nullptr, pt);
  const auto borrowed = [&](const char* key) {
    bool borrowed = false;
    Bytes(pt, *pt->header().Find(key), &borrowed);
    return borrowed;
  };
  EXPECT_TRUE(borrowed("base"));
  EXPECT_FALSE(borrowed("rows"));  // inside base's bytes
  EXPECT_FALSE(borrowed("transposed"));
  EXPECT_FALSE(borrowed("every_other"));
  // One of the two keys of the same tensor borrows, the other copies, so
  // that two parameters loaded from them never alias.
  EXPECT_NE(borrowed("tied_a"), borrowed("tied_b"));
}

// Onto a device (the tests' fake cuda), every tensor, strided views and
// shared bytes included, arrives with the values the CPU read gives.
TEST(TorchPtTest, ViewsReadOntoADeviceEqualTheCpuRead) {
  const auto pt = Open("views.pt");
  ASSERT_NE(nullptr, pt);
  for (const TensorInfo& info : pt->header().tensors()) {
    SCOPED_TRACE(info.name);
    const DType dtype =
        kindling::io::FromSafetensorsDType(info.dtype).value_or(DType::kI64);
    absl::StatusOr<TensorBase> on_device = kindling::io::ReadTensorToDevice(
        pt, info, dtype, kindling::Device::Cuda(0), /*staging_bytes=*/16);
    ASSERT_TRUE(on_device.ok()) << on_device.status();
    EXPECT_EQ(kindling::Device::Cuda(0), on_device->device());
    const TensorBase host = on_device->ToDevice(kindling::Device::Cpu());
    std::vector<uint8_t> bytes(host.numel() * host.element_size());
    if (!bytes.empty()) host.Contiguous().CopyToHost(bytes.data());
    EXPECT_EQ(Bytes(pt, info), bytes);
  }
}

LoadOptions TorchNetOptions() {
  LoadOptions options;
  options.pytorch = kindling::PyTorchAdapter{};
  // Kindling's BatchNorm keeps no batch counter.
  options.key_remap = {{R"(.*num_batches_tracked)", ""}};
  return options;
}

// The torch model's output on its input, from the expected file.
void ExpectTorchOutput(const pttest::TiedNet& net) {
  const auto expected = Open("tied_net.expected.safetensors");
  ASSERT_NE(nullptr, expected);
  const auto read = [&](const char* key) {
    return Tensor<2>(*ReadTensor(expected, *expected->header().Find(key),
                                 DType::kF32, kindling::Device::Cpu()));
  };
  const std::vector<float> want = read("output").to_data<float>();
  const std::vector<float> got = net.Forward(read("input")).to_data<float>();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(want[i], got[i], 1e-5) << "element " << i;
  }
}

TEST(TorchPtTest, TiedBatchNormNetLoadsAndMatchesTorch) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  absl::StatusOr<LoadReport> report =
      LoadModule(net, PtFile("tied_net.pt"), TorchNetOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(8u, report->applied.size());
  // PyTorch's [out, in] Linear weights are borrowed as transposed views of
  // the file; only the tied decoder weight (the encoder's bytes) is copied.
  EXPECT_EQ(7, report->borrowed);
  EXPECT_EQ(1, report->copied);
  EXPECT_FALSE(net.encoder.weight->base().is_contiguous());
  ExpectTorchOutput(net);
}

TEST(TorchPtTest, TiedNetLoadsOntoADevice) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  net = kindling::ToDevice(net, kindling::Device::Cuda(0));  // still lazy
  absl::StatusOr<LoadReport> report =
      LoadModule(net, PtFile("tied_net.pt"), TorchNetOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(kindling::Device::Cuda(0), net.encoder.weight->device());
  EXPECT_EQ(8, report->copied);
  ExpectTorchOutput(kindling::ToDevice(net, kindling::Device::Cpu()));
}

TEST(TorchPtTest, SavingBackInPyTorchLayoutCopiesNothing) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  ASSERT_TRUE(LoadModule(net, PtFile("tied_net.pt"), TorchNetOptions()).ok());
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/tied_net.safetensors";
  kindling::SaveOptions options;
  options.pytorch = kindling::PyTorchAdapter{};
  kindling::ResetMemoryStats(kindling::Device::Cpu());
  // Live before the save: the one copied (tied) weight.
  const int64_t live =
      kindling::GetMemoryStats(kindling::Device::Cpu()).live_bytes;
  ASSERT_TRUE(kindling::SaveModule(net, path, options).ok());
  // The transposed views transpose back to the file's own [out, in] bytes,
  // which are written as they are: no tensor is allocated.
  EXPECT_EQ(live,
            kindling::GetMemoryStats(kindling::Device::Cpu()).peak_live_bytes);
  const auto pt = Open("tied_net.pt");
  absl::StatusOr<std::shared_ptr<const TensorFile>> saved =
      TensorFile::Open(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  for (const TensorInfo& info : (*saved)->header().tensors()) {
    EXPECT_EQ(Bytes(pt, *pt->header().Find(info.name)), Bytes(*saved, info))
        << info.name;
  }
}

TEST(TorchPtTest, PrefixedStateDictLoadsWithStripPrefix) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  LoadOptions options = TorchNetOptions();
  options.strip_prefix = "bert.";
  absl::StatusOr<LoadReport> report =
      LoadModule(net, PtFile("bert_prefixed.pt"), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectTorchOutput(net);
}

TEST(TorchPtTest, ShardedPytorchModelBinLoadsThroughItsIndex) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  absl::StatusOr<LoadReport> report = LoadModule(
      net, PtFile("sharded/pytorch_model.bin.index.json"), TorchNetOptions());
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectTorchOutput(net);
}

struct BadFile {
  const char* name;
  const char* message;
};

class TorchPtBadFileTest : public testing::TestWithParam<BadFile> {};

TEST_P(TorchPtBadFileTest, IsRefusedWithAMessageAndTheModuleUntouched) {
  pttest::TiedNet net = pttest::MakeTiedNet();
  absl::StatusOr<LoadReport> report =
      LoadModule(net, PtFile(GetParam().name), TorchNetOptions());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, report.status().code());
  EXPECT_THAT(report.status().message(), HasSubstr(GetParam().name));
  EXPECT_THAT(report.status().message(), HasSubstr(GetParam().message));
  EXPECT_FALSE(net.encoder.weight.is_initialized());  // still lazy
}

INSTANTIATE_TEST_SUITE_P(
    Files, TorchPtBadFileTest,
    testing::Values(BadFile{"training_checkpoint.pt",
                            "entry \"model\" is a dict, not a tensor"},
                    BadFile{"evil.pt",
                            "global 'posix.system' is not part of a saved "
                            "state_dict"},
                    BadFile{"legacy.pt",
                            "legacy torch.save format (before PyTorch 1.6)"},
                    BadFile{"torchscript.pt", "a TorchScript archive"},
                    BadFile{"short_storage.pt", "elements but has"},
                    BadFile{"compressed.pt", "is compressed"},
                    BadFile{"truncated.pt", "not a readable zip archive"}),
    [](const testing::TestParamInfo<BadFile>& info) {
      std::string name = info.param.name;
      return name.substr(0, name.find('.'));
    });

}  // namespace
