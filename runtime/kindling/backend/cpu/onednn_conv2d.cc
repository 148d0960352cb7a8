#include "kindling/backend/cpu/onednn_conv2d.h"

#include <algorithm>
#include <atomic>
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
#include "kindling/backend/cpu/blocked_copy.h"
#include "kindling/backend/cpu/blocked_max_pool.h"
#include "kindling/backend/cpu/onednn_common.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/winograd_conv3x3.h"
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

// PoolBlockOf() is the channel block of `desc`, a layout of `dims` that
// blocked_max_pool.h reads and writes: 16 for nChw16c (oneDNN's AVX-512
// convolutions), 8 for nChw8c (its AVX2 ones), else 0.
int64_t PoolBlockOf(const memory::desc& desc, const memory::dims& dims) {
  if (desc == Plain(dims, memory::format_tag::nChw16c)) return 16;
  if (desc == Plain(dims, memory::format_tag::nChw8c)) return 8;
  return 0;
}

// InputBlockOf() is the channel block of `desc`, an input layout of `dims`,
// where a blocked copy (blocked_copy.h) can stand for it: nChw16c or nChw8c
// over whole blocks of channels (a sample then takes as many floats as in
// NCHW), else 0.
int64_t InputBlockOf(const memory::desc& desc, const memory::dims& dims) {
  const int64_t block = PoolBlockOf(desc, dims);
  return block > 0 && dims[1] % block == 0 ? block : 0;
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

// Winograd(): whether SetWinogradConv3x3() (or KINDLING_WINOGRAD=0, read
// once) leaves winograd_conv3x3.h on.
std::atomic<bool>& Winograd() {
  static std::atomic<bool>* enabled = [] {
    const char* value = std::getenv("KINDLING_WINOGRAD");
    return new std::atomic<bool>(value == nullptr || std::string(value) != "0");
  }();
  return *enabled;
}

// kMaxWinogradChannels: the most input or output channels a layer may have
// for winograd_conv3x3.h to take it. Against oneDNN's direct AVX2 kernel
// (AMD Zen 3, 2 threads, 16 samples, medians of 7 calls, four runs), its
// forward and backward took 0.63-0.96x and 0.64-0.83x the time on 256 ->
// 256 channels at 14 x 14, 0.67-0.73x and 0.50-0.54x on 128 -> 128 at
// 28 x 28, but 1.23-1.55x and 0.77-1.03x on 512 -> 512 at 7 x 7 (the
// channel sums cut into blocks of 128 or not): few tiles a slab for 16 MiB
// of transformed weights, which each slab computes anew.
constexpr int64_t kMaxWinogradChannels = 256;

// ConvArgs: one slab's convolution in oneDNN's terms.
struct ConvArgs {
  memory::dims src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  bool has_bias;

  memory::desc BiasDesc() const {
    return has_bias ? Plain(bias, memory::format_tag::x) : memory::desc();
  }

  // FitsWinograd() is true for what winograd_conv3x3.h computes: a dense
  // 3 x 3 window at stride 1 with one cell of padding on every side (the
  // output the input's size) and whole eight-channel blocks both ways, up
  // to kMaxWinogradChannels.
  bool FitsWinograd() const {
    for (int axis = 0; axis < 2; ++axis) {
      if (weights[2 + axis] != 3 || strides[axis] != 1 || dilates[axis] != 0 ||
          pad_l[axis] != 1 || pad_r[axis] != 1) {
        return false;
      }
    }
    return src[1] % 8 == 0 && dst[1] % 8 == 0 &&
           src[1] <= kMaxWinogradChannels && dst[1] <= kMaxWinogradChannels;
  }

  WinogradShape Winograd(int64_t samples) const {
    return {samples, src[1], dst[1], src[2], src[3]};
  }
};

// Turned() is the convolution that maps `shape`'s output gradient to its
// input gradient: the channels swapped.
WinogradShape Turned(const WinogradShape& shape) {
  return {shape.samples, shape.out_channels, shape.in_channels, shape.height,
          shape.width};
}

// Blocked8() is true where both descriptors are nChw8c, the layout of
// oneDNN's AVX2 kernels (AVX-512 ones take nChw16c and their own
// Winograd): there winograd_conv3x3.h runs in place of the direct kernel.
// Library first: on the example CNN's conv2 at batch 128 (AMD Zen 3, 2
// threads, benches/conv_bench, medians of 3) oneDNN's direct kernel took
// 7.8 ms forward and 17.0 ms backward, Kindling's im2col + OpenBLAS 10.4
// and 20.3 ms (BM_Conv*/conv2), and oneDNN 2.6 has no AVX2 Winograd. Pooled
// as the CNN runs it (BM_Winograd*), winograd_conv3x3.h took 0.67x oneDNN's
// direct time forward and 0.59x backward (input, weight and bias
// gradients), and a CNN epoch 10.7-11.3 s against 14.6-14.7 s.
bool Blocked8(const memory::desc& a, const memory::dims& a_dims,
              const memory::desc& b, const memory::dims& b_dims) {
  return PoolBlockOf(a, a_dims) == 8 && PoolBlockOf(b, b_dims) == 8;
}

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
    const int64_t pad_r = (out[2 + axis] - 1) * window.stride[axis] +
                          window.Span(axis) - input[2 + axis] -
                          window.padding[axis];
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

  // PrepareInto() reorders the user's input `data` into `target`, a buffer
  // in wanted() of the caller's, and is the memory over `target`.
  memory PrepareInto(void* data, float* target, dnnl::stream& stream) {
    user_memory_ = memory(user_, OneDnnEngine(), data);
    const memory into = Over(target);
    Reorder(user_memory_, into, stream);
    return into;
  }

  // Over() is the memory over `values`, already in wanted().
  memory Over(const float* values) const {
    return memory(wanted_, OneDnnEngine(), const_cast<float*>(values));
  }

  // wanted() is the layout the primitive reads or writes.
  const memory::desc& wanted() const { return wanted_; }

  // staged() is the port's own buffer in wanted(), for a caller that reads
  // or writes that layout itself; empty unless reorders().
  const memory& staged() const { return staged_; }
  bool reorders() const { return reorder_.has_value(); }

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
        has_bias(args.has_bias),
        src_block(src.reorders() ? InputBlockOf(desc.src_desc(), args.src) : 0),
        dst_block(dst.reorders() ? PoolBlockOf(desc.dst_desc(), args.dst) : 0),
        winograd(args.FitsWinograd() && Blocked8(desc.src_desc(), args.src,
                                                 desc.dst_desc(), args.dst)
                     ? std::optional<WinogradShape>(args.Winograd(args.src[0]))
                     : std::nullopt) {
    if (winograd.has_value()) {
      winograd_weights.resize(WinogradWeightsSize(args.dst[1], args.src[1]));
    }
  }

  dnnl::convolution_forward::primitive_desc desc;
  dnnl::convolution_forward conv;
  memory scratchpad;
  Port src, weights, dst;
  bool has_bias;
  // The input's channel block where a blocked copy can stand for it, else 0.
  int64_t src_block;
  // The output's channel block where blocked_max_pool.h pools its layout
  // (nChw16c or nChw8c), else 0.
  int64_t dst_block;
  // The slab's shape where winograd_conv3x3.h can run the convolution, and
  // the buffer of its transformed weights.
  std::optional<WinogradShape> winograd;
  std::vector<float> winograd_weights;
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
  // The input's channel block for the weights' gradient where a blocked copy
  // kept by the forward can stand for it, else 0; the same for the input's
  // gradient, where a blocked copy can stand for it.
  int64_t src_block = 0;
  int64_t diff_src_block = 0;
  // The channel block of the layout every primitive reads the incoming
  // gradient in, where blocked_max_pool.h writes it (nChw16c or nChw8c),
  // else 0.
  int64_t diff_dst_block = 0;
  // The data gradient's convolution (output gradient to input gradient)
  // where winograd_conv3x3.h can run it, and its transformed weights.
  std::optional<WinogradShape> winograd_data;
  std::vector<float> winograd_weights;
  // Whether winograd_conv3x3.h computes the weights' gradient too (from
  // the data gradient's nChw8c incoming gradient and the input reordered
  // to nChw8c).
  bool winograd_weight_grad = false;

  // IncomingPorts() are the ports that take the incoming gradient.
  std::vector<const Port*> IncomingPorts() const {
    std::vector<const Port*> ports;
    if (data_diff_dst.has_value()) ports.push_back(&*data_diff_dst);
    if (weights_diff_dst.has_value()) ports.push_back(&*weights_diff_dst);
    return ports;
  }
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
  plan.diff_src_block = plan.data_diff_src->reorders()
                            ? InputBlockOf(desc.diff_src_desc(), args.src)
                            : 0;
  if (args.FitsWinograd() && Blocked8(desc.diff_dst_desc(), args.dst,
                                      desc.diff_src_desc(), args.src)) {
    plan.winograd_data = Turned(args.Winograd(args.src[0]));
    plan.winograd_weights.resize(WinogradWeightsSize(args.dst[1], args.src[1]));
  }
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
  plan.src_block = plan.weights_src->reorders()
                       ? InputBlockOf(desc.src_desc(), args.src)
                       : 0;
  plan.weights_diff_weights.emplace(
      Direction::kOut, Plain(args.weights, memory::format_tag::oihw),
      desc.diff_weights_desc());
  plan.weight_partial.resize(args.weights[0] * args.weights[1] *
                             args.weights[2] * args.weights[3]);
  if (args.has_bias) plan.bias_partial.resize(args.bias[0]);
  plan.winograd_weight_grad = plan.winograd_data.has_value() &&
                              PoolBlockOf(desc.src_desc(), args.src) == 8;
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

// SampleSize() is the elements of one sample of `tensor`.
int64_t SampleSize(const TensorBase& tensor) {
  return tensor.numel() / tensor.shape()[0];
}

// Data() is the first float of `m`'s buffer.
float* Data(const memory& m) {
  return static_cast<float*>(m.get_data_handle());
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

// Slabs<Plan>: each slab's plan of one call, and the cache they came from
// (whose run lock the call holds while it uses the plans' buffers).
template <class Plan>
struct Slabs {
  std::vector<Plan*> plans;
  PlanCache<Plan>* cache = nullptr;
  int64_t batch = 0;

  bool empty() const { return plans.empty(); }

  // Run() calls body(plan, slab, stream) for each slab on Kindling's pool,
  // then waits for the stream.
  template <class Body>
  void Run(const Body& body) const {
    std::lock_guard<std::mutex> lock(cache->run_mutex());
    const int64_t count = static_cast<int64_t>(plans.size());
    RunSlabs(count, [&](int64_t s) {
      // Some convolutions run on oneDNN's generated sgemm (onednn_common.h).
      const SignalsDeferred signals_deferred;
      dnnl::stream stream(OneDnnEngine());
      body(*plans[s], SlabOf(batch, count, s), stream);
      stream.wait();
    });
  }
};

PlanCache<ForwardPlan>& ForwardCache() {
  static PlanCache<ForwardPlan>* cache = new PlanCache<ForwardPlan>;
  return *cache;
}

PlanCache<BackwardPlan>& BackwardCache() {
  static PlanCache<BackwardPlan>* cache = new PlanCache<BackwardPlan>;
  return *cache;
}

// ForwardSlabs() is the plans of the convolution of `input` with `weight`
// (and `bias`) into an output of `out`'s shape, or none where oneDNN does
// not take it (the header's list).
Slabs<ForwardPlan> ForwardSlabs(const Shape& out, const TensorBase& input,
                                const TensorBase& weight,
                                const TensorBase& bias,
                                const Window2dGeometry& window) {
  if (!OneDnnEnabled() || input.dtype() != DType::kF32) return {};
  if (KindlingsKernelIsFaster(input.shape())) return {};
  const int64_t batch = input.shape()[0];
  const int64_t slabs = SlabCount(batch);
  if (slabs == 0) return {};
  Slabs<ForwardPlan> result{{}, &ForwardCache(), batch};
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t size = SlabOf(batch, slabs, s).size();
    const std::optional<memory::desc> user_src = UserDesc(input, size);
    const std::optional<ConvArgs> args = ArgsOf(
        input.shape(), weight.shape(), out, size, bias.defined(), window);
    if (!user_src.has_value() || !args.has_value()) return {};
    ForwardPlan* plan = result.cache->Find(
        KeyOf("forward", input, input.shape(), weight.shape(), out, window,
              bias.defined(), s, size),
        [&] { return std::make_unique<ForwardPlan>(*args, *user_src); });
    if (plan == nullptr) return {};
    result.plans.push_back(plan);
  }
  return result;
}

// ExecuteForward() runs a slab's convolution of `src` (its input in the
// plan's layout) into `dst`, in the plan's output layout.
void ExecuteForward(ForwardPlan& plan, const memory& src,
                    const TensorBase& weight, const TensorBase& bias,
                    const memory& dst, dnnl::stream& stream) {
  if (plan.winograd.has_value() && Winograd().load()) {
    stream.wait();
    WinogradWeights(weight.data_as<float>(), plan.winograd->out_channels,
                    plan.winograd->in_channels, plan.winograd_weights.data());
    WinogradConv3x3(Data(src), plan.winograd_weights.data(),
                    plan.has_bias ? bias.data_as<float>() : nullptr,
                    *plan.winograd, Data(dst));
    return;
  }
  std::unordered_map<int, memory> arguments = {
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, plan.weights.Prepare(weight.data_as<float>(), stream)},
      {DNNL_ARG_DST, dst},
      {DNNL_ARG_SCRATCHPAD, plan.scratchpad}};
  if (plan.has_bias) {
    arguments[DNNL_ARG_BIAS] =
        memory(plan.desc.bias_desc(), OneDnnEngine(), bias.data_as<float>());
  }
  plan.conv.execute(stream, arguments);
}

// BackwardOperands: what a backward call computes, as Conv2dBackward's
// contract (backend.h) names them.
struct BackwardOperands {
  const TensorBase& input_grad;
  const TensorBase& weight_grad;
  const TensorBase& bias_grad;
  const TensorBase& input;
  const TensorBase& weight;
  // The input in the weights' primitive's blocked layout, kept by the
  // forward (blocked_copy.h), or null.
  const float* blocked_input = nullptr;
  // Where the input's gradient is written in the data primitive's blocked
  // layout instead of `input_grad` (blocked_copy.h), or null.
  float* blocked_input_grad = nullptr;
};

// BackwardSlabs() is the plans of the gradients `operands` asks for, the
// convolution's output being of shape `out`, or none where oneDNN does not
// take them.
Slabs<BackwardPlan> BackwardSlabs(const BackwardOperands& operands,
                                  const Shape& out,
                                  const Window2dGeometry& window) {
  // The bias gradient comes with the weights' primitive.
  if (operands.bias_grad.defined() && !operands.weight_grad.defined()) {
    return {};
  }
  const bool wants_input = operands.input_grad.defined();
  const bool wants_weight = operands.weight_grad.defined();
  const bool wants_bias = operands.bias_grad.defined();
  const Shape input_shape =
      wants_input ? operands.input_grad.shape() : operands.input.shape();
  if (KindlingsKernelIsFaster(input_shape)) return {};
  const Shape weight_shape =
      wants_weight ? operands.weight_grad.shape() : operands.weight.shape();
  const int64_t batch = out[0];
  const int64_t slabs = SlabCount(batch);
  if (slabs == 0) return {};
  const int options =
      (wants_input ? 1 : 0) | (wants_weight ? 2 : 0) | (wants_bias ? 4 : 0);
  Slabs<BackwardPlan> result{{}, &BackwardCache(), batch};
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t size = SlabOf(batch, slabs, s).size();
    std::optional<memory::desc> user_src;
    if (wants_weight) {
      user_src = UserDesc(operands.input, size);
      if (!user_src.has_value()) return {};
    }
    const std::optional<ConvArgs> args =
        ArgsOf(input_shape, weight_shape, out, size, wants_bias, window);
    if (!args.has_value()) return {};
    BackwardPlan* plan = result.cache->Find(
        KeyOf("backward", wants_weight ? operands.input : TensorBase(),
              input_shape, weight_shape, out, window, options, s, size),
        [&] {
          auto plan = std::make_unique<BackwardPlan>();
          const auto forward = ForwardDesc(*args);
          if (wants_input) AddDataGradient(*args, forward, *plan);
          if (wants_weight) {
            AddWeightsGradient(*args, forward, *user_src, *plan);
          }
          const std::vector<const Port*> incoming = plan->IncomingPorts();
          plan->diff_dst_block =
              incoming.empty() ? 0
                               : PoolBlockOf(incoming[0]->wanted(), args->dst);
          for (const Port* port : incoming) {
            if (port->wanted() != incoming[0]->wanted() || !port->reorders()) {
              plan->diff_dst_block = 0;
            }
          }
          return plan;
        });
    if (plan == nullptr) return {};
    result.plans.push_back(plan);
  }
  return result;
}

// RunDataGradient() writes `slab`'s input gradient from the incoming
// gradient `diff_dst` (in the data port's layout): by winograd_conv3x3.h
// where the plan and SetWinogradConv3x3() allow, else by oneDNN's
// primitive.
void RunDataGradient(BackwardPlan& plan, const BackwardOperands& operands,
                     const Slab& slab, const memory& diff_dst,
                     dnnl::stream& stream) {
  float* blocked = operands.blocked_input_grad;
  const memory diff_src =
      blocked != nullptr
          ? plan.data_diff_src->Over(
                blocked + slab.begin * SampleSize(operands.input_grad))
          : plan.data_diff_src->Prepare(Sample(operands.input_grad, slab.begin),
                                        stream);
  if (plan.winograd_data.has_value() && Winograd().load()) {
    stream.wait();
    WinogradDataGradientWeights(
        operands.weight.data_as<float>(), plan.winograd_data->in_channels,
        plan.winograd_data->out_channels, plan.winograd_weights.data());
    WinogradConv3x3(Data(diff_dst), plan.winograd_weights.data(), nullptr,
                    *plan.winograd_data, Data(diff_src));
  } else {
    plan.data->execute(
        stream,
        {{DNNL_ARG_DIFF_DST, diff_dst},
         {DNNL_ARG_WEIGHTS,
          plan.data_weights->Prepare(operands.weight.data_as<float>(), stream)},
         {DNNL_ARG_DIFF_SRC, diff_src},
         {DNNL_ARG_SCRATCHPAD, plan.data_scratchpad}});
  }
  if (blocked == nullptr) plan.data_diff_src->Finish(stream);
}

// ExecuteBackward() runs `slab`'s gradient primitives; incoming(port) is the
// incoming gradient in the layout `port` wants (BackwardPlan's ports).
template <class Incoming>
void ExecuteBackward(BackwardPlan& plan, const BackwardOperands& operands,
                     const Slab& slab, const Incoming& incoming,
                     dnnl::stream& stream) {
  memory diff_dst;  // the incoming gradient in the data primitive's layout
  if (plan.data.has_value()) {
    diff_dst = incoming(*plan.data_diff_dst);
    RunDataGradient(plan, operands, slab, diff_dst, stream);
  }
  if (!plan.weights.has_value()) return;
  const memory src =
      operands.blocked_input != nullptr
          ? plan.weights_src->Over(operands.blocked_input +
                                   slab.begin * SampleSize(operands.input))
          : plan.weights_src->Prepare(Sample(operands.input, slab.begin),
                                      stream);
  float* bias_partial =
      plan.bias_partial.empty() ? nullptr : plan.bias_partial.data();
  if (plan.winograd_weight_grad && Winograd().load()) {
    stream.wait();
    WinogradWeightGradient(Data(src), Data(diff_dst),
                           Turned(*plan.winograd_data),
                           plan.weight_partial.data(), bias_partial);
    return;
  }
  std::unordered_map<int, memory> arguments = {
      {DNNL_ARG_DIFF_DST, plan.weights_diff_dst.has_value()
                              ? incoming(*plan.weights_diff_dst)
                              : diff_dst},
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_DIFF_WEIGHTS,
       plan.weights_diff_weights->Prepare(plan.weight_partial.data(), stream)},
      {DNNL_ARG_SCRATCHPAD, plan.weights_scratchpad}};
  if (bias_partial != nullptr) {
    arguments[DNNL_ARG_DIFF_BIAS] =
        memory(Plain({static_cast<int64_t>(plan.bias_partial.size())},
                     memory::format_tag::x),
               OneDnnEngine(), bias_partial);
  }
  plan.weights->execute(stream, arguments);
  plan.weights_diff_weights->Finish(stream);
}

// SumPartials() writes the slabs' partial weight and bias gradients, summed
// in slab order: the result does not depend on which thread ran which slab.
void SumPartials(const Slabs<BackwardPlan>& slabs,
                 const BackwardOperands& operands) {
  auto sum = [&](const TensorBase& target,
                 std::vector<float> BackwardPlan::*partial) {
    float* out = target.data_as<float>();
    const std::vector<float>& first = slabs.plans[0]->*partial;
    std::copy(first.begin(), first.end(), out);
    for (size_t s = 1; s < slabs.plans.size(); ++s) {
      const std::vector<float>& more = slabs.plans[s]->*partial;
      for (size_t i = 0; i < more.size(); ++i) out[i] += more[i];
    }
  };
  if (operands.weight_grad.defined()) {
    sum(operands.weight_grad, &BackwardPlan::weight_partial);
  }
  if (operands.bias_grad.defined()) {
    sum(operands.bias_grad, &BackwardPlan::bias_partial);
  }
}

// ConvolvedShape() is the output shape of the convolution of an input of
// `input` with a weight of `weight` over `window`.
Shape ConvolvedShape(const Shape& input, const Shape& weight,
                     const Window2dGeometry& window) {
  return Shape{input[0], weight[0], window.OutputSize(0, input[2]),
               window.OutputSize(1, input[3])};
}

// PlanesOf() is a slab's share of the convolution's output `out`, in a
// layout of `block` channels innermost.
BlockedPlanes PlanesOf(const Shape& out, const Slab& slab, int64_t block) {
  return {slab.size(), out[1], out[2], out[3], block};
}

// CommonBlock() is the channel block (`field`: ForwardPlan::dst_block or
// BackwardPlan::diff_dst_block) every plan has, or 0 where one is 0 or they
// differ.
template <class Plan>
int64_t CommonBlock(const std::vector<Plan*>& plans, int64_t Plan::*field) {
  if (plans.empty()) return 0;
  const int64_t block = plans[0]->*field;
  for (const Plan* plan : plans) {
    if (plan->*field != block) return 0;
  }
  return block;
}

// ForwardSource: where each slab's convolution reads its input in the plans'
// layout. Where that is a blocked layout a copy can stand for
// (blocked_copy.h), the copy kept with the input's storage, else one this
// call makes and keeps for the backward (grad mode on); otherwise each
// plan's own buffer.
class ForwardSource {
 public:
  ForwardSource(const Slabs<ForwardPlan>& slabs, const TensorBase& input)
      : input_(input),
        block_(CommonBlock(slabs.plans, &ForwardPlan::src_block)) {
    if (block_ == 0) return;
    NoteBlocked(BlockedUse::kInput, input.shape(), block_);
    found_ = FindBlockedCopy(input, block_);
    if (found_ == nullptr && KeepsBlockedInputs()) {
      made_ = NewBlockedCopy(input);
    }
  }

  // Prepare() is `slab`'s input in `plan`'s layout.
  memory Prepare(ForwardPlan& plan, const Slab& slab, dnnl::stream& stream) {
    const int64_t first = slab.begin * SampleSize(input_);
    if (found_ != nullptr) return plan.src.Over(found_ + first);
    float* input = Sample(input_, slab.begin);
    if (made_ == nullptr) return plan.src.Prepare(input, stream);
    return plan.src.PrepareInto(
        input, static_cast<float*>(made_->data()) + first, stream);
  }

  // Keep() keeps the copy this call made, once every slab has written its
  // part.
  void Keep() {
    if (made_ != nullptr) KeepBlockedCopy(input_, block_, std::move(made_));
  }

 private:
  const TensorBase& input_;
  int64_t block_;
  const float* found_ = nullptr;
  std::shared_ptr<Storage> made_;
};

// BlockedInputOf() is the blocked copy of `input` kept with its storage in
// the layout every plan's weights' primitive reads, or null.
const float* BlockedInputOf(const Slabs<BackwardPlan>& slabs,
                            const TensorBase& input) {
  const int64_t block = CommonBlock(slabs.plans, &BackwardPlan::src_block);
  return block == 0 ? nullptr : FindBlockedCopy(input, block);
}

// BlockedInputGradient: the input's gradient in the layout every plan's
// data primitive writes, where the layer before reads that layout
// (blocked_copy.h's kGradient): written there instead of reordered into
// `input_grad`, whose bytes are written only if something else reads them.
class BlockedInputGradient {
 public:
  BlockedInputGradient(const Slabs<BackwardPlan>& slabs,
                       const TensorBase& input_grad)
      : input_grad_(input_grad),
        block_(CommonBlock(slabs.plans, &BackwardPlan::diff_src_block)) {
    if (block_ == 0 || !CanLeaveUnwritten(input_grad) ||
        BlockedOf(BlockedUse::kGradient, input_grad.shape()) != block_) {
      return;
    }
    copy_ = NewBlockedCopy(input_grad);
  }

  // target() is where the data primitives write, or null: `input_grad`.
  float* target() const {
    return copy_ == nullptr ? nullptr : static_cast<float*>(copy_->data());
  }

  // Keep() keeps the copy once every slab has written its part.
  void Keep() {
    if (copy_ != nullptr) {
      KeepBlockedCopyOnly(input_grad_, block_, std::move(copy_));
    }
  }

 private:
  const TensorBase& input_grad_;
  int64_t block_;
  std::shared_ptr<Storage> copy_;
};

}  // namespace

bool OneDnnEnabled() { return GetOneDnnMode() != OneDnnMode::kOff; }

void SetWinogradConv3x3(bool enabled) { Winograd().store(enabled); }

bool OneDnnLeavesToKindling(const Shape& input) {
  return !OneDnnEnabled() || KindlingsKernelIsFaster(input);
}

bool OneDnnConv2d(const TensorBase& out, const TensorBase& input,
                  const TensorBase& weight, const TensorBase& bias,
                  const Window2dGeometry& window) {
  const Slabs<ForwardPlan> slabs =
      ForwardSlabs(out.shape(), input, weight, bias, window);
  if (slabs.empty()) return false;
  ForwardSource source(slabs, input);
  slabs.Run([&](ForwardPlan& plan, const Slab& slab, dnnl::stream& stream) {
    ExecuteForward(plan, source.Prepare(plan, slab, stream), weight, bias,
                   plan.dst.Prepare(Sample(out, slab.begin), stream), stream);
    plan.dst.Finish(stream);
  });
  source.Keep();
  return true;
}

bool OneDnnConv2dBackward(const TensorBase& input_grad,
                          const TensorBase& weight_grad,
                          const TensorBase& bias_grad, const TensorBase& grad,
                          const TensorBase& input, const TensorBase& weight,
                          const Window2dGeometry& window) {
  if (!OneDnnEnabled() || grad.dtype() != DType::kF32) return false;
  BackwardOperands operands{input_grad, weight_grad, bias_grad, input, weight};
  const Slabs<BackwardPlan> slabs =
      BackwardSlabs(operands, grad.shape(), window);
  if (slabs.empty()) return false;
  operands.blocked_input = BlockedInputOf(slabs, input);
  BlockedInputGradient blocked_input_grad(slabs, input_grad);
  operands.blocked_input_grad = blocked_input_grad.target();
  slabs.Run([&](BackwardPlan& plan, const Slab& slab, dnnl::stream& stream) {
    float* slab_grad = Sample(grad, slab.begin);
    ExecuteBackward(
        plan, operands, slab,
        [&](Port& port) { return port.Prepare(slab_grad, stream); }, stream);
  });
  SumPartials(slabs, operands);
  blocked_input_grad.Keep();
  return true;
}

bool OneDnnConv2dMaxPool(const TensorBase& out, const TensorBase& argmax,
                         const TensorBase& input, const TensorBase& weight,
                         const TensorBase& bias, const Window2dGeometry& conv,
                         const Window2dGeometry& pool,
                         PoolActivation activation) {
  const Shape convolved = ConvolvedShape(input.shape(), weight.shape(), conv);
  const Slab all{0, convolved[0]};
  // The smallest block first: no plans for a pool that fits no layout.
  if (!FitsBlockedMaxPool(PlanesOf(convolved, all, 8), pool)) return false;
  const Slabs<ForwardPlan> slabs =
      ForwardSlabs(convolved, input, weight, bias, conv);
  if (slabs.empty()) return false;
  const int64_t block = CommonBlock(slabs.plans, &ForwardPlan::dst_block);
  if (!FitsBlockedMaxPool(PlanesOf(convolved, all, block), pool)) return false;
  const int64_t pooled_sample = out.numel() / convolved[0];
  ForwardSource source(slabs, input);
  slabs.Run([&](ForwardPlan& plan, const Slab& slab, dnnl::stream& stream) {
    ExecuteForward(plan, source.Prepare(plan, slab, stream), weight, bias,
                   plan.dst.staged(), stream);
    stream.wait();
    const int64_t first = slab.begin * pooled_sample;
    MaxPoolBlocked(
        static_cast<const float*>(plan.dst.staged().get_data_handle()),
        PlanesOf(convolved, slab, block), activation,
        out.data_as<float>() + first,
        argmax.defined() ? argmax.data_as<uint8_t>() + first : nullptr);
  });
  source.Keep();
  return true;
}

bool OneDnnConv2dMaxPoolBackward(
    const TensorBase& input_grad, const TensorBase& weight_grad,
    const TensorBase& bias_grad, const TensorBase& pooled_grad,
    const TensorBase& argmax, const TensorBase& input, const TensorBase& weight,
    const Window2dGeometry& conv, const Window2dGeometry& pool) {
  if (!OneDnnEnabled() || pooled_grad.dtype() != DType::kF32) return false;
  BackwardOperands operands{input_grad, weight_grad, bias_grad, input, weight};
  const Shape convolved = ConvolvedShape(
      input_grad.defined() ? input_grad.shape() : input.shape(),
      weight_grad.defined() ? weight_grad.shape() : weight.shape(), conv);
  const Slab all{0, convolved[0]};
  if (!FitsBlockedMaxPool(PlanesOf(convolved, all, 8), pool)) return false;
  const Slabs<BackwardPlan> slabs = BackwardSlabs(operands, convolved, conv);
  if (slabs.empty()) return false;
  const int64_t block = CommonBlock(slabs.plans, &BackwardPlan::diff_dst_block);
  if (!FitsBlockedMaxPool(PlanesOf(convolved, all, block), pool)) return false;
  operands.blocked_input = BlockedInputOf(slabs, input);
  BlockedInputGradient blocked_input_grad(slabs, input_grad);
  operands.blocked_input_grad = blocked_input_grad.target();
  const int64_t pooled_sample = pooled_grad.numel() / convolved[0];
  slabs.Run([&](BackwardPlan& plan, const Slab& slab, dnnl::stream& stream) {
    const int64_t first = slab.begin * pooled_sample;
    ExecuteBackward(
        plan, operands, slab,
        [&](Port& port) {
          UnpoolBlocked(pooled_grad.data_as<float>() + first,
                        argmax.data_as<uint8_t>() + first,
                        PlanesOf(convolved, slab, block),
                        static_cast<float*>(port.staged().get_data_handle()));
          return port.staged();
        },
        stream);
  });
  SumPartials(slabs, operands);
  blocked_input_grad.Keep();
  return true;
}

}  // namespace kindling::cpu
