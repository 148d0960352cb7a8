// GroupNorm: normalizes each sample's channels in `num_groups` groups to
// zero mean and unit (biased) variance over the group's channels and
// positions, then scales and shifts per channel (Wu & He, 2018;
// torch.nn.GroupNorm's `weight` and `bias`).
//
//   auto norm = kindling::nn::GroupNormConfig{.num_groups = 4,
//                                             .num_channels = 32}.Init();
//   Tensor<4> y = norm.Forward(x);  // x: [N, 32, H, W]
#ifndef KINDLING_NN_GROUP_NORM_H_
#define KINDLING_NN_GROUP_NORM_H_

#include <cstdint>
#include <span>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE GroupNorm {
  Param<Tensor<1>> weight;  // [C], ones
  Param<Tensor<1>> bias;    // [C], zeros
  int64_t num_groups = 1;
  double epsilon = 1e-5;

  // Forward(): [N, C, ...] -> same shape, composed of tensor ops. Aborts
  // naming the shapes when C is not the layer's or not a multiple of
  // num_groups.
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    static_assert(D >= 2, "GroupNorm needs [N, C, ...]");
    const int64_t channels = weight->dim(0);
    KINDLING_CHECK(input.dim(1) == channels && channels % num_groups == 0,
                   "GroupNorm(%d groups, %d channels): input %s", num_groups,
                   channels, input.shape().ToString());
    const int64_t batch = input.dim(0);
    const Tensor<3> grouped = input.contiguous().template reshape<3>(
        {batch, num_groups, input.numel() / (batch * num_groups)});
    const Tensor<3> centered = grouped - grouped.mean_dim(2);
    const Tensor<3> variance = (centered * centered).mean_dim(2);
    const Tensor<D> normalized = (centered / (variance + epsilon).sqrt())
                                     .template reshape<D>(input.shape());
    std::vector<int64_t> ones(D, 1);
    ones[1] = channels;
    const Shape per_channel{std::span<const int64_t>(ones)};
    return normalized * weight->template reshape<D>(per_channel) +
           bias->template reshape<D>(per_channel);
  }
};

struct GroupNormConfig {
  int64_t num_groups;
  int64_t num_channels;
  double epsilon = 1e-5;

  GroupNorm Init(const Device& device = Device::Cpu()) const {
    KINDLING_CHECK(num_groups > 0 && num_channels % num_groups == 0,
                   "GroupNorm: %d channels do not split into %d groups",
                   num_channels, num_groups);
    return GroupNorm{Initializer::Ones().Init<1>({num_channels}, device),
                     Initializer::Zeros().Init<1>({num_channels}, device),
                     num_groups, epsilon};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_GROUP_NORM_H_
