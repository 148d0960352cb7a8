// Blocked copies: a convolution's NCHW input kept in oneDNN's channel-blocked
// layout ([N, C / block, H, W, block], nChw8c or nChw16c) with the input's
// storage (Storage's layout copy), so that it is reordered once a step
// instead of once for the forward and again for the weights' gradient, or
// not at all where the layer before wrote the copy itself; and the input's
// gradient left in that layout for the layer before to read, its NCHW bytes
// written only if something else asks for them.
//
// Why: the example CNN's conv2 reordered its input (3.2 MB at batch 128)
// into nChw8c in the forward and again in the backward, and its input's
// gradient out of it, while conv1, Kindling's own kernel, writes that input
// and reads that gradient a sample at a time from its cache. On a Zen 1
// host (AVX2, 2 threads) both pooled layers forward and backward took
// 0.968-0.979x the time with the copies (benches/conv_bench BM_ConvChain,
// three runs), and oneDNN's share of a CNN run's samples went from 22.7% to
// 19.2% (perf record over 150 steps), the transposes taking 0.3%.
//
// A forward keeps an input's copy only while grad mode is on (a backward
// may read it again); a copy lives as long as the tensor's storage and is
// found only for the same view, layout and storage version it was made
// from.
//
//   const float* blocked = FindBlockedCopy(input, 8);   // null: reorder
//   std::shared_ptr<Storage> copy = NewBlockedCopy(input);
//   ...fill copy->data() in nChw8c...
//   KeepBlockedCopy(input, 8, std::move(copy));
#ifndef KINDLING_BACKEND_CPU_BLOCKED_COPY_H_
#define KINDLING_BACKEND_CPU_BLOCKED_COPY_H_

#include <cstdint>
#include <memory>

#include "kindling/tensor/shape.h"
#include "kindling/tensor/storage.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

// FindBlockedCopy() is the copy of `tensor` (f32 [N, C, H, W]) in the layout
// of `block` channels innermost kept with its storage, or null (always null
// with blocked copies off).
const float* FindBlockedCopy(const TensorBase& tensor, int64_t block);

// SetBlockedCopies() turns blocked copies on (the default) or off
// (KINDLING_BLOCKED_COPIES=0 in the environment, read once, starts them
// off); off, every convolution reorders as it would without them. The values
// are the same either way, bit for bit.
void SetBlockedCopies(bool enabled);

// KeepsBlockedInputs() is true where a forward keeps its input's copy: in
// grad mode, with blocked copies on.
bool KeepsBlockedInputs();

// NewBlockedCopy() is memory for a blocked copy of `tensor` (f32 [N, C, H,
// W], as many floats: C a multiple of the block), or null for another
// tensor.
std::shared_ptr<Storage> NewBlockedCopy(const TensorBase& tensor);

// KeepBlockedCopy() keeps `copy` (unless null), filled with `tensor`'s
// values in the layout of `block` channels innermost, with `tensor`'s
// storage.
void KeepBlockedCopy(const TensorBase& tensor, int64_t block,
                     std::shared_ptr<Storage> copy);

// CanLeaveUnwritten() is true where `tensor` views the whole of its storage
// in NCHW order (a kernel's fresh output), whose bytes KeepBlockedCopyOnly()
// may leave unwritten.
bool CanLeaveUnwritten(const TensorBase& tensor);

// KeepBlockedCopyOnly() keeps `copy` as KeepBlockedCopy() does and leaves
// `tensor`'s bytes unwritten until something reads them (Storage's
// data()), which writes them from the copy. REQUIRES:
// CanLeaveUnwritten(tensor).
void KeepBlockedCopyOnly(const TensorBase& tensor, int64_t block,
                         std::shared_ptr<Storage> copy);

// Which layers read a blocked layout: a convolution its input (kInput), the
// layer before it the input's gradient (kGradient).
enum class BlockedUse { kInput, kGradient };

// NoteBlocked() records that some layer reads tensors of `shape` ([N, C, H,
// W]; only C, H and W count) for `use` in the layout of `block` channels
// innermost; BlockedOf() is that block for `shape`, or 0 (always 0 with
// blocked copies off). The layer that writes such a tensor asks, and writes
// it in that layout.
void NoteBlocked(BlockedUse use, const Shape& shape, int64_t block);
int64_t BlockedOf(BlockedUse use, const Shape& shape);

// BlockSample() writes one sample's `channels` planes of `plane` floats,
// `nchw` [C, plane], into `blocked` [C / block, plane, block];
// UnblockSample() the other way. Library first: oneDNN's reorder primitive
// (built once, executed per sample as these are called; the same bits) took
// 4.43-4.48 us a sample of the example's conv2 input ([32, 14, 14] to
// nChw8c, in cache, one thread, Zen 1) and 4.44-4.57 us back, these 3.66
// and 4.00 us; over a slab of 64 samples 4.68-4.75 against 3.83-3.92 us and
// 4.64-4.73 against 4.11-4.22 us.
void BlockSample(const float* nchw, int64_t channels, int64_t plane,
                 int64_t block, float* blocked);
void UnblockSample(const float* blocked, int64_t channels, int64_t plane,
                   int64_t block, float* nchw);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_BLOCKED_COPY_H_
