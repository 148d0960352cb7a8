#include "kindling/backend/cpu/winograd_conv3x3.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kindling::cpu {
namespace {

// kLanes: the channels of a block, one AVX2 vector.
constexpr int64_t kLanes = 8;
// kPoints: the 4 x 4 points of a transformed tile.
constexpr int64_t kPoints = 16;
// kRows: the tiles one register tile of the products holds (6 rows of two
// vectors: 12 accumulators, two weight vectors and a broadcast of 16).
constexpr int kRows = 6;
// kChunkTiles: the tiles transformed, multiplied and transformed back at a
// time. Their transformed inputs and products (on the example CNN's conv2:
// 36 tiles x 16 points x (32 + 64) channels, 216 KiB) and the transformed
// weights (128 KiB) stay in a Zen core's 512 KiB L2 cache.
constexpr int64_t kChunkTiles = 6 * kRows;

// TransformFilter() writes the 4 x 4 G g G^T of the 3 x 3 filter `g`
// (row-major; turned by 180 degrees where `turned`) to `out`, one point
// every `stride` floats. G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
void TransformFilter(const float* g, bool turned, float* out, int64_t stride) {
  float f[3][3];
  for (int i = 0; i < 9; ++i) f[i / 3][i % 3] = g[turned ? 8 - i : i];
  float gg[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    gg[0][j] = f[0][j];
    gg[1][j] = 0.5f * (f[0][j] + f[1][j] + f[2][j]);
    gg[2][j] = 0.5f * (f[0][j] - f[1][j] + f[2][j]);
    gg[3][j] = f[2][j];
  }
  for (int i = 0; i < 4; ++i) {
    const float row[4] = {gg[i][0], 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]),
                          0.5f * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
    for (int j = 0; j < 4; ++j) out[(4 * i + j) * stride] = row[j];
  }
}

// Tiles: where the 2 x 2 output tiles of a shape lie.
struct Tiles {
  explicit Tiles(const WinogradShape& shape)
      : across((shape.width + 1) / 2),
        per_sample(((shape.height + 1) / 2) * across),
        total(shape.samples * per_sample) {}

  int64_t across, per_sample, total;
};

// TileAt: tile `index`'s sample and the input cell its 4 x 4 input starts
// at (one above and left of its outputs, in the padding for the first).
struct TileAt {
  TileAt(const Tiles& tiles, int64_t index)
      : sample(index / tiles.per_sample),
        y(2 * ((index % tiles.per_sample) / tiles.across) - 1),
        x(2 * ((index % tiles.per_sample) % tiles.across) - 1) {}

  int64_t sample, y, x;
};

// InputRow: loads the four cells of one row of a tile's 4 x 4 input,
// eight channels each, zero where they are padding.
struct InputRow {
  const float* plane;  // the block's plane
  int64_t height, width;
  int64_t y, x;  // the tile's first cell
  bool inside;   // the whole 4 x 4 input lies inside the plane
  bool col_in[4];

  // d B of row `i`: B = [1 0 0 0; 0 1 -1 1; -1 1 1 0; 0 0 0 -1].
  void Transformed(int i, __m256 e[4]) const {
    __m256 d[4];
    const bool row_in = inside || (y + i >= 0 && y + i < height);
    for (int j = 0; j < 4; ++j) {
      // The offset is formed only for a cell inside the plane.
      d[j] = row_in && (inside || col_in[j])
                 ? _mm256_loadu_ps(plane + ((y + i) * width + x + j) * kLanes)
                 : _mm256_setzero_ps();
    }
    e[0] = _mm256_sub_ps(d[0], d[2]);
    e[1] = _mm256_add_ps(d[1], d[2]);
    e[2] = _mm256_sub_ps(d[2], d[1]);
    e[3] = _mm256_sub_ps(d[1], d[3]);
  }
};

// TransformInput() writes the 16 points of B^T d B for every channel of
// tile `tile`'s 4 x 4 input d to `v` (point p at v + p * point_stride, the
// channels contiguous). B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. The
// rows are transformed first (d B), in the order that keeps at most three
// of them in registers.
void TransformInput(const float* src, const WinogradShape& shape,
                    const TileAt& tile, float* v, int64_t point_stride) {
  const int64_t plane = shape.height * shape.width * kLanes;
  InputRow row{nullptr,
               shape.height,
               shape.width,
               tile.y,
               tile.x,
               tile.y >= 0 && tile.y + 3 < shape.height && tile.x >= 0 &&
                   tile.x + 3 < shape.width,
               {}};
  for (int j = 0; j < 4; ++j) {
    row.col_in[j] = tile.x + j >= 0 && tile.x + j < shape.width;
  }
  const int64_t blocks = shape.in_channels / kLanes;
  const float* sample = src + tile.sample * blocks * plane;
  auto store = [&](float* out, int point_row, const __m256* a, const __m256* b,
                   bool add) {
    for (int j = 0; j < 4; ++j) {
      _mm256_storeu_ps(
          out + (4 * point_row + j) * point_stride,
          add ? _mm256_add_ps(a[j], b[j]) : _mm256_sub_ps(a[j], b[j]));
    }
  };
  for (int64_t block = 0; block < blocks; ++block) {
    row.plane = sample + block * plane;
    float* out = v + block * kLanes;
    __m256 e1[4], e2[4], other[4];
    row.Transformed(1, e1);
    row.Transformed(2, e2);
    store(out, 1, e1, e2, /*add=*/true);   // e1 + e2
    store(out, 2, e2, e1, /*add=*/false);  // e2 - e1
    row.Transformed(0, other);
    store(out, 0, other, e2, /*add=*/false);  // e0 - e2
    row.Transformed(3, other);
    store(out, 3, e1, other, /*add=*/false);  // e1 - e3
  }
}

// TransformOutput() writes A^T m A (+ bias) of every output channel of tile
// `tile` from its 16 products m (point p at m + p * point_stride) to `dst`,
// the outputs past the image's edge dropped. A^T = [1 1 1 0; 0 1 -1 -1].
void TransformOutput(const float* m, int64_t point_stride, const float* bias,
                     const WinogradShape& shape, const TileAt& tile,
                     float* dst) {
  const int64_t plane = shape.height * shape.width * kLanes;
  const int64_t blocks = shape.out_channels / kLanes;
  const int64_t y = tile.y + 1, x = tile.x + 1;
  const bool second_row = y + 1 < shape.height;
  const bool second_col = x + 1 < shape.width;
  float* sample = dst + tile.sample * blocks * plane;
  for (int64_t block = 0; block < blocks; ++block) {
    const float* in = m + block * kLanes;
    __m256 s[2][4];  // A^T m
    for (int j = 0; j < 4; ++j) {
      const __m256 m0 = _mm256_loadu_ps(in + (0 + j) * point_stride);
      const __m256 m1 = _mm256_loadu_ps(in + (4 + j) * point_stride);
      const __m256 m2 = _mm256_loadu_ps(in + (8 + j) * point_stride);
      const __m256 m3 = _mm256_loadu_ps(in + (12 + j) * point_stride);
      s[0][j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
      s[1][j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
    }
    const __m256 b = bias != nullptr ? _mm256_loadu_ps(bias + block * kLanes)
                                     : _mm256_setzero_ps();
    float* out = sample + block * plane + (y * shape.width + x) * kLanes;
    for (int i = 0; i < (second_row ? 2 : 1); ++i) {
      const __m256 left =
          _mm256_add_ps(_mm256_add_ps(s[i][0], s[i][1]), s[i][2]);
      const __m256 right =
          _mm256_sub_ps(_mm256_sub_ps(s[i][1], s[i][2]), s[i][3]);
      float* row = out + i * shape.width * kLanes;
      _mm256_storeu_ps(row, _mm256_add_ps(left, b));
      if (second_col) _mm256_storeu_ps(row + kLanes, _mm256_add_ps(right, b));
    }
  }
}

// ForTile() calls kernel.operator()<Rows, Vectors>() for a register tile
// of `rows` rows (1 to kRows) by two vectors of columns where `pair`, else
// one, both as constants.
template <int Vectors, class Kernel>
void ForRows(int rows, const Kernel& kernel) {
  switch (rows) {
    case 6:
      return kernel.template operator()<6, Vectors>();
    case 5:
      return kernel.template operator()<5, Vectors>();
    case 4:
      return kernel.template operator()<4, Vectors>();
    case 3:
      return kernel.template operator()<3, Vectors>();
    case 2:
      return kernel.template operator()<2, Vectors>();
    default:
      return kernel.template operator()<1, Vectors>();
  }
}

template <class Kernel>
void ForTile(int rows, bool pair, const Kernel& kernel) {
  static_assert(kRows == 6, "ForRows() covers 1 to 6 rows");
  if (pair) {
    ForRows<2>(rows, kernel);
  } else {
    ForRows<1>(rows, kernel);
  }
}

// MultiplyTile() writes m[r, k] = sum over c of v[r, c] u[c, k] for `Rows`
// rows and `Vectors` x 8 columns k: rows of v `channels` apart, of u and m
// `outs` apart. The sums run in channel order.
template <int Rows, int Vectors>
void MultiplyTile(const float* v, const float* u, int64_t channels,
                  int64_t outs, float* m) {
  __m256 acc[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Vectors; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < channels; ++c) {
    __m256 w[Vectors];
    for (int j = 0; j < Vectors; ++j) {
      w[j] = _mm256_loadu_ps(u + c * outs + j * kLanes);
    }
    for (int r = 0; r < Rows; ++r) {
      const __m256 a = _mm256_broadcast_ss(v + r * channels + c);
      for (int j = 0; j < Vectors; ++j) {
        acc[r][j] = _mm256_fmadd_ps(a, w[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Vectors; ++j) {
      _mm256_storeu_ps(m + r * outs + j * kLanes, acc[r][j]);
    }
  }
}

// MultiplyPoint() writes one point's products m [rows, K] = v [rows, C]
// u [C, K], K in columns of 16 then a last 8.
void MultiplyPoint(const float* v, const float* u, int64_t rows,
                   const WinogradShape& shape, float* m) {
  const int64_t channels = shape.in_channels, outs = shape.out_channels;
  for (int64_t k = 0; k < outs; k += 2 * kLanes) {
    const bool pair = k + 2 * kLanes <= outs;
    for (int64_t r = 0; r < rows; r += kRows) {
      const int count = static_cast<int>(std::min<int64_t>(kRows, rows - r));
      const float* v_rows = v + r * channels;
      float* m_rows = m + r * outs + k;
      ForTile(count, pair, [&]<int Rows, int Vectors>() {
        MultiplyTile<Rows, Vectors>(v_rows, u + k, channels, outs, m_rows);
      });
    }
  }
}

// TransformGradient() writes the 16 points of A g A^T for every channel of
// tile `tile`'s 2 x 2 output gradient g (zero past the image's edge) to `t`
// (point p at t + p * point_stride): the adjoint of TransformOutput()'s
// A^T m A. A = [1 0; 1 1; 1 -1; 0 -1].
void TransformGradient(const float* grad, const WinogradShape& shape,
                       const TileAt& tile, float* t, int64_t point_stride) {
  const int64_t plane = shape.height * shape.width * kLanes;
  const int64_t blocks = shape.out_channels / kLanes;
  const int64_t y = tile.y + 1, x = tile.x + 1;
  const bool second_row = y + 1 < shape.height;
  const bool second_col = x + 1 < shape.width;
  const float* sample = grad + tile.sample * blocks * plane;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t block = 0; block < blocks; ++block) {
    const float* top = sample + block * plane + (y * shape.width + x) * kLanes;
    const float* bottom = top + shape.width * kLanes;
    const __m256 a = _mm256_loadu_ps(top);
    const __m256 b = second_col ? _mm256_loadu_ps(top + kLanes) : zero;
    const __m256 c = second_row ? _mm256_loadu_ps(bottom) : zero;
    const __m256 d =
        second_row && second_col ? _mm256_loadu_ps(bottom + kLanes) : zero;
    // A g: rows [a b], [a + c, b + d], [a - c, b - d], [-c, -d].
    const __m256 rows[4][2] = {
        {a, b},
        {_mm256_add_ps(a, c), _mm256_add_ps(b, d)},
        {_mm256_sub_ps(a, c), _mm256_sub_ps(b, d)},
        {_mm256_sub_ps(zero, c), _mm256_sub_ps(zero, d)}};
    float* out = t + block * kLanes;
    for (int i = 0; i < 4; ++i) {
      // (A g) A^T: a row [l r] becomes [l, l + r, l - r, -r].
      const __m256 l = rows[i][0], r = rows[i][1];
      _mm256_storeu_ps(out + (4 * i + 0) * point_stride, l);
      _mm256_storeu_ps(out + (4 * i + 1) * point_stride, _mm256_add_ps(l, r));
      _mm256_storeu_ps(out + (4 * i + 2) * point_stride, _mm256_sub_ps(l, r));
      _mm256_storeu_ps(out + (4 * i + 3) * point_stride,
                       _mm256_sub_ps(zero, r));
    }
  }
}

// AccumulateTile() adds to z[r, c] the sum over `tiles` (at least one)
// tiles t of g[t, r] v[t, c], for `Rows` rows r and `Vectors` x 8 columns
// c: rows of g `outs` apart, of v and z `channels` apart. The tiles are
// summed in order, starting from z. The loop is a do-while: with a loop
// that might run no times, gcc 12 at -O3 stored every sum to the stack in
// every iteration (three times the time).
template <int Rows, int Vectors>
void AccumulateTile(const float* g, const float* v, int64_t tiles, int64_t outs,
                    int64_t channels, float* z) {
  __m256 acc[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Vectors; ++j) {
      acc[r][j] = _mm256_loadu_ps(z + r * channels + j * kLanes);
    }
  }
  const float* const end = g + tiles * outs;
  do {
    __m256 w[Vectors];
    for (int j = 0; j < Vectors; ++j) w[j] = _mm256_loadu_ps(v + j * kLanes);
    for (int r = 0; r < Rows; ++r) {
      const __m256 a = _mm256_broadcast_ss(g + r);
      for (int j = 0; j < Vectors; ++j) {
        acc[r][j] = _mm256_fmadd_ps(a, w[j], acc[r][j]);
      }
    }
    g += outs;
    v += channels;
  } while (g != end);
  for (int r = 0; r < Rows; ++r) {
    for (int j = 0; j < Vectors; ++j) {
      _mm256_storeu_ps(z + r * channels + j * kLanes, acc[r][j]);
    }
  }
}

// AccumulatePoint() adds one point's g^T v ([K, tiles] x [tiles, C]) to z
// [K, C]: K six rows at a time, C in columns of 16 then a last 8.
void AccumulatePoint(const float* g, const float* v, int64_t tiles,
                     const WinogradShape& shape, float* z) {
  const int64_t channels = shape.in_channels, outs = shape.out_channels;
  for (int64_t c = 0; c < channels; c += 2 * kLanes) {
    const bool pair = c + 2 * kLanes <= channels;
    for (int64_t k = 0; k < outs; k += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, outs - k));
      float* z_rows = z + k * channels + c;
      ForTile(rows, pair, [&]<int Rows, int Vectors>() {
        AccumulateTile<Rows, Vectors>(g + k, v + c, tiles, outs, channels,
                                      z_rows);
      });
    }
  }
}

// UntransformFilter() writes G^T z G (3 x 3, row-major) of the 4 x 4 `z`
// (point p at z[p * stride]) to `out`: the adjoint of TransformFilter().
void UntransformFilter(const float* z, int64_t stride, float* out) {
  float w[3][4];  // G^T z
  for (int j = 0; j < 4; ++j) {
    const float z0 = z[j * stride], z1 = z[(4 + j) * stride],
                z2 = z[(8 + j) * stride], z3 = z[(12 + j) * stride];
    w[0][j] = z0 + 0.5f * (z1 + z2);
    w[1][j] = 0.5f * (z1 - z2);
    w[2][j] = 0.5f * (z1 + z2) + z3;
  }
  for (int i = 0; i < 3; ++i) {
    out[3 * i + 0] = w[i][0] + 0.5f * (w[i][1] + w[i][2]);
    out[3 * i + 1] = 0.5f * (w[i][1] - w[i][2]);
    out[3 * i + 2] = 0.5f * (w[i][1] + w[i][2]) + w[i][3];
  }
}

// SumGradient() writes to `bias_grad` [K] the sum of `grad`'s cells of each
// channel, sample by sample and cell by cell.
void SumGradient(const float* grad, const WinogradShape& shape,
                 float* bias_grad) {
  const int64_t cells = shape.height * shape.width;
  const int64_t blocks = shape.out_channels / kLanes;
  for (int64_t block = 0; block < blocks; ++block) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t n = 0; n < shape.samples; ++n) {
      const float* plane = grad + ((n * blocks + block) * cells) * kLanes;
      for (int64_t i = 0; i < cells; ++i) {
        sum = _mm256_add_ps(sum, _mm256_loadu_ps(plane + i * kLanes));
      }
    }
    _mm256_storeu_ps(bias_grad + block * kLanes, sum);
  }
}

}  // namespace

int64_t WinogradWeightsSize(int64_t out_channels, int64_t in_channels) {
  return kPoints * in_channels * out_channels;
}

void WinogradWeights(const float* weight, int64_t out_channels,
                     int64_t in_channels, float* u) {
  const int64_t point = in_channels * out_channels;
  for (int64_t k = 0; k < out_channels; ++k) {
    for (int64_t c = 0; c < in_channels; ++c) {
      TransformFilter(weight + (k * in_channels + c) * 9, /*turned=*/false,
                      u + c * out_channels + k, point);
    }
  }
}

void WinogradDataGradientWeights(const float* weight, int64_t out_channels,
                                 int64_t in_channels, float* u) {
  const int64_t point = in_channels * out_channels;
  for (int64_t k = 0; k < out_channels; ++k) {
    for (int64_t c = 0; c < in_channels; ++c) {
      TransformFilter(weight + (k * in_channels + c) * 9, /*turned=*/true,
                      u + k * in_channels + c, point);
    }
  }
}

void WinogradConv3x3(const float* src, const float* u, const float* bias,
                     const WinogradShape& shape, float* dst) {
  const Tiles tiles(shape);
  const int64_t v_point = kChunkTiles * shape.in_channels;
  const int64_t m_point = kChunkTiles * shape.out_channels;
  thread_local std::vector<float> v, m;
  v.resize(kPoints * v_point);
  m.resize(kPoints * m_point);
  const int64_t u_point = shape.in_channels * shape.out_channels;
  for (int64_t first = 0; first < tiles.total; first += kChunkTiles) {
    const int64_t rows = std::min(kChunkTiles, tiles.total - first);
    for (int64_t r = 0; r < rows; ++r) {
      TransformInput(src, shape, TileAt(tiles, first + r),
                     v.data() + r * shape.in_channels, v_point);
    }
    for (int64_t p = 0; p < kPoints; ++p) {
      MultiplyPoint(v.data() + p * v_point, u + p * u_point, rows, shape,
                    m.data() + p * m_point);
    }
    for (int64_t r = 0; r < rows; ++r) {
      TransformOutput(m.data() + r * shape.out_channels, m_point, bias, shape,
                      TileAt(tiles, first + r), dst);
    }
  }
}

void WinogradWeightGradient(const float* src, const float* grad,
                            const WinogradShape& shape, float* weight_grad,
                            float* bias_grad) {
  const Tiles tiles(shape);
  const int64_t channels = shape.in_channels, outs = shape.out_channels;
  const int64_t v_point = kChunkTiles * channels;
  const int64_t g_point = kChunkTiles * outs;
  const int64_t z_point = channels * outs;
  thread_local std::vector<float> v, g, z;
  v.resize(kPoints * v_point);
  g.resize(kPoints * g_point);
  z.assign(kPoints * z_point, 0.0f);
  for (int64_t first = 0; first < tiles.total; first += kChunkTiles) {
    const int64_t rows = std::min(kChunkTiles, tiles.total - first);
    for (int64_t r = 0; r < rows; ++r) {
      const TileAt tile(tiles, first + r);
      TransformInput(src, shape, tile, v.data() + r * channels, v_point);
      TransformGradient(grad, shape, tile, g.data() + r * outs, g_point);
    }
    for (int64_t p = 0; p < kPoints; ++p) {
      AccumulatePoint(g.data() + p * g_point, v.data() + p * v_point, rows,
                      shape, z.data() + p * z_point);
    }
  }
  for (int64_t k = 0; k < outs; ++k) {
    for (int64_t c = 0; c < channels; ++c) {
      UntransformFilter(z.data() + k * channels + c, z_point,
                        weight_grad + (k * channels + c) * 9);
    }
  }
  if (bias_grad != nullptr) SumGradient(grad, shape, bias_grad);
}

}  // namespace kindling::cpu
