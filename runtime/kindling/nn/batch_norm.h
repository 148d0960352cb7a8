// BatchNorm: normalizes each channel (axis 1) of an [N, C, ...] input with
// batch statistics while training, and with running statistics at inference.
//
// The running mean and variance are Buffers: saved and moved with the model,
// never trained, and updated by the const Forward() in training mode (PyTorch's
// momentum convention: running = (1 - momentum) * running + momentum * batch,
// with the unbiased batch variance).
//
//   auto bn = kindling::nn::BatchNormConfig{64}.Init<4>();  // BatchNorm2d
//   Tensor<4> y = bn.Forward(x, ForwardMode::kTraining);  // batch statistics
//   Tensor<4> z = bn.Forward(x, ForwardMode::kInference);  // running ones
#ifndef KINDLING_NN_BATCH_NORM_H_
#define KINDLING_NN_BATCH_NORM_H_

#include <cstdint>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/buffer.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/normalize.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// R is the input rank: 2 for [N, C], 3 for [N, C, L], 4 for [N, C, H, W].
template <int R>
struct KINDLING_MODULE BatchNorm {
  static_assert(R >= 2, "BatchNorm needs an [N, C, ...] input");

  Param<Tensor<1>> gamma;          // [C], ones
  Param<Tensor<1>> beta;           // [C], zeros
  Buffer<Tensor<1>> running_mean;  // [C], zeros
  Buffer<Tensor<1>> running_var;   // [C], ones
  double momentum = 0.1;
  double epsilon = 1e-5;

  // Forward() in kTraining normalizes with this batch's statistics and
  // folds them into the running ones; in kInference it uses the running
  // statistics and changes nothing.
  Tensor<R> Forward(const Tensor<R>& input, ForwardMode mode) const {
    if (mode == ForwardMode::kInference) {
      return Normalize(input, ChannelView(running_mean.value(), input),
                       ChannelView(running_var.value(), input));
    }
    return ForwardTraining(input);
  }

 private:
  // ForwardTraining(): the normalization is one autodiff node with a fused
  // backward (normalize.h); the running statistics are updated with detached
  // values, so no step's graph outlives the step through them.
  Tensor<R> ForwardTraining(const Tensor<R>& input) const {
    BatchStatistics batch;
    const Tensor<R> output(BatchNormTrainOp(input.base(), gamma->base(),
                                            beta->base(), epsilon, &batch));
    const int64_t per_channel = input.numel() / input.dim(1);
    const double unbias = static_cast<double>(per_channel) / (per_channel - 1);
    const Tensor<1> batch_mean(batch.mean);
    const Tensor<1> batch_var(batch.variance);
    // The running statistics keep their own dtype (f32 buffers under an f64
    // or f16 batch).
    running_mean.update_with([&](const Tensor<1>& running) {
      return (running * (1 - momentum) +
              batch_mean.to(running.dtype()) * momentum)
          .detach();
    });
    running_var.update_with([&](const Tensor<1>& running) {
      return (running * (1 - momentum) +
              batch_var.to(running.dtype()) * (momentum * unbias))
          .detach();
    });
    return output;
  }

  // [C] -> [1, C, 1, ...] of rank R, to broadcast over an input.
  static Tensor<R> ChannelView(const Tensor<1>& per_channel,
                               const Tensor<R>& input) {
    Shape shape;
    for (int axis = 0; axis < R; ++axis) {
      shape.push_back(axis == 1 ? input.dim(1) : 1);
    }
    return per_channel.template reshape<R>(shape);
  }

  Tensor<R> Normalize(const Tensor<R>& input, const Tensor<R>& mean,
                      const Tensor<R>& variance) const {
    return (input - mean) / (variance + epsilon).sqrt() *
               ChannelView(*gamma, input) +
           ChannelView(*beta, input);
  }
};

struct BatchNormConfig {
  int64_t num_features;
  double momentum = 0.1;
  double epsilon = 1e-5;

  // Init() builds a lazy BatchNorm: allocates nothing, running statistics
  // included.
  template <int R>
  BatchNorm<R> Init(const Device& device = Device::Cpu()) const {
    return BatchNorm<R>{
        Initializer::Ones().Init<1>({num_features}, device),
        Initializer::Zeros().Init<1>({num_features}, device),
        Buffer<Tensor<1>>(Initializer::Zeros().Init<1>(
            {num_features}, device, std::nullopt, std::nullopt, false)),
        Buffer<Tensor<1>>(Initializer::Ones().Init<1>(
            {num_features}, device, std::nullopt, std::nullopt, false)),
        momentum,
        epsilon};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_BATCH_NORM_H_
