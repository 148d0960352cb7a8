// MaxPool2x2Row (the AVX2 2x2 / stride-2 max pool) and its backward row
// against a scalar reference of the general kernel's rule, on every row
// width up to 40 (full eight-window steps plus every tail length), with
// ties, NaNs and infinities, and with the row's last float at the end of a
// readable page; with and without the fused ReLU (PoolActivation::kRelu);
// the rows that keep the argmax as window codes alongside.
#include "kindling/backend/cpu/max_pool_2x2.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

struct Pooled {
  std::vector<float> values;
  std::vector<int64_t> cells;
};

// Reference(): each window scanned in kernel order; a larger value or the
// first NaN replaces the best. With `relu`, the best is then 0 unless it is
// > 0, and its cell -1 where it is <= 0 (relu_backward passes no gradient).
Pooled Reference(const float* top, const float* bottom, int64_t out_w,
                 int64_t top_cell, int64_t width, bool relu) {
  Pooled pooled;
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const float entries[4] = {top[2 * ow], top[2 * ow + 1], bottom[2 * ow],
                              bottom[2 * ow + 1]};
    const int64_t offsets[4] = {0, 1, width, width + 1};
    int best = 0;
    for (int k = 1; k < 4; ++k) {
      const bool first_nan =
          std::isnan(entries[k]) && !std::isnan(entries[best]);
      if (entries[k] > entries[best] || first_nan) best = k;
    }
    const float value = entries[best];
    const int64_t cell = top_cell + 2 * ow + offsets[best];
    if (!relu) {
      pooled.values.push_back(value);
      pooled.cells.push_back(cell);
      continue;
    }
    pooled.values.push_back(value > 0.0f ? value : 0.0f);
    pooled.cells.push_back(value <= 0.0f ? -1 : cell);
  }
  return pooled;
}

void ExpectSame(const Pooled& want, const float* values, const int64_t* cells,
                int64_t out_w) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    if (std::isnan(want.values[ow])) {
      EXPECT_TRUE(std::isnan(values[ow])) << "window " << ow;
    } else {
      EXPECT_EQ(want.values[ow], values[ow]) << "window " << ow;
    }
    if (cells != nullptr) {
      EXPECT_EQ(want.cells[ow], cells[ow]) << "window " << ow;
    }
  }
}

// Draws small integers (so ties are common), with NaN and +-inf mixed in.
std::vector<float> RandomRow(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> pick(0, 19);
  std::vector<float> row(n);
  for (float& x : row) {
    const int p = pick(rng);
    x = p == 0   ? std::numeric_limits<float>::quiet_NaN()
        : p == 1 ? std::numeric_limits<float>::infinity()
        : p == 2 ? -std::numeric_limits<float>::infinity()
                 : static_cast<float>(p % 4);
  }
  return row;
}

// CodeOf() is the window code (backend.h) of window ow's argmax `cell` in
// a row whose top-left cell is top_cell.
uint8_t CodeOf(int64_t cell, int64_t top_cell, int64_t ow, int64_t width) {
  if (cell < 0) return kNoWindowCell;
  const int64_t offset = cell - top_cell - 2 * ow;
  return static_cast<uint8_t>(offset >= width ? 2 + offset - width : offset);
}

class MaxPool2x2Test : public testing::TestWithParam<bool> {};

TEST_P(MaxPool2x2Test, MatchesReferenceForEveryTailLength) {
  const bool relu = GetParam();
  std::mt19937 rng(11);
  for (int64_t out_w = 0; out_w <= 40; ++out_w) {
    for (int trial = 0; trial < 20; ++trial) {
      const int64_t width = 2 * out_w + trial % 2;  // odd widths too
      const std::vector<float> top = RandomRow(rng, width);
      const std::vector<float> bottom = RandomRow(rng, width);
      const int64_t top_cell = 2 * 3 * width;  // output row 3
      const Pooled want =
          Reference(top.data(), bottom.data(), out_w, top_cell, width, relu);
      // One slot past the row: the kernel must not write it.
      std::vector<float> values(out_w + 1, -7.0f);
      std::vector<int64_t> cells(out_w + 1, -7);
      MaxPool2x2Row(top.data(), bottom.data(), out_w, top_cell, width, relu,
                    values.data(), cells.data());
      SCOPED_TRACE(testing::Message() << "out_w " << out_w);
      ExpectSame(want, values.data(), cells.data(), out_w);
      EXPECT_EQ(-7.0f, values[out_w]);
      EXPECT_EQ(-7, cells[out_w]);

      std::vector<float> values_only(out_w + 1, -7.0f);
      MaxPool2x2Row(top.data(), bottom.data(), out_w, top_cell, width, relu,
                    values_only.data(), nullptr);
      ExpectSame(want, values_only.data(), nullptr, out_w);
      EXPECT_EQ(-7.0f, values_only[out_w]);

      // The same windows with the argmax as window codes.
      std::vector<float> coded(out_w + 1, -7.0f);
      std::vector<uint8_t> codes(out_w + 1, 77);
      MaxPool2x2CodesRow(top.data(), bottom.data(), out_w, relu, coded.data(),
                         codes.data());
      ExpectSame(want, coded.data(), nullptr, out_w);
      for (int64_t ow = 0; ow < out_w; ++ow) {
        EXPECT_EQ(CodeOf(want.cells[ow], top_cell, ow, width), codes[ow])
            << "window " << ow;
      }
      EXPECT_EQ(-7.0f, coded[out_w]);
      EXPECT_EQ(77, codes[out_w]);
    }
  }
}

TEST_P(MaxPool2x2Test, ReadsNothingPastTheRow) {
  const bool relu = GetParam();
  // Both rows end exactly where an inaccessible page begins: a read of one
  // float too many faults.
  const int64_t page = sysconf(_SC_PAGESIZE);
  char* map = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, map);
  ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
  std::mt19937 rng(5);
  for (int64_t out_w = 1; out_w <= 19; ++out_w) {
    const int64_t width = 2 * out_w;
    float* bottom = reinterpret_cast<float*>(map + page) - width;
    float* top = bottom - width;
    const std::vector<float> values = RandomRow(rng, 2 * width);
    std::copy(values.begin(), values.end(), top);
    const Pooled want = Reference(top, bottom, out_w, 0, width, relu);
    std::vector<float> out(out_w);
    std::vector<int64_t> cells(out_w);
    MaxPool2x2Row(top, bottom, out_w, 0, width, relu, out.data(), cells.data());
    ExpectSame(want, out.data(), cells.data(), out_w);
  }
  munmap(map, 2 * page);
}

TEST_P(MaxPool2x2Test, BackwardRowRoutesEachGradientToItsArgmax) {
  // The backward of the row the forward pooled (with the fused ReLU's -1
  // entries too), against a zero fill and a scatter of 0 + g, bit for bit:
  // NaN and -0 gradients included (-0 lands as +0, as 0 + -0 does). Rows of
  // eight windows and more (FitsMaxPool2x2Backward); every tail length.
  const bool relu = GetParam();
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int64_t out_w = 8; out_w <= 40; ++out_w) {
    for (int trial = 0; trial < 10; ++trial) {
      const int64_t width = 2 * out_w + trial % 2;
      const std::vector<float> top = RandomRow(rng, width);
      const std::vector<float> bottom = RandomRow(rng, width);
      const int64_t top_cell = 2 * 5 * width;  // output row 5
      std::vector<float> pooled(out_w);
      std::vector<int64_t> cells(out_w);
      MaxPool2x2Row(top.data(), bottom.data(), out_w, top_cell, width, relu,
                    pooled.data(), cells.data());
      std::vector<float> grad(out_w);
      for (int64_t ow = 0; ow < out_w; ++ow) {
        grad[ow] = ow % 7 == 3   ? -0.0f
                   : ow % 7 == 5 ? std::numeric_limits<float>::quiet_NaN()
                                 : uniform(rng);
      }
      // Two input rows, one slot past each row's 2 * out_w cells.
      std::vector<float> want(2 * width, 0.0f);
      for (int64_t ow = 0; ow < out_w; ++ow) {
        if (cells[ow] >= 0) want[cells[ow] - top_cell] += grad[ow];
      }
      std::vector<float> got(2 * width + 1, -7.0f);
      MaxPool2x2BackwardRow(grad.data(), cells.data(), out_w, top_cell, width,
                            got.data(), got.data() + width);
      SCOPED_TRACE(testing::Message()
                   << "out_w " << out_w << " width " << width);
      for (int64_t row = 0; row < 2; ++row) {
        for (int64_t x = 0; x < 2 * out_w; ++x) {
          const float w = want[row * width + x], g = got[row * width + x];
          EXPECT_EQ(std::bit_cast<uint32_t>(w), std::bit_cast<uint32_t>(g))
              << "row " << row << " cell " << x << ": " << w << " vs " << g;
        }
        // The cell past 2 * out_w (an odd width's last column) is untouched.
        if (width > 2 * out_w) {
          EXPECT_EQ(-7.0f, got[row * width + 2 * out_w]);
        }
      }
      EXPECT_EQ(-7.0f, got[2 * width]);

      // From the same windows' codes: the same bits in every cell.
      std::vector<uint8_t> codes(out_w);
      MaxPool2x2CodesRow(top.data(), bottom.data(), out_w, relu, pooled.data(),
                         codes.data());
      std::vector<float> from_codes(2 * width + 1, -7.0f);
      MaxPool2x2BackwardCodesRow(grad.data(), codes.data(), out_w,
                                 from_codes.data(), from_codes.data() + width);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(std::bit_cast<uint32_t>(got[i]),
                  std::bit_cast<uint32_t>(from_codes[i]))
            << "from codes, cell " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PlainAndRelu, MaxPool2x2Test, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "Relu" : "Plain";
                         });

}  // namespace
}  // namespace kindling::cpu
