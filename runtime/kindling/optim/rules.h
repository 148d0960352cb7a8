// The built-in update rules (update_rule.h), one file each:
//
//   sgd_rule.cc      torch.optim.SGD (momentum, dampening, Nesterov)
//   adam_rule.cc     torch.optim.Adam and AdamW (AMSGrad)
//   rmsprop_rule.cc  torch.optim.RMSprop (momentum, centered)
//   lion_rule.cc     Lion (Chen et al., 2023, "Symbolic Discovery of
//                    Optimization Algorithms")
//
// Each runs one fused kernel per parameter from its own kernel table
// (fused_update.h; CPU kernels in optim/cpu/, CUDA in optim/cuda/, the
// element formulas shared in update_math.h) and allocates nothing after the
// first step. SGD and Adam/AdamW have kernels for every floating dtype,
// RMSprop and Lion for f32 and f64. Where a rule has no kernel (a 16-bit
// RMSprop or Lion parameter, a device without kernels) it runs as tensor
// ops, which allocate a few temporaries of the parameter's size per step.
#ifndef KINDLING_OPTIM_RULES_H_
#define KINDLING_OPTIM_RULES_H_

#include <memory>

#include "kindling/optim/options.h"
#include "kindling/optim/update_rule.h"

namespace kindling {

std::shared_ptr<const UpdateRule> SgdRule(const SgdOptions& options);
std::shared_ptr<const UpdateRule> AdamRule(const AdamOptions& options);
std::shared_ptr<const UpdateRule> AdamWRule(const AdamWOptions& options);
std::shared_ptr<const UpdateRule> RmsPropRule(const RmsPropOptions& options);
std::shared_ptr<const UpdateRule> LionRule(const LionOptions& options);

}  // namespace kindling

#endif  // KINDLING_OPTIM_RULES_H_
