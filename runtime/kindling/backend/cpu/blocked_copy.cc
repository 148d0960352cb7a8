#include "kindling/backend/cpu/blocked_copy.h"

#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/grad_mode.h"

namespace kindling::cpu {
namespace {

// NameOf() names the copy of `tensor`'s view in `block`'s layout.
std::string NameOf(const TensorBase& tensor, int64_t block) {
  return absl::StrCat("blocked", block, "|", tensor.offset(), "|",
                      absl::StrJoin(tensor.shape(), ","), "|",
                      absl::StrJoin(tensor.strides(), ","));
}

// C, H, W and the use.
using PlaneKey = std::tuple<int64_t, int64_t, int64_t, BlockedUse>;

// A std::mutex, not absl::Mutex: Debian's Abseil is not built with
// ThreadSanitizer, which would not see the lock (cpu_allocator.h).
struct BlockedReaders {
  std::mutex mutex;
  absl::flat_hash_map<PlaneKey, int64_t> blocks;  // under `mutex`
};

BlockedReaders& Readers() {
  static BlockedReaders* readers = new BlockedReaders;
  return *readers;
}

bool IsNchwF32(const TensorBase& tensor) {
  return tensor.defined() && tensor.dtype() == DType::kF32 &&
         tensor.shape().rank() == 4;
}

// Enabled(): whether SetBlockedCopies() (or KINDLING_BLOCKED_COPIES=0, read
// once) leaves blocked copies on.
std::atomic<bool>& Enabled() {
  static std::atomic<bool>* enabled = [] {
    const char* value = std::getenv("KINDLING_BLOCKED_COPIES");
    return new std::atomic<bool>(value == nullptr ||
                                 std::string_view(value) != "0");
  }();
  return *enabled;
}

// Transpose8x8() transposes the 8 x 8 floats of `rows`, row i becoming
// column i.
void Transpose8x8(__m256 rows[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(rows[i], rows[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(rows[i], rows[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    rows[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    rows[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

// TransposeMatrix() writes dst[j * dst_stride + i] = src[i * src_stride + j]
// for the `rows` x `cols` matrix at `src`: eight by eight in registers, the
// rows and columns past the last eight one at a time.
void TransposeMatrix(const float* src, int64_t rows, int64_t cols,
                     int64_t src_stride, float* dst, int64_t dst_stride) {
  int64_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256 tile[8];
      for (int r = 0; r < 8; ++r) {
        tile[r] = _mm256_loadu_ps(src + (i + r) * src_stride + j);
      }
      Transpose8x8(tile);
      for (int c = 0; c < 8; ++c) {
        _mm256_storeu_ps(dst + (j + c) * dst_stride + i, tile[c]);
      }
    }
    for (; j < cols; ++j) {
      for (int r = 0; r < 8; ++r) {
        dst[j * dst_stride + i + r] = src[(i + r) * src_stride + j];
      }
    }
  }
  for (; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      dst[j * dst_stride + i] = src[i * src_stride + j];
    }
  }
}

}  // namespace

const float* FindBlockedCopy(const TensorBase& tensor, int64_t block) {
  if (!IsNchwF32(tensor) || block <= 0 || !Enabled().load()) return nullptr;
  const std::shared_ptr<Storage> copy =
      tensor.storage()->FindLayoutCopy(NameOf(tensor, block));
  return copy == nullptr ? nullptr : static_cast<const float*>(copy->data());
}

void SetBlockedCopies(bool enabled) { Enabled().store(enabled); }

bool KeepsBlockedInputs() { return Enabled().load() && IsGradEnabled(); }

std::shared_ptr<Storage> NewBlockedCopy(const TensorBase& tensor) {
  if (!IsNchwF32(tensor)) return nullptr;
  return Storage::Allocate(Device::Cpu(), tensor.numel() * sizeof(float));
}

void KeepBlockedCopy(const TensorBase& tensor, int64_t block,
                     std::shared_ptr<Storage> copy) {
  if (copy == nullptr) return;
  tensor.storage()->KeepLayoutCopy(NameOf(tensor, block), std::move(copy));
}

bool CanLeaveUnwritten(const TensorBase& tensor) {
  return IsNchwF32(tensor) && tensor.offset() == 0 && tensor.is_contiguous() &&
         tensor.storage()->nbytes() == tensor.numel() * sizeof(float);
}

void KeepBlockedCopyOnly(const TensorBase& tensor, int64_t block,
                         std::shared_ptr<Storage> copy) {
  const Shape& shape = tensor.shape();
  const int64_t samples = shape[0], channels = shape[1];
  const int64_t plane = shape[2] * shape[3];
  tensor.storage()->KeepLayoutCopyOnly(
      NameOf(tensor, block), std::move(copy),
      [samples, channels, plane, block](const void* copy, void* bytes) {
        const int64_t sample = channels * plane;
        for (int64_t n = 0; n < samples; ++n) {
          UnblockSample(static_cast<const float*>(copy) + n * sample, channels,
                        plane, block, static_cast<float*>(bytes) + n * sample);
        }
      });
}

void NoteBlocked(BlockedUse use, const Shape& shape, int64_t block) {
  if (shape.rank() != 4) return;
  BlockedReaders& readers = Readers();
  std::lock_guard<std::mutex> lock(readers.mutex);
  readers.blocks[PlaneKey{shape[1], shape[2], shape[3], use}] = block;
}

int64_t BlockedOf(BlockedUse use, const Shape& shape) {
  if (shape.rank() != 4 || !Enabled().load()) return 0;
  BlockedReaders& readers = Readers();
  std::lock_guard<std::mutex> lock(readers.mutex);
  const auto it =
      readers.blocks.find(PlaneKey{shape[1], shape[2], shape[3], use});
  return it == readers.blocks.end() ? 0 : it->second;
}

void BlockSample(const float* nchw, int64_t channels, int64_t plane,
                 int64_t block, float* blocked) {
  for (int64_t c0 = 0; c0 < channels; c0 += block) {
    TransposeMatrix(nchw + c0 * plane, block, plane, plane,
                    blocked + c0 * plane, block);
  }
}

void UnblockSample(const float* blocked, int64_t channels, int64_t plane,
                   int64_t block, float* nchw) {
  for (int64_t c0 = 0; c0 < channels; c0 += block) {
    TransposeMatrix(blocked + c0 * plane, plane, block, block,
                    nchw + c0 * plane, plane);
  }
}

}  // namespace kindling::cpu
