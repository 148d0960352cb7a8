// The walks over std::tuple, std::pair and std::variant with std::monostate:
// every walk (visit, count, map, device moves, records, printing) reaches the
// parameters inside a tuple, under paths ".0", ".1", ...; a monostate
// alternative holds nothing and loads only into the same alternative.
#include <array>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module.h"
#include "tests/module/test_modules.h"

namespace demo {

// A module whose parameters sit in a tuple, a pair and a monostate variant.
struct Tuples {
  std::tuple<CountingParam, Dense, int> mixed;
  std::pair<Dense, std::vector<CountingParam>> pair;
  std::variant<std::monostate, Dense> maybe;
};
struct TuplesRecord;

}  // namespace demo

namespace kindling {

template <>
struct ModuleTraits<::demo::Tuples> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Tuples";
  using Record = ::demo::TuplesRecord;

  template <class Self, class Fn>
  static void ForEachField(Self& module, Fn&& fn) {
    fn("mixed", module.mixed);
    fn("pair", module.pair);
    fn("maybe", module.maybe);
  }
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
                                     Fn&& fn) {
    fn("mixed", module.mixed, record.mixed);
    fn("pair", module.pair, record.pair);
    fn("maybe", module.maybe, record.maybe);
  }
  template <class Fn>
  static void ForEachConstant(const ::demo::Tuples&, Fn&&) {}
};

}  // namespace kindling

namespace demo {

struct TuplesRecord {
  kindling::RecordOf<std::tuple<CountingParam, Dense, int>> mixed;
  kindling::RecordOf<std::pair<Dense, std::vector<CountingParam>>> pair;
  kindling::RecordOf<std::variant<std::monostate, Dense>> maybe;
};

}  // namespace demo

namespace kindling {
namespace {

using ::demo::CountingParam;
using ::kindling::testing::LazyCountingParam;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The field kinds every walk dispatches on.
using module_internal::ConstantField;
using module_internal::TupleField;
static_assert(TupleField<std::tuple<CountingParam, int>>);
static_assert(TupleField<const std::pair<demo::Dense, int>&>);
static_assert(ConstantField<std::monostate>);
static_assert(ConstantField<std::tuple<int, std::string>> == false);
static_assert(ConstantField<std::vector<std::pair<std::string, int>>> == false);
static_assert(ConstantField<std::string>);
static_assert(ConstantField<int*>);
// Types that hold parameters where no walk reaches them are not constants:
// a walk over them does not compile.
static_assert(!ConstantField<std::unique_ptr<demo::Dense>>);
static_assert(!ConstantField<CountingParam*>);
static_assert(!ConstantField<demo::Dense[2]>);
static_assert(!ConstantField<std::map<std::string, demo::Dense>>);
static_assert(!ConstantField<std::list<CountingParam>>);
static_assert(!ConstantField<std::shared_ptr<std::vector<CountingParam>>>);
static_assert(!ConstantField<std::array<std::unique_ptr<demo::Dense>, 2>>);

demo::Tuples MakeTuples() {
  return demo::Tuples{
      .mixed = {LazyCountingParam({3}), demo::MakeDense(2, 4), 7},
      .pair = {demo::MakeDense(4, 1, /*bias=*/false),
               {LazyCountingParam({5}), LazyCountingParam({6})}},
      .maybe = std::monostate(),
  };
}

std::vector<std::string> ParamPaths(const demo::Tuples& module) {
  std::vector<std::string> paths;
  VisitParams(module, [&](std::string_view path, const CountingParam&) {
    paths.emplace_back(path);
  });
  return paths;
}

TEST(TupleWalkTest, VisitReachesEveryTupleAndPairElementWithItsIndex) {
  EXPECT_THAT(ParamPaths(MakeTuples()),
              ElementsAre("mixed.0", "mixed.1.weight", "mixed.1.bias",
                          "pair.0.weight", "pair.1.0", "pair.1.1"));
}

TEST(TupleWalkTest, NumParamsCountsTupleElements) {
  // 3 + (4*2 + 4) + 1*4 + 5 + 6
  EXPECT_EQ(30, NumParams(MakeTuples()));
}

TEST(TupleWalkTest, ToDeviceMovesTupleElements) {
  const demo::Tuples moved = ToDevice(MakeTuples(), 1);
  std::vector<int> devices;
  VisitParams(moved, [&](std::string_view, const CountingParam& param) {
    devices.push_back(param.lazy_device());
  });
  EXPECT_THAT(devices, ElementsAre(1, 1, 1, 1, 1, 1));
  EXPECT_EQ(7, std::get<2>(moved.mixed));  // the constant is copied
}

TEST(TupleWalkTest, MapParamsReplacesTupleElements) {
  const demo::Tuples original = MakeTuples();
  const demo::Tuples frozen = NoGrad(original);
  EXPECT_FALSE(std::get<0>(frozen.mixed).lazy_is_require_grad());
  EXPECT_FALSE(frozen.pair.second[1].lazy_is_require_grad());
  EXPECT_TRUE(std::get<0>(original.mixed).lazy_is_require_grad());
}

TEST(TupleWalkTest, RecordRoundTripRestoresTupleElements) {
  const demo::Tuples source = MakeTuples();
  const demo::TuplesRecord record = IntoRecord(source);
  static_assert(std::is_same_v<decltype(record.mixed),
                               std::tuple<ParamRecord<demo::CountingParameter>,
                                          demo::DenseRecord, EmptyRecord>>);
  demo::Tuples target = MakeTuples();
  ASSERT_TRUE(LoadRecord(target, record).ok());
  EXPECT_EQ(std::get<0>(source.mixed).id(), std::get<0>(target.mixed).id());
  EXPECT_EQ(std::get<0>(source.mixed)->data(),
            std::get<0>(target.mixed)->data());
  EXPECT_EQ(source.pair.second[1].id(), target.pair.second[1].id());
  EXPECT_EQ(source.pair.first.weight->data(), target.pair.first.weight->data());
}

TEST(TupleWalkTest, LoadRecordNamesTheTupleElementPath) {
  demo::Tuples source = MakeTuples();
  std::get<1>(source.mixed) = demo::MakeDense(3, 4);
  demo::Tuples target = MakeTuples();
  const absl::Status status = LoadRecord(target, IntoRecord(source));
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(),
              HasSubstr("mixed.1.weight: shape mismatch: the record has "
                        "[4, 3], the module expects [4, 2]"));
}

TEST(TupleWalkTest, ModuleToStringPrintsTupleElements) {
  const std::string text = ModuleToString(MakeTuples());
  EXPECT_THAT(text, HasSubstr("  (mixed): (\n    (0): Param[3] 0 lazy\n"
                              "    (1): demo::Dense(\n"));
  EXPECT_THAT(text, HasSubstr("    (2): 7\n  )\n"));
  EXPECT_THAT(text, HasSubstr("  (maybe): std::monostate\n"));
}

TEST(MonostateVariantTest, EmptyAlternativeHoldsNothing) {
  EXPECT_EQ(6u, ParamPaths(MakeTuples()).size());
  demo::Tuples module = MakeTuples();
  module.maybe = demo::MakeDense(1, 1, /*bias=*/false);
  EXPECT_EQ("maybe.weight", ParamPaths(module).back());
}

TEST(MonostateVariantTest, EmptyAlternativeRoundTrips) {
  const demo::Tuples source = MakeTuples();
  const demo::TuplesRecord record = IntoRecord(source);
  EXPECT_EQ(0u, record.maybe.index());
  demo::Tuples target = MakeTuples();
  EXPECT_TRUE(LoadRecord(target, record).ok());
  EXPECT_EQ(0u, target.maybe.index());
}

TEST(MonostateVariantTest, LoadingADifferentAlternativeNamesThePath) {
  demo::Tuples source = MakeTuples();
  source.maybe = demo::MakeDense(1, 1);
  demo::Tuples target = MakeTuples();
  const absl::Status status = LoadRecord(target, IntoRecord(source));
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(),
              HasSubstr("maybe: the record holds variant alternative 1, the "
                        "module 0"));
  EXPECT_EQ(0u, target.maybe.index());

  // And the other way: a record of the empty alternative into a module that
  // holds a submodule there.
  const absl::Status reverse = LoadRecord(source, IntoRecord(MakeTuples()));
  EXPECT_THAT(reverse.message(),
              HasSubstr("maybe: the record holds variant alternative 0, the "
                        "module 1"));
}

}  // namespace
}  // namespace kindling
