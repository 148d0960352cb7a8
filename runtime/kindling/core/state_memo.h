// StateMemo: keeps tied parameters tied through a module-wide transformation.
//
// Two Params that share a state (copies, e.g. an embedding used by both the
// encoder and the decoder) hold one value. When a whole module is moved to a
// device or frozen, each Param is transformed on its own; without memory of
// what was already done, the two copies would come out with two states: two
// device copies of the weights, or, for lazy params, two init runs and two
// different values. A StateMemo, passed to every Param transformation of one
// module-wide pass, maps each original state to its transformed state so that
// the copies stay one.
//
//   kindling::StateMemo memo;
//   encoder_embed = encoder_embed.to_device(cuda, &memo);
//   decoder_embed = decoder_embed.to_device(cuda, &memo);  // same state again
//
// A StateMemo is for one pass and one thread; it keeps the states it maps
// alive until it is destroyed.
#ifndef KINDLING_CORE_STATE_MEMO_H_
#define KINDLING_CORE_STATE_MEMO_H_

#include <memory>

#include "absl/container/flat_hash_map.h"

namespace kindling {

class StateMemo {
 public:
  StateMemo() = default;
  StateMemo(const StateMemo&) = delete;
  StateMemo& operator=(const StateMemo&) = delete;

  // Find() returns the transformed state recorded for `original`, or null.
  std::shared_ptr<void> Find(const void* original) const {
    auto it = transformed_.find(original);
    return it == transformed_.end() ? nullptr : it->second.second;
  }

  // Insert() records that `original` became `transformed`.
  void Insert(std::shared_ptr<const void> original,
              std::shared_ptr<void> transformed) {
    const void* key = original.get();
    transformed_.try_emplace(key, std::move(original), std::move(transformed));
  }

 private:
  // The original is kept alive too, so that its address cannot be reused by a
  // new state during the pass.
  absl::flat_hash_map<const void*, std::pair<std::shared_ptr<const void>,
                                             std::shared_ptr<void>>>
      transformed_;
};

}  // namespace kindling

#endif  // KINDLING_CORE_STATE_MEMO_H_
