// Compiled by unwalkable_field_test.sh, once per walk: a module whose field
// holds parameters where no walk reaches them (FIELD_TYPE, a std::map of
// submodules by default) must stop the build in every walk. WALK selects the
// walk; WALK=0 compiles none, to show the file is otherwise valid.
#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kindling/module/module.h"
#include "tests/module/test_modules.h"

#ifndef FIELD_TYPE
#define FIELD_TYPE std::map<std::string, demo::Dense>
#endif

namespace demo {

struct Holder {
  FIELD_TYPE hidden;
};
struct HolderRecord;

}  // namespace demo

namespace kindling {

template <>
struct ModuleTraits<::demo::Holder> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Holder";
  using Record = ::demo::HolderRecord;

  template <class Self, class Fn>
  static void ForEachField(Self& module, Fn&& fn) {
    fn("hidden", module.hidden);
  }
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
                                     Fn&& fn) {
    fn("hidden", module.hidden, record.hidden);
  }
  template <class Fn>
  static void ForEachConstant(const ::demo::Holder&, Fn&&) {}
};

}  // namespace kindling

void Walk(demo::Holder& holder) {
#if WALK == 1
  kindling::VisitParams(holder, [](std::string_view, const auto&) {});
#elif WALK == 2
  (void)kindling::NumParams(holder);
#elif WALK == 3
  (void)kindling::ToDevice(holder, 1);
#elif WALK == 4
  (void)kindling::ModuleToString(holder);
#elif WALK == 5
  (void)kindling::RecordOf<FIELD_TYPE>();
#elif WALK == 6
  kindling::ForEachLeaf(holder.hidden, [](std::string_view, auto&) {});
#endif
}
