// Hyper-parameters of the optimizers, with PyTorch's names and defaults, so a
// PyTorch recipe's numbers transfer unchanged:
//
//   torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
//   kindling::Optimizer::AdamW({.lr = 3e-4, .weight_decay = 0.1})
//
// ParamGroup gives a subset of the parameters, chosen by a regular expression
// on their dotted path, its own learning rate or weight decay (PyTorch's
// param_groups, selected by name instead of by list).
#ifndef KINDLING_OPTIM_OPTIONS_H_
#define KINDLING_OPTIM_OPTIONS_H_

#include <optional>
#include <string>
#include <utility>

namespace kindling {

// SgdOptions: torch.optim.SGD. (PyTorch 1.13 has no default lr; 1e-3 is
// PyTorch 2's.) nesterov requires momentum > 0 and dampening == 0.
struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

// AdamOptions: torch.optim.Adam. weight_decay is an L2 term added to the
// gradient.
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
};

// AdamWOptions: torch.optim.AdamW. weight_decay is decoupled: the parameter
// is scaled by 1 - lr * weight_decay before the Adam update.
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.01;
  bool amsgrad = false;
};

// RmsPropOptions: torch.optim.RMSprop. centered divides by the variance
// estimate (square_avg - grad_avg^2) instead of the uncentered one.
struct RmsPropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

// LionOptions: Lion (Chen et al., 2023). The step is lr * sign(beta1 * m +
// (1 - beta1) * grad) with decoupled weight decay (param *= 1 - lr *
// weight_decay); m then moves to beta2 * m + (1 - beta2) * grad. The paper
// advises an lr 3-10x below AdamW's and a weight decay 3-10x above it.
struct LionOptions {
  double lr = 1e-4;
  std::pair<double, double> betas = {0.9, 0.99};
  double weight_decay = 0;
};

// ParamGroup: parameters whose dotted path matches `pattern` (an ECMAScript
// regular expression that must match the whole path, std::regex_match) use
// this group's lr and weight_decay where set, the optimizer's otherwise. The
// first matching group wins; a parameter matching none is in the default
// group. The typical "no decay on biases and norms":
//
//   {.pattern = R"(.*bias|.*norm.*)", .weight_decay = 0.0}
struct ParamGroup {
  std::string pattern = "";
  std::optional<double> lr = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
};

}  // namespace kindling

#endif  // KINDLING_OPTIM_OPTIONS_H_
