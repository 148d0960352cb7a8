#include "kindling/backend/cpu/onednn_conv2d.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kindling/backend/cpu/onednn_common.h"
#include "kindling/backend/cpu/parallel.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace kindling::cpu {
namespace {

using dnnl::memory;

memory::desc Any(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

memory::desc Plain(const memory::dims& dims, memory::format_tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

// The descriptor of `batch` samples of `tensor`'s buffer as it is laid out
// (any strides), or nothing for a layout oneDNN cannot describe (a zero or
// negative stride on an axis longer than one).
std::optional<memory::desc> UserDesc(const TensorBase& tensor, int64_t batch) {
  memory::dims dims(tensor.shape().begin(), tensor.shape().end());
  memory::dims steps(tensor.strides().begin(), tensor.strides().end());
  dims[0] = batch;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (dims[axis] == 1) steps[axis] = 1;
    if (steps[axis] <= 0) return std::nullopt;
  }
  return memory::desc(dims, memory::data_type::f32, steps);
}

// ConvArgs: one slab's convolution in oneDNN's terms.
struct ConvArgs {
  memory::dims src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  bool has_bias;

  memory::desc BiasDesc() const {
    return has_bias ? Plain(bias, memory::format_tag::x) : memory::desc();
  }
};

// ArgsOf() is the convolution of `batch` samples, or nothing where oneDNN's
// padding cannot express `window` (a right padding below zero: the last
// window stops short of the input's end).
std::optional<ConvArgs> ArgsOf(const Shape& input, const Shape& weight,
                               const Shape& out, int64_t batch, bool has_bias,
                               const Window2dGeometry& window) {
  ConvArgs args{{batch, input[1], input[2], input[3]},
                {weight[0], weight[1], weight[2], weight[3]},
                {weight[0]},
                {batch, out[1], out[2], out[3]},
                {},
                {},
                {},
                {},
                has_bias};
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t reach = (window.kernel[axis] - 1) * window.dilation[axis] + 1;
    const int64_t pad_r = (out[2 + axis] - 1) * window.stride[axis] + reach -
                          input[2 + axis] - window.padding[axis];
    if (pad_r < 0) return std::nullopt;
    args.strides.push_back(window.stride[axis]);
    args.dilates.push_back(window.dilation[axis] - 1);  // oneDNN's 0 is dense
    args.pad_l.push_back(window.padding[axis]);
    args.pad_r.push_back(pad_r);
  }
  return args;
}

// Port: one operand between the user's buffer and a primitive. Where the
// primitive wants another layout, the port owns a buffer in that layout and
// the reorder between the two.
class Port {
 public:
  enum class Direction { kIn, kOut };

  Port(Direction direction, const memory::desc& user,
       const memory::desc& wanted)
      : direction_(direction), user_(user), wanted_(wanted) {
    if (user == wanted) return;
    staged_ = memory(wanted, OneDnnEngine());
    const dnnl::reorder::primitive_desc desc =
        direction == Direction::kIn
            ? dnnl::reorder::primitive_desc(OneDnnEngine(), user,
                                            OneDnnEngine(), wanted,
                                            OneDnnUserScratchpad())
            : dnnl::reorder::primitive_desc(OneDnnEngine(), wanted,
                                            OneDnnEngine(), user,
                                            OneDnnUserScratchpad());
    reorder_ = dnnl::reorder(desc);
    scratchpad_ = memory(desc.scratchpad_desc(), OneDnnEngine());
  }

  // Prepare() is the memory the primitive reads or writes for the user's
  // `data`: an input is reordered into the port's buffer first.
  memory Prepare(void* data, dnnl::stream& stream) {
    user_memory_ = memory(user_, OneDnnEngine(), data);
    if (!reorder_.has_value()) return user_memory_;
    if (direction_ == Direction::kIn) Reorder(user_memory_, staged_, stream);
    return staged_;
  }

  // wanted() is the layout the primitive reads or writes.
  const memory::desc& wanted() const { return wanted_; }

  // Finish() reorders an output into the user's buffer.
  void Finish(dnnl::stream& stream) {
    if (reorder_.has_value() && direction_ == Direction::kOut) {
      Reorder(staged_, user_memory_, stream);
    }
  }

 private:
  void Reorder(const memory& from, const memory& to, dnnl::stream& stream) {
    reorder_->execute(stream, {{DNNL_ARG_FROM, from},
                               {DNNL_ARG_TO, to},
                               {DNNL_ARG_SCRATCHPAD, scratchpad_}});
  }

  Direction direction_;
  memory::desc user_;
  memory::desc wanted_;
  memory staged_;
  std::optional<dnnl::reorder> reorder_;
  memory scratchpad_;
  memory user_memory_;
};

// AlgorithmOf() lets oneDNN choose each primitive's algorithm
// (convolution_auto) for an input of at least 16 channels, one full block of
// its AVX-512 layouts. There it takes Winograd (F(4x4, 3x3), jit_wino_4x3)
// for the forward and the data gradient of 3x3 stride-1 layers like the
// example CNN's conv2 from 16 samples a slab, and the direct kernel for the
// weights' gradient; elsewhere (AVX2, strides, dilations, other kernels,
// small slabs) the direct one. Measured on conv2 at batch 128, 2 threads,
// AMD Zen 5 (benches/conv_bench, two alternating runs): forward 1.49-1.61
// ms against 2.07-2.13 ms with convolution_direct, backward 4.03-4.19
// against 4.17-4.27 ms; a CNN epoch (train_bench) 4.93-5.08 s against
// 5.23-5.50 s, three alternating runs. Winograd rounds differently from the
// direct sum (on conv2's forward the outputs, up to 7 in magnitude,
// differed by at most 1.1e-5), and the example CNN's test accuracy after 10
// epochs moved from 0.9254 to 0.9258. With fewer input channels the choice
// is the direct kernel: convolution_auto took Winograd for conv1 (1 -> 32
// channels, the input padded to a block), whose forward then ran at 4.7x
// Kindling's kernel's time against 1.4x direct (KINDLING_ONEDNN=all).
dnnl::algorithm AlgorithmOf(const ConvArgs& args) {
  return args.src[1] >= 16 ? dnnl::algorithm::convolution_auto
                           : dnnl::algorithm::convolution_direct;
}

dnnl::convolution_forward::primitive_desc ForwardDesc(const ConvArgs& args) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(
          dnnl::prop_kind::forward_training, AlgorithmOf(args), Any(args.src),
          Any(args.weights), args.BiasDesc(), Any(args.dst), args.strides,
          args.dilates, args.pad_l, args.pad_r),
      OneDnnUserScratchpad(), OneDnnEngine());
}

// ForwardPlan: one slab's forward primitive and its ports.
struct ForwardPlan {
  ForwardPlan(const ConvArgs& args, const memory::desc& user_src)
      : desc(ForwardDesc(args)),
        conv(desc),
        scratchpad(desc.scratchpad_desc(), OneDnnEngine()),
        src(Port::Direction::kIn, user_src, desc.src_desc()),
        weights(Port::Direction::kIn,
                Plain(args.weights, memory::format_tag::oihw),
                desc.weights_desc()),
        dst(Port::Direction::kOut, Plain(args.dst, memory::format_tag::nchw),
            desc.dst_desc()),
        has_bias(args.has_bias) {}

  dnnl::convolution_forward::primitive_desc desc;
  dnnl::convolution_forward conv;
  memory scratchpad;
  Port src, weights, dst;
  bool has_bias;
};

// BackwardPlan: one slab's data and weights gradients' primitives (either
// may be absent) and their ports. The weights' gradient (and the bias's)
// go to the plan's own buffers: the slabs' partial sums.
struct BackwardPlan {
  std::optional<dnnl::convolution_backward_data> data;
  memory data_scratchpad;
  std::optional<Port> data_diff_dst, data_weights, data_diff_src;
  std::optional<dnnl::convolution_backward_weights> weights;
  memory weights_scratchpad;
  // Absent when the weights' primitive reads the incoming gradient in the
  // data primitive's layout: one reorder serves both.
  std::optional<Port> weights_diff_dst;
  std::optional<Port> weights_src, weights_diff_weights;
  std::vector<float> weight_partial, bias_partial;
};

void AddDataGradient(const ConvArgs& args,
                     const dnnl::convolution_forward::primitive_desc& forward,
                     BackwardPlan& plan) {
  const dnnl::convolution_backward_data::primitive_desc desc(
      dnnl::convolution_backward_data::desc(
          AlgorithmOf(args), Any(args.src), Any(args.weights), Any(args.dst),
          args.strides, args.dilates, args.pad_l, args.pad_r),
      OneDnnUserScratchpad(), OneDnnEngine(), forward);
  using Direction = Port::Direction;
  plan.data.emplace(desc);
  plan.data_scratchpad = memory(desc.scratchpad_desc(), OneDnnEngine());
  plan.data_diff_dst.emplace(Direction::kIn,
                             Plain(args.dst, memory::format_tag::nchw),
                             desc.diff_dst_desc());
  plan.data_weights.emplace(Direction::kIn,
                            Plain(args.weights, memory::format_tag::oihw),
                            desc.weights_desc());
  plan.data_diff_src.emplace(Direction::kOut,
                             Plain(args.src, memory::format_tag::nchw),
                             desc.diff_src_desc());
}

void AddWeightsGradient(
    const ConvArgs& args,
    const dnnl::convolution_forward::primitive_desc& forward,
    const memory::desc& user_src, BackwardPlan& plan) {
  const dnnl::convolution_backward_weights::primitive_desc desc(
      dnnl::convolution_backward_weights::desc(
          AlgorithmOf(args), Any(args.src), Any(args.weights), args.BiasDesc(),
          Any(args.dst), args.strides, args.dilates, args.pad_l, args.pad_r),
      OneDnnUserScratchpad(), OneDnnEngine(), forward);
  using Direction = Port::Direction;
  plan.weights.emplace(desc);
  plan.weights_scratchpad = memory(desc.scratchpad_desc(), OneDnnEngine());
  if (!plan.data_diff_dst.has_value() ||
      plan.data_diff_dst->wanted() != desc.diff_dst_desc()) {
    plan.weights_diff_dst.emplace(Direction::kIn,
                                  Plain(args.dst, memory::format_tag::nchw),
                                  desc.diff_dst_desc());
  }
  plan.weights_src.emplace(Direction::kIn, user_src, desc.src_desc());
  plan.weights_diff_weights.emplace(
      Direction::kOut, Plain(args.weights, memory::format_tag::oihw),
      desc.diff_weights_desc());
  plan.weight_partial.resize(args.weights[0] * args.weights[1] *
                             args.weights[2] * args.weights[3]);
  if (args.has_bias) plan.bias_partial.resize(args.bias[0]);
}

// kMaxPlans bounds each cache: a workload whose shapes keep changing (images
// of every size) would otherwise keep a plan and its buffers for each. Past
// it, new shapes run Kindling's kernel.
constexpr size_t kMaxPlans = 256;

// PlanCache: plans by a key of every size, stride and option they depend
// on; a shape oneDNN refused is kept as a null plan. Plans are never
// evicted (a call may hold one while another looks up its own).
template <class Plan>
class PlanCache {
 public:
  template <class Make>
  Plan* Find(const std::string& key, const Make& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= kMaxPlans && !plans_.contains(key)) return nullptr;
    auto [it, inserted] = plans_.try_emplace(key);
    if (inserted) {
      // Built for one thread, as it will run (onednn_common.h).
      const OneDnnOnOneThread one_thread;
      try {
        it->second = make();
      } catch (const dnnl::error&) {
        it->second = nullptr;  // Kindling's kernel takes this shape
      }
    }
    return it->second.get();
  }

  // The lock a call holds while it uses its plans' buffers.
  std::mutex& run_mutex() { return run_mutex_; }

 private:
  std::mutex mutex_;
  std::mutex run_mutex_;
  absl::flat_hash_map<std::string, std::unique_ptr<Plan>> plans_;
};

// The samples [begin, end) of slab `slab` of `slabs`.
struct Slab {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

Slab SlabOf(int64_t batch, int64_t slabs, int64_t slab) {
  return {batch * slab / slabs, batch * (slab + 1) / slabs};
}

// SlabCount(): one slab per thread of Kindling's pool; 0 (decline) for a
// batch smaller than that, whose single oneDNN call would then need
// oneDNN's own OpenMP threads.
int64_t SlabCount(int64_t batch) {
  const int64_t threads = MaxThreads();
  return batch < threads ? 0 : threads;
}

// RunSlabs() runs body(slab) for each slab on Kindling's pool, each call
// with oneDNN single-threaded: oneDNN's OpenMP runtime would otherwise keep
// worker threads of its own spinning after every primitive, on the cores
// the pool needs next (on 2 cores that made a CNN epoch slower than without
// oneDNN).
template <class Body>
void RunSlabs(int64_t slabs, const Body& body) {
  ParallelSlabs(slabs, [&](int64_t slab) {
    const OneDnnOnOneThread one_thread;
    body(slab);
  });
}

std::string KeyOf(const char* kind, const TensorBase& input,
                  const Shape& input_shape, const Shape& weight,
                  const Shape& out, const Window2dGeometry& window, int options,
                  int64_t slab, int64_t slab_size) {
  return absl::StrCat(
      kind, "|", absl::StrJoin(input_shape, ","), "|",
      input.defined() ? absl::StrJoin(input.strides(), ",") : "", "|",
      absl::StrJoin(weight, ","), "|", absl::StrJoin(out, ","), "|",
      absl::StrJoin(window.kernel, ","), "|", absl::StrJoin(window.stride, ","),
      "|", absl::StrJoin(window.padding, ","), "|",
      absl::StrJoin(window.dilation, ","), "|", options, "|", slab, "|",
      slab_size);
}

// The first element of sample `n` of `tensor`.
float* Sample(const TensorBase& tensor, int64_t n) {
  return tensor.data_as<float>() + n * tensor.strides()[0];
}

// KindlingsKernelIsFaster(): one input channel (a first layer on grey
// images), where oneDNN's reorders into and out of its blocked layout cost
// about what the arithmetic does. On the example CNN's conv1 (1 -> 32,
// 28 x 28, batch 128; AMD Zen 5, 2 threads, benches/conv_bench) oneDNN took
// 1.34x Kindling's time forward and 1.24x backward (Kindling's weight and
// bias gradients through small_patch_products.h, sixteen lanes wide there).
bool KindlingsKernelIsFaster(const Shape& input) {
  return GetOneDnnMode() != OneDnnMode::kAll && input[1] == 1;
}

}  // namespace

bool OneDnnEnabled() { return GetOneDnnMode() != OneDnnMode::kOff; }

bool OneDnnConv2d(const TensorBase& out, const TensorBase& input,
                  const TensorBase& weight, const TensorBase& bias,
                  const Window2dGeometry& window) {
  if (!OneDnnEnabled() || out.dtype() != DType::kF32) return false;
  if (KindlingsKernelIsFaster(input.shape())) return false;
  const int64_t batch = input.shape()[0];
  const int64_t slabs = SlabCount(batch);
  if (slabs == 0) return false;
  static PlanCache<ForwardPlan>* cache = new PlanCache<ForwardPlan>;
  std::vector<ForwardPlan*> plans(slabs);
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t size = SlabOf(batch, slabs, s).size();
    const std::optional<memory::desc> user_src = UserDesc(input, size);
    const std::optional<ConvArgs> args =
        ArgsOf(input.shape(), weight.shape(), out.shape(), size, bias.defined(),
               window);
    if (!user_src.has_value() || !args.has_value()) return false;
    plans[s] = cache->Find(
        KeyOf("forward", input, input.shape(), weight.shape(), out.shape(),
              window, bias.defined(), s, size),
        [&] { return std::make_unique<ForwardPlan>(*args, *user_src); });
    if (plans[s] == nullptr) return false;
  }
  std::lock_guard<std::mutex> lock(cache->run_mutex());
  RunSlabs(slabs, [&](int64_t s) {
    ForwardPlan& plan = *plans[s];
    const Slab slab = SlabOf(batch, slabs, s);
    // Some convolutions run on oneDNN's generated sgemm (onednn_common.h).
    const SignalsDeferred signals_deferred;
    dnnl::stream stream(OneDnnEngine());
    std::unordered_map<int, memory> arguments = {
        {DNNL_ARG_SRC, plan.src.Prepare(Sample(input, slab.begin), stream)},
        {DNNL_ARG_WEIGHTS,
         plan.weights.Prepare(weight.data_as<float>(), stream)},
        {DNNL_ARG_DST, plan.dst.Prepare(Sample(out, slab.begin), stream)},
        {DNNL_ARG_SCRATCHPAD, plan.scratchpad}};
    if (plan.has_bias) {
      arguments[DNNL_ARG_BIAS] =
          memory(plan.desc.bias_desc(), OneDnnEngine(), bias.data_as<float>());
    }
    plan.conv.execute(stream, arguments);
    plan.dst.Finish(stream);
    stream.wait();
  });
  return true;
}

bool OneDnnConv2dBackward(const TensorBase& input_grad,
                          const TensorBase& weight_grad,
                          const TensorBase& bias_grad, const TensorBase& grad,
                          const TensorBase& input, const TensorBase& weight,
                          const Window2dGeometry& window) {
  if (!OneDnnEnabled() || grad.dtype() != DType::kF32) return false;
  // The bias gradient comes with the weights' primitive.
  if (bias_grad.defined() && !weight_grad.defined()) return false;
  const bool wants_input = input_grad.defined();
  const bool wants_weight = weight_grad.defined();
  const Shape input_shape = wants_input ? input_grad.shape() : input.shape();
  if (KindlingsKernelIsFaster(input_shape)) return false;
  const Shape weight_shape =
      wants_weight ? weight_grad.shape() : weight.shape();
  const int64_t batch = grad.shape()[0];
  const int64_t slabs = SlabCount(batch);
  if (slabs == 0) return false;
  static PlanCache<BackwardPlan>* cache = new PlanCache<BackwardPlan>;
  const int options = (wants_input ? 1 : 0) | (wants_weight ? 2 : 0) |
                      (bias_grad.defined() ? 4 : 0);
  std::vector<BackwardPlan*> plans(slabs);
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t size = SlabOf(batch, slabs, s).size();
    std::optional<memory::desc> user_src;
    if (wants_weight) {
      user_src = UserDesc(input, size);
      if (!user_src.has_value()) return false;
    }
    const std::optional<ConvArgs> args =
        ArgsOf(input_shape, weight_shape, grad.shape(), size,
               bias_grad.defined(), window);
    if (!args.has_value()) return false;
    plans[s] = cache->Find(
        KeyOf("backward", wants_weight ? input : TensorBase(), input_shape,
              weight_shape, grad.shape(), window, options, s, size),
        [&] {
          auto plan = std::make_unique<BackwardPlan>();
          const auto forward = ForwardDesc(*args);
          if (wants_input) AddDataGradient(*args, forward, *plan);
          if (wants_weight)
            AddWeightsGradient(*args, forward, *user_src, *plan);
          return plan;
        });
    if (plans[s] == nullptr) return false;
  }
  std::lock_guard<std::mutex> lock(cache->run_mutex());
  RunSlabs(slabs, [&](int64_t s) {
    BackwardPlan& plan = *plans[s];
    const Slab slab = SlabOf(batch, slabs, s);
    const SignalsDeferred signals_deferred;  // as in the forward
    dnnl::stream stream(OneDnnEngine());
    float* slab_grad = Sample(grad, slab.begin);
    memory diff_dst;  // the incoming gradient in the data primitive's layout
    if (wants_input) {
      diff_dst = plan.data_diff_dst->Prepare(slab_grad, stream);
      plan.data->execute(
          stream,
          {{DNNL_ARG_DIFF_DST, diff_dst},
           {DNNL_ARG_WEIGHTS,
            plan.data_weights->Prepare(weight.data_as<float>(), stream)},
           {DNNL_ARG_DIFF_SRC, plan.data_diff_src->Prepare(
                                   Sample(input_grad, slab.begin), stream)},
           {DNNL_ARG_SCRATCHPAD, plan.data_scratchpad}});
      plan.data_diff_src->Finish(stream);
    }
    if (wants_weight) {
      std::unordered_map<int, memory> arguments = {
          {DNNL_ARG_DIFF_DST,
           plan.weights_diff_dst.has_value()
               ? plan.weights_diff_dst->Prepare(slab_grad, stream)
               : diff_dst},
          {DNNL_ARG_SRC,
           plan.weights_src->Prepare(Sample(input, slab.begin), stream)},
          {DNNL_ARG_DIFF_WEIGHTS, plan.weights_diff_weights->Prepare(
                                      plan.weight_partial.data(), stream)},
          {DNNL_ARG_SCRATCHPAD, plan.weights_scratchpad}};
      if (!plan.bias_partial.empty()) {
        arguments[DNNL_ARG_DIFF_BIAS] =
            memory(Plain({static_cast<int64_t>(plan.bias_partial.size())},
                         memory::format_tag::x),
                   OneDnnEngine(), plan.bias_partial.data());
      }
      plan.weights->execute(stream, arguments);
      plan.weights_diff_weights->Finish(stream);
    }
    stream.wait();
  });
  // The slabs' partial weight and bias gradients, summed in slab order: the
  // result does not depend on which thread ran which slab.
  auto sum = [&](const TensorBase& target,
                 std::vector<float> BackwardPlan::*partial) {
    float* out = target.data_as<float>();
    const std::vector<float>& first = plans[0]->*partial;
    std::copy(first.begin(), first.end(), out);
    for (int64_t s = 1; s < slabs; ++s) {
      const std::vector<float>& more = plans[s]->*partial;
      for (size_t i = 0; i < more.size(); ++i) out[i] += more[i];
    }
  };
  if (wants_weight) sum(weight_grad, &BackwardPlan::weight_partial);
  if (bias_grad.defined()) sum(bias_grad, &BackwardPlan::bias_partial);
  return true;
}

}  // namespace kindling::cpu
