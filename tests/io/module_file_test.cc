// Tests of SaveModule() / LoadModule() over hand-traited test modules.
#include "kindling/io/module_file.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/tensor_file.h"
#include "kindling/module/record.h"
#include "kindling/module/visit.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "tests/io/record_test_modules.kindling.h"

namespace {

using ::kindling::Device;
using ::kindling::LoadModule;
using ::kindling::LoadOptions;
using ::kindling::LoadReport;
using ::kindling::Precision;
using ::kindling::SaveModule;
using ::kindling::SaveOptions;
using ::kindling::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

// Fill() loads `param` with next, next + 1, ... (advancing `next`).
template <class P>
void Fill(P& param, float& next) {
  using T = std::remove_cvref_t<decltype(param.val())>;
  std::vector<float> values(kindling::NumElements(param.lazy_shape()));
  for (float& value : values) value = next++;
  param = param.load(T::FromData(values, param.lazy_shape()));
}

// An initialized net whose every parameter holds distinct values.
rectest::Net MakeFilledNet(float base) {
  rectest::Net net = rectest::MakeNet();
  float next = base;
  auto fill = [&](auto& param) { Fill(param, next); };
  fill(net.input.weight);
  fill(*net.input.bias);
  for (auto& block : net.blocks) {
    fill(block.fc.weight);
    fill(*block.fc.bias);
    fill(block.norm.gamma);
    fill(block.norm.beta);
  }
  net.steps.update(Tensor<1>::FromData<float>({42.0f}, {1}));
  return net;
}

std::vector<float> Values(const kindling::Param<Tensor<2>>& param) {
  return param->to_data<float>();
}
std::vector<float> Values(const kindling::Param<Tensor<1>>& param) {
  return param->to_data<float>();
}

TEST(CheckpointTest, RoundTripsValuesIdsAndBuffers) {
  const std::string path = TempPath("roundtrip.safetensors");
  const rectest::Net saved = MakeFilledNet(1.0f);
  ASSERT_TRUE(SaveModule(saved, path).ok());

  rectest::Net loaded = rectest::MakeNet();
  rectest::init_runs = 0;
  absl::StatusOr<LoadReport> report = LoadModule(loaded, path);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(0, rectest::init_runs.load());
  EXPECT_EQ(Values(saved.input.weight), Values(loaded.input.weight));
  EXPECT_EQ(Values(saved.blocks[1].norm.beta),
            Values(loaded.blocks[1].norm.beta));
  EXPECT_EQ(saved.blocks[1].fc.weight.id(), loaded.blocks[1].fc.weight.id());
  EXPECT_EQ(saved.input.bias->id(), loaded.input.bias->id());
  EXPECT_EQ(std::vector<float>{42.0f}, loaded.steps.value().to_data<float>());
  EXPECT_EQ(saved.steps.id(), loaded.steps.id());
  EXPECT_EQ(11u, report->applied.size());
  EXPECT_EQ("rectest::Net", report->file_module_type);
  EXPECT_TRUE(report->missing.empty());
  EXPECT_TRUE(report->unused.empty());
  EXPECT_TRUE(loaded.input.weight->is_require_grad());
}

TEST(CheckpointTest, LazyLoadBorrowsTheFileWithoutAllocating) {
  const std::string path = TempPath("borrow.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net loaded = rectest::MakeNet();
  rectest::init_runs = 0;
  kindling::ResetMemoryStats(Device::Cpu());
  const int64_t live_before =
      kindling::GetMemoryStats(Device::Cpu()).live_bytes;
  absl::StatusOr<LoadReport> report = LoadModule(loaded, path);
  ASSERT_TRUE(report.ok()) << report.status();
  const kindling::MemoryStats stats = kindling::GetMemoryStats(Device::Cpu());
  EXPECT_EQ(0, stats.allocation_count);
  EXPECT_EQ(live_before, stats.peak_live_bytes);
  EXPECT_EQ(11, report->borrowed);
  EXPECT_EQ(0, report->copied);
  EXPECT_EQ(0, rectest::init_runs.load());
  EXPECT_TRUE(loaded.input.weight->base().storage()->is_borrowed());
  // The mapping is private and writable: in-place writes are copy-on-write
  // at the page level, so the storage need not be read-only.
  EXPECT_FALSE(loaded.input.weight->base().storage()->is_read_only());
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(CheckpointTest, BorrowedParamsOutliveTheReplacedFile) {
  const std::string path = TempPath("outlive.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net loaded = rectest::MakeNet();
  ASSERT_TRUE(LoadModule(loaded, path).ok());
  // Replacing the file (as the next save does) leaves the mapping intact.
  ASSERT_TRUE(SaveModule(MakeFilledNet(100.0f), path).ok());
  EXPECT_EQ(0.0f, Values(loaded.input.weight)[0]);
  Tensor<2> weight = *loaded.input.weight;
  kindling::NoGradGuard no_grad;  // parameter values are leaves
  weight.add_(Tensor<2>::Ones({3, 4}));
  EXPECT_EQ(1.0f, weight.to_data<float>()[0]);
  EXPECT_EQ(1.0f, Values(loaded.input.weight)[0]);
}

// A loaded parameter behaves like an initialized one: an in-place write
// through any handle is seen by every handle on the same storage and by the
// parameter, while the file on disk is never modified.
TEST(CheckpointTest, InPlaceWritesToLoadedParamsReachEveryHandleNotTheFile) {
  const std::string path = TempPath("cow.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  const std::string file_before = ReadBytes(path);
  rectest::Net loaded = rectest::MakeNet();
  ASSERT_TRUE(LoadModule(loaded, path).ok());
  ASSERT_TRUE(loaded.input.weight->base().storage()->is_borrowed());
  const std::vector<float> original = Values(loaded.input.weight);

  Tensor<2> w = *loaded.input.weight;
  Tensor<2> other = *loaded.input.weight;
  {
    kindling::NoGradGuard no_grad;  // parameter values are leaves
    w.sub_(Tensor<2>::Ones({3, 4}));
  }
  std::vector<float> want = original;
  for (float& value : want) value -= 1.0f;
  EXPECT_EQ(want, w.to_data<float>());
  EXPECT_EQ(want, other.to_data<float>());
  EXPECT_EQ(want, Values(loaded.input.weight));
  // Still the (privately copied) mapped pages, not a fresh allocation.
  EXPECT_TRUE(loaded.input.weight->base().storage()->is_borrowed());

  // The file is unchanged, and loading it again gives the original values.
  EXPECT_EQ(file_before, ReadBytes(path));
  rectest::Net again = rectest::MakeNet();
  ASSERT_TRUE(LoadModule(again, path).ok());
  EXPECT_EQ(original, Values(again.input.weight));
}

// SaveWithoutLastBlock() writes a filled Net whose last block is missing:
// a file that lacks four of MakeNet()'s keys.
absl::Status SaveWithoutLastBlock(const std::string& path) {
  rectest::Net small = MakeFilledNet(0.0f);
  small.blocks.pop_back();
  return SaveModule(small, path);
}

TEST(CheckpointTest, MissingKeysAreAnErrorListingAllAndLeaveTheModule) {
  const std::string path = TempPath("partial.safetensors");
  ASSERT_TRUE(SaveWithoutLastBlock(path).ok());
  rectest::Net net = rectest::MakeNet();
  const kindling::ParamId before = net.input.weight.id();
  absl::StatusOr<LoadReport> report = LoadModule(net, path);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(path +
                ": cannot load into rectest::Net (1 problem): missing from the "
                "file: \"blocks.1.fc.weight\", \"blocks.1.fc.bias\", "
                "\"blocks.1.norm.gamma\", \"blocks.1.norm.beta\"",
            Message(report.status()));
  EXPECT_FALSE(net.input.weight.is_initialized());
  EXPECT_EQ(before, net.input.weight.id());
}

TEST(CheckpointTest, AllowPartialKeepsMissingParamsLazy) {
  const std::string path = TempPath("partial2.safetensors");
  ASSERT_TRUE(SaveWithoutLastBlock(path).ok());
  rectest::Net net = rectest::MakeNet();
  rectest::init_runs = 0;
  LoadOptions options;
  options.allow_partial = true;
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->missing,
              ElementsAre("blocks.1.fc.weight", "blocks.1.fc.bias",
                          "blocks.1.norm.gamma", "blocks.1.norm.beta"));
  EXPECT_TRUE(net.blocks[0].fc.weight.is_initialized());
  EXPECT_FALSE(net.blocks[1].fc.weight.is_initialized());
  EXPECT_EQ(0, rectest::init_runs.load());
}

TEST(CheckpointTest, UnexpectedKeysAreAnErrorUnlessNotStrict) {
  const std::string path = TempPath("extra.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net net = rectest::MakeNet();
  net.blocks.pop_back();
  absl::StatusOr<LoadReport> report = LoadModule(net, path);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(Message(report.status()),
              HasSubstr("unexpected keys in the file: \"blocks.1.fc.bias\", "
                        "\"blocks.1.fc.weight\", \"blocks.1.norm.beta\", "
                        "\"blocks.1.norm.gamma\""));
  LoadOptions lenient;
  lenient.strict = false;
  report = LoadModule(net, path, lenient);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(4u, report->unused.size());
}

TEST(CheckpointTest, ShapeMismatchNamesKeyAndBothShapes) {
  const std::string path = TempPath("shape.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net net = rectest::MakeNet(/*width=*/5);
  absl::StatusOr<LoadReport> report = LoadModule(net, path);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(Message(report.status()),
              HasSubstr("\"input.weight\": shape mismatch: the file has [3, "
                        "4], the module expects [3, 5]"));
  EXPECT_THAT(Message(report.status()), HasSubstr("(10 problems)"));
  EXPECT_FALSE(net.input.weight.is_initialized());
}

TEST(CheckpointTest, FailedLoadLeavesInitializedModuleExactlyAsItWas) {
  const std::string path = TempPath("allornothing.safetensors");
  rectest::Net other = MakeFilledNet(500.0f);
  other.blocks[1].norm.beta = rectest::LazyParam<1>({7});  // wrong shape
  other.blocks[1].norm.beta =
      other.blocks[1].norm.beta.load(Tensor<1>::Zeros({7}));
  ASSERT_TRUE(SaveModule(other, path).ok());
  rectest::Net net = MakeFilledNet(1.0f);
  const std::vector<float> before = Values(net.input.weight);
  const kindling::ParamId id_before = net.input.weight.id();
  ASSERT_FALSE(LoadModule(net, path).ok());
  EXPECT_EQ(before, Values(net.input.weight));
  EXPECT_EQ(id_before, net.input.weight.id());
}

TEST(CheckpointTest, KeyRemapRulesApplyInOrderWithGroups) {
  const std::string path = TempPath("remap.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net net = rectest::MakeNet();
  // blocks.N.* -> layers.N.* (no match), then back; and drop `steps`.
  LoadOptions options;
  options.key_remap = {{R"(^blocks\.(\d+)\.)", "layers.$1."},
                       {R"(^layers\.(\d+)\.)", "blocks.$1."},
                       {R"(^steps$)", ""}};
  options.allow_partial = true;
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->skipped, ElementsAre("steps"));
  EXPECT_THAT(report->missing, ElementsAre("steps"));
  EXPECT_EQ(10u, report->applied.size());
}

TEST(CheckpointTest, InvalidRemapPatternIsAnError) {
  const std::string path = TempPath("badremap.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net net = rectest::MakeNet();
  LoadOptions options;
  options.key_remap = {{"(", ""}};
  EXPECT_THAT(Message(LoadModule(net, path, options).status()),
              HasSubstr("key remap pattern \"(\" is invalid"));
}

TEST(CheckpointTest, HalfPrecisionSavesHalfTheBytesAndConvertsOnLoad) {
  for (Precision precision : {Precision::kF16, Precision::kBF16}) {
    const std::string path = TempPath("half.safetensors");
    SaveOptions save_options;
    save_options.precision = precision;
    ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path, save_options).ok());
    absl::StatusOr<std::shared_ptr<const kindling::io::TensorFile>> file =
        kindling::io::TensorFile::Open(path);
    ASSERT_TRUE(file.ok());
    EXPECT_EQ(precision == Precision::kF16
                  ? kindling::io::SafetensorsDType::kF16
                  : kindling::io::SafetensorsDType::kBF16,
              (*file)->header().Find("input.weight")->dtype);
    EXPECT_EQ(std::string(kindling::PrecisionName(precision)),
              *(*file)->header().FindMetadata("kindling.precision"));
    rectest::Net net = rectest::MakeNet();
    absl::StatusOr<LoadReport> report = LoadModule(net, path);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(kindling::DType::kF32, net.input.weight->dtype());
    EXPECT_EQ(11, report->copied);
    // Small integers are exact in both formats.
    EXPECT_EQ(Values(MakeFilledNet(0.0f).input.weight),
              Values(net.input.weight));
  }
}

TEST(CheckpointTest, PyTorchAdapterTransposesLinearAndRenamesNorms) {
  const std::string path = TempPath("torch.safetensors");
  kindling::PyTorchAdapter adapter;
  adapter.linear_types = {"rectest::Linear"};
  adapter.norm_types = {"rectest::LayerNorm"};
  const rectest::Net saved = MakeFilledNet(0.0f);
  SaveOptions save_options;
  save_options.pytorch = adapter;
  ASSERT_TRUE(SaveModule(saved, path, save_options).ok());
  absl::StatusOr<std::shared_ptr<const kindling::io::TensorFile>> file =
      kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok());
  const kindling::io::TensorInfo* weight =
      (*file)->header().Find("input.weight");
  ASSERT_NE(nullptr, weight);
  EXPECT_EQ((std::vector<int64_t>{4, 3}), weight->shape);  // [out, in]
  EXPECT_NE(nullptr, (*file)->header().Find("blocks.0.norm.weight"));
  EXPECT_EQ(nullptr, (*file)->header().Find("blocks.0.norm.gamma"));

  rectest::Net net = rectest::MakeNet();
  LoadOptions options;
  options.pytorch = adapter;
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(Values(saved.input.weight), Values(net.input.weight));
  EXPECT_EQ(Values(saved.blocks[0].norm.gamma),
            Values(net.blocks[0].norm.gamma));
  EXPECT_EQ(Values(saved.blocks[0].norm.beta), Values(net.blocks[0].norm.beta));
  EXPECT_EQ((kindling::Shape{3, 4}), net.input.weight->shape());
}

// KINDLING_KEY fields carry Hugging Face's names: with the PyTorch adapter
// the file holds exactly BERT's keys and layouts, and loads back.
TEST(CheckpointTest, KeyedFieldsSaveAndLoadUnderForeignNames) {
  const std::string path = TempPath("bert_attention.safetensors");
  kindling::PyTorchAdapter adapter;
  adapter.linear_types = {"rectest::Linear"};
  adapter.norm_types = {"rectest::LayerNorm"};
  const auto make = [] {
    return rectest::Attention{
        .self_attention = rectest::MakeLinear(3, 4),
        .output = {.dense = rectest::MakeLinear(4, 4),
                   .layer_norm = rectest::MakeLayerNorm(4)}};
  };
  rectest::Attention saved = make();
  float next = 0;
  const auto fill = [&](auto& param) { Fill(param, next); };
  fill(saved.self_attention.weight);
  fill(*saved.self_attention.bias);
  fill(saved.output.dense.weight);
  fill(*saved.output.dense.bias);
  fill(saved.output.layer_norm.gamma);
  fill(saved.output.layer_norm.beta);
  SaveOptions save_options;
  save_options.pytorch = adapter;
  ASSERT_TRUE(SaveModule(saved, path, save_options).ok());
  absl::StatusOr<std::shared_ptr<const kindling::io::TensorFile>> file =
      kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok());
  std::vector<std::string> keys;
  for (const auto& info : (*file)->header().tensors())
    keys.push_back(info.name);
  EXPECT_THAT(keys, UnorderedElementsAre(
                        "self.weight", "self.bias", "output.dense.weight",
                        "output.dense.bias", "output.LayerNorm.weight",
                        "output.LayerNorm.bias"));
  EXPECT_EQ((std::vector<int64_t>{4, 3}),
            (*file)->header().Find("self.weight")->shape);  // [out, in]

  rectest::Attention loaded = make();
  LoadOptions options;
  options.pytorch = adapter;
  absl::StatusOr<LoadReport> report = LoadModule(loaded, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(Values(saved.self_attention.weight),
            Values(loaded.self_attention.weight));
  EXPECT_EQ(Values(saved.output.layer_norm.beta),
            Values(loaded.output.layer_norm.beta));
}

// A prefix the file's keys carry ("bert.") is an option on both sides.
TEST(CheckpointTest, KeyPrefixWrittenOnSaveIsStrippedOnLoad) {
  const std::string path = TempPath("prefixed.safetensors");
  SaveOptions save_options;
  save_options.key_prefix = "bert.";
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path, save_options).ok());
  absl::StatusOr<std::shared_ptr<const kindling::io::TensorFile>> file =
      kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_NE(nullptr, (*file)->header().Find("bert.input.weight"));
  EXPECT_EQ(nullptr, (*file)->header().Find("input.weight"));

  rectest::Net plain = rectest::MakeNet();
  EXPECT_FALSE(LoadModule(plain, path).ok());
  rectest::Net net = rectest::MakeNet();
  LoadOptions options;
  options.strip_prefix = "bert.";
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(Values(MakeFilledNet(0.0f).input.weight), Values(net.input.weight));
}

// WriteText() writes `text` to `path`.
void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A sharded checkpoint (Hugging Face's model.safetensors.index.json and its
// shards) loads as one file; an index that disagrees with its shards is an
// error naming the key and the shard.
TEST(CheckpointTest, ShardedCheckpointLoadsThroughItsIndex) {
  const std::string dir = TempPath("sharded");
  ASSERT_EQ(0, ::mkdir(dir.c_str(), 0755));
  const rectest::Net full = MakeFilledNet(0.0f);
  rectest::Net first = full;
  first.blocks.pop_back();
  ASSERT_TRUE(SaveModule(first, dir + "/model-1.safetensors").ok());
  SaveOptions second_options;
  second_options.key_prefix = "blocks.1.";
  ASSERT_TRUE(
      SaveModule(full.blocks[1], dir + "/model-2.safetensors", second_options)
          .ok());
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string first_keys =
      R"("input.weight": "model-1.safetensors", "input.bias": "model-1.safetensors",
         "blocks.0.fc.weight": "model-1.safetensors", "blocks.0.fc.bias": "model-1.safetensors",
         "blocks.0.norm.gamma": "model-1.safetensors", "blocks.0.norm.beta": "model-1.safetensors",
         "steps": "model-1.safetensors")";
  WriteText(index, R"({"metadata": {"total_size": 1}, "weight_map": {)" +
                       first_keys + R"(,
      "blocks.1.fc.weight": "model-2.safetensors", "blocks.1.fc.bias": "model-2.safetensors",
      "blocks.1.norm.gamma": "model-2.safetensors", "blocks.1.norm.beta": "model-2.safetensors"}})");
  rectest::Net net = rectest::MakeNet();
  absl::StatusOr<LoadReport> report = LoadModule(net, index);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(11u, report->applied.size());
  EXPECT_EQ(Values(full.input.weight), Values(net.input.weight));
  EXPECT_EQ(Values(full.blocks[1].norm.beta), Values(net.blocks[1].norm.beta));

  const std::string wrong = dir + "/wrong.safetensors.index.json";
  WriteText(wrong, R"({"weight_map": {)" + first_keys +
                       R"(, "blocks.1.fc.weight": "model-1.safetensors"}})");
  rectest::Net other = rectest::MakeNet();
  EXPECT_THAT(Message(LoadModule(other, wrong).status()),
              HasSubstr("\"blocks.1.fc.weight\" is listed in "
                        "model-1.safetensors, which does not hold it"));
  WriteText(wrong, R"({"weight_map": {"input.weight": "absent.safetensors"}})");
  EXPECT_THAT(Message(LoadModule(other, wrong).status()),
              HasSubstr("absent.safetensors"));
  WriteText(wrong, R"({"weights": {}})");
  EXPECT_THAT(Message(LoadModule(other, wrong).status()),
              HasSubstr("no \"weight_map\" object"));
  EXPECT_FALSE(other.input.weight.is_initialized());
}

// A key the file lacks is named as the file should hold it, with the
// nearest key the file does hold; an unexpected key names the nearest leaf.
TEST(CheckpointTest, MissingAndUnexpectedKeysNameTheNearestMatch) {
  const std::string path = TempPath("typo.safetensors");
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  rectest::Net net = rectest::MakeNet();
  LoadOptions options;
  // A remap rule with a typo: every gamma becomes "gama".
  options.key_remap = {{R"(\.gamma$)", ".gama"}};
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_FALSE(report.ok());
  const std::string message = Message(report.status());
  EXPECT_THAT(message,
              HasSubstr("missing from the file: \"blocks.0.norm.gamma\""
                        " (did you mean \"blocks.0.norm.gama\"?)"));
  EXPECT_THAT(message,
              HasSubstr("unexpected keys in the file: \"blocks.0.norm.gamma\" "
                        "(remapped to \"blocks.0.norm.gama\") (closest missing "
                        "leaf: \"blocks.0.norm.gamma\")"));
  EXPECT_FALSE(net.input.weight.is_initialized());
}

// With the PyTorch adapter a missing norm parameter is named by PyTorch's
// key, with the leaf it feeds.
TEST(CheckpointTest, MissingKeyUnderThePyTorchAdapterIsPyTorchs) {
  const std::string path = TempPath("torch_partial.safetensors");
  kindling::PyTorchAdapter adapter;
  adapter.linear_types = {"rectest::Linear"};
  adapter.norm_types = {"rectest::LayerNorm"};
  rectest::Net small = MakeFilledNet(0.0f);
  small.blocks.pop_back();
  SaveOptions save_options;
  save_options.pytorch = adapter;
  ASSERT_TRUE(SaveModule(small, path, save_options).ok());
  rectest::Net net = rectest::MakeNet();
  LoadOptions options;
  options.pytorch = adapter;
  absl::StatusOr<LoadReport> report = LoadModule(net, path, options);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(
      Message(report.status()),
      HasSubstr("\"blocks.1.norm.weight\" (for \"blocks.1.norm.gamma\"), "
                "\"blocks.1.norm.bias\" (for \"blocks.1.norm.beta\")"));
}

std::vector<std::string> Temporaries(const std::string& dir,
                                     const std::string& target_name) {
  std::vector<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name.rfind(target_name + ".tmp.", 0) == 0) found.push_back(name);
    }
    ::closedir(d);
  }
  return found;
}

TEST(CheckpointTest, RejectedSaveLeavesTheOldFile) {
  const std::string dir = TempPath("rejected");
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  const std::string before = ReadBytes(path);
  // A reserved metadata key fails before anything is written.
  SaveOptions bad;
  bad.metadata = {{"kindling.module", "x"}};
  EXPECT_FALSE(SaveModule(MakeFilledNet(9.0f), path, bad).ok());
  EXPECT_EQ(before, ReadBytes(path));
  EXPECT_TRUE(Temporaries(dir, "model.safetensors").empty());
  // Saving into a directory that does not exist fails cleanly.
  EXPECT_FALSE(
      SaveModule(MakeFilledNet(0.0f), dir + "/missing/m.safetensors").ok());
}

TEST(CheckpointTest, SaveFailingMidWriteLeavesTheOldFileAndNoTemporary) {
  const std::string dir = TempPath("midwrite");
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/model.safetensors";
  ASSERT_TRUE(SaveModule(MakeFilledNet(0.0f), path).ok());
  const std::string before = ReadBytes(path);
  const rectest::Net replacement = MakeFilledNet(9.0f);
  // In a child, cap the file size at 16 bytes: the temporary file is created,
  // its first write stops short and the next fails with EFBIG (SIGXFSZ is
  // ignored), so SaveModule fails in the middle of writing.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const struct rlimit limit = {16, 16};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    const absl::Status status = SaveModule(replacement, path);
    const bool write_failed =
        !status.ok() &&
        status.message().find("write failed") != std::string_view::npos;
    ::_exit(status.ok() ? 1 : (write_failed ? 0 : 2));
  }
  int wait_status = 0;
  ASSERT_EQ(child, ::waitpid(child, &wait_status, 0));
  ASSERT_TRUE(WIFEXITED(wait_status));
  // 0: failed in Write(); 1: the save succeeded; 2: failed elsewhere.
  ASSERT_EQ(0, WEXITSTATUS(wait_status));
  EXPECT_EQ(before, ReadBytes(path));
  EXPECT_THAT(Temporaries(dir, "model.safetensors"), ElementsAre());
}

TEST(CheckpointTest, SavedFileModeFollowsTheUmask) {
  const std::string path = TempPath("mode.safetensors");
  ::unlink(path.c_str());
  const mode_t old_mask = ::umask(027);
  const absl::Status status = SaveModule(MakeFilledNet(0.0f), path);
  ::umask(old_mask);
  ASSERT_TRUE(status.ok()) << status;
  struct stat info;
  ASSERT_EQ(0, ::stat(path.c_str(), &info));
  EXPECT_EQ(0640u, info.st_mode & 0777u);
}

TEST(CheckpointTest, BoolBytesOtherThanZeroOrOneLoadAsTrue) {
  // safetensors allows any byte in a BOOL tensor; reading 0x02 as a C++ bool
  // is undefined, so the reader must copy and normalize, never borrow.
  const std::string path = TempPath("bool.safetensors");
  {
    const std::string header =
        R"({"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) {
      bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    }
    bytes += header;
    bytes += std::string("\x00\x01\x02\xff", 4);
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  absl::StatusOr<std::shared_ptr<const kindling::io::TensorFile>> file =
      kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const kindling::io::TensorInfo* info = (*file)->header().Find("m");
  ASSERT_NE(nullptr, info);
  bool borrowed = true;
  absl::StatusOr<kindling::TensorBase> tensor = kindling::io::ReadTensor(
      *file, *info, kindling::DType::kBool, Device::Cpu(), &borrowed);
  ASSERT_TRUE(tensor.ok()) << tensor.status();
  EXPECT_FALSE(borrowed);
  const auto* raw = static_cast<const uint8_t*>(tensor->data());
  EXPECT_EQ((std::vector<uint8_t>{0, 1, 1, 1}),
            std::vector<uint8_t>(raw, raw + 4));
}

TEST(CheckpointTest, CorruptFileIsRejectedBeforeTouchingTheModule) {
  const std::string path = TempPath("corrupt.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out << "not a safetensors file";
  }
  rectest::Net net = rectest::MakeNet();
  absl::StatusOr<LoadReport> report = LoadModule(net, path);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(Message(report.status()), HasSubstr(path + ": header length"));
  EXPECT_EQ(absl::StatusCode::kNotFound,
            LoadModule(net, TempPath("nope.safetensors")).status().code());
}

TEST(CheckpointTest, UnalignedTensorsAreCopiedNotBorrowed) {
  // A file whose F32 tensor starts at an odd offset (legal, if unusual).
  const std::string path = TempPath("unaligned.safetensors");
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header = kindling::io::EncodeSafetensorsHeader(
      {{"pad", kindling::io::SafetensorsDType::kU8, {3}},
       {"w", kindling::io::SafetensorsDType::kF32, {2}}},
      {}, &data_size);
  ASSERT_TRUE(header.ok());
  const float values[2] = {1.5f, -2.0f};
  {
    std::ofstream out(path, std::ios::binary);
    out << *header << std::string(3, '\x07');
    out.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  auto file = kindling::io::TensorFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  bool borrowed = true;
  absl::StatusOr<kindling::TensorBase> w =
      kindling::io::ReadTensor(*file, *(*file)->header().Find("w"),
                               kindling::DType::kF32, Device::Cpu(), &borrowed);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE(borrowed);
  EXPECT_EQ((std::vector<float>{1.5f, -2.0f}), Tensor<1>(*w).to_data<float>());
  absl::StatusOr<kindling::TensorBase> as_int =
      kindling::io::ReadTensor(*file, *(*file)->header().Find("w"),
                               kindling::DType::kI64, Device::Cpu());
  EXPECT_EQ(path + ": tensor \"w\": stored as F32, which cannot convert to i64",
            Message(as_int.status()));
}

TEST(CheckpointTest, IntoRecordAndLoadRecordStillWorkInMemory) {
  const rectest::Net saved = MakeFilledNet(3.0f);
  rectest::NetRecord record = kindling::IntoRecord(saved);
  rectest::Net net = rectest::MakeNet();
  ASSERT_TRUE(kindling::LoadRecord(net, record).ok());
  EXPECT_EQ(Values(saved.blocks[0].fc.weight), Values(net.blocks[0].fc.weight));
}

}  // namespace
