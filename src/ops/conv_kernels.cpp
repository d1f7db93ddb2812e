// Register-blocked dot products on Eigen's SIMD packets (AVX-512, AVX2 or SSE, whichever the build targets; a
// fused multiply-add where the target has one). A block of R weight rows × C rows of t keeps R·C vector
// accumulators, so each packet loaded serves R or C multiply-adds; the weights stream from memory once per block
// of rows (prefetched ahead: the hardware prefetcher alone left layer-4 weights read at about half the bandwidth a
// plain stream gets), the rows of t stay in cache.
#include "ops/conv_kernels.h"

#include <algorithm>
#include <type_traits>

#include "util/eigen.h"

namespace grist {
namespace {

namespace ei = Eigen::internal;

template <class T>
using Packet = typename ei::packet_traits<T>::type;

// Weight rows per block: 4 × 4 accumulators plus the operands fill 21 of AVX-512's 32 vector registers; with 16
// registers, 2 rows.
constexpr int kBlockRows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 4 : 2;
constexpr int kBlockCols = 4;

// The loops over a block's rows and columns must unroll, or -O2 keeps the accumulators in memory (measured: 3×
// slower).
#define GRIST_UNROLL _Pragma("GCC unroll 16")

// How far ahead of the loads each weight row is prefetched (0: not prefetched, the rows are in cache).
constexpr int64_t kPrefetchBytes = 1024;

// The start value of row r (0 without start values), and the start values from row i on.
template <class T>
T start_of(const T* start, int64_t r) {
  return start ? start[r] : T(0);
}
template <class T>
const T* rows_from(const T* start, int64_t i) {
  return start ? start + i : nullptr;
}

// y[r·ldy + j] = start[r] + Σ_c w[r·k + c] · t[j·k + c] for r < R, j < C.
template <class T, int R, int C, int64_t AheadBytes>
void block(const T* w, const T* t, int64_t k, int64_t ldy, const T* start, T* y) {
  using P = Packet<T>;
  constexpr int64_t lanes = ei::packet_traits<T>::size;
  constexpr int64_t ahead = AheadBytes / static_cast<int64_t>(sizeof(T));
  P acc[R][C];
  GRIST_UNROLL for (int r = 0; r < R; ++r)
    GRIST_UNROLL for (int j = 0; j < C; ++j) acc[r][j] = ei::pset1<P>(T(0));
  const int64_t vectorised = k / lanes * lanes;
  for (int64_t c = 0; c < vectorised; c += lanes) {
    P wv[R];
    GRIST_UNROLL for (int r = 0; r < R; ++r) {
      // A prefetch past the row's end is harmless (prefetches do not fault); the next rows are read soon anyway.
      if constexpr (AheadBytes > 0) __builtin_prefetch(w + r * k + c + ahead);
      wv[r] = ei::ploadu<P>(w + r * k + c);
    }
    GRIST_UNROLL for (int j = 0; j < C; ++j) {
      const P tv = ei::ploadu<P>(t + j * k + c);
      GRIST_UNROLL for (int r = 0; r < R; ++r) acc[r][j] = ei::pmadd(wv[r], tv, acc[r][j]);
    }
  }
  GRIST_UNROLL for (int r = 0; r < R; ++r)
    GRIST_UNROLL for (int j = 0; j < C; ++j) {
      T sum = ei::predux(acc[r][j]);
      for (int64_t c = vectorised; c < k; ++c) sum += w[r * k + c] * t[j * k + c];
      y[r * ldy + j] = start_of(start, r) + sum;
    }
}

// R weight rows against every row of t: the first block of columns streams the rows in (prefetching), the others
// find them in cache.
template <class T, int R>
void row_block(const T* w, const T* t, int64_t k, int64_t p, const T* start, T* y) {
  int64_t j = 0;
  if (p >= kBlockCols) {
    block<T, R, kBlockCols, kPrefetchBytes>(w, t, k, p, start, y);
    for (j = kBlockCols; j + kBlockCols <= p; j += kBlockCols)
      block<T, R, kBlockCols, 0>(w, t + j * k, k, p, start, y + j);
  }
  const T* tj = t + j * k;
  T* yj = y + j;
  if (j == 0) {
    switch (p) {
      case 1: return block<T, R, 1, kPrefetchBytes>(w, tj, k, p, start, yj);
      case 2: return block<T, R, 2, kPrefetchBytes>(w, tj, k, p, start, yj);
      case 3: return block<T, R, 3, kPrefetchBytes>(w, tj, k, p, start, yj);
      default: return;
    }
  }
  switch (p - j) {
    case 1: return block<T, R, 1, 0>(w, tj, k, p, start, yj);
    case 2: return block<T, R, 2, 0>(w, tj, k, p, start, yj);
    case 3: return block<T, R, 3, 0>(w, tj, k, p, start, yj);
    default: return;
  }
  static_assert(kBlockCols == 4, "the switch above covers the remainders of 4");
}

// Grids of 5 to 9 points take every point in one block, so each weight row streams in once with all of its work.
// Blocks of 4 points left the first block waiting on memory, then re-ran the rows from cache for the rest
// (SqueezeNet's 3×3 tail, 2 MB of weights in its 1000-class conv). Rows per block: 2 × 9 accumulators plus the
// operands fit 32 vector registers, 1 × 9 fit 16. Each output's sum is the same as in row_block's blocks.
constexpr int kWideRows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 2 : 1;
constexpr int64_t kWidestBlock = 9;
// Two rows prefetched 1 KB ahead kept too few bytes in flight: 8 KB ahead, SqueezeNet's 1000-class conv (2 MB of
// weights) went 0.082 -> 0.074 ms in order, its 3×3-grid expand3x3 convs 0.030 -> 0.025 (4-12 KB level, 2 KB 0.081).
constexpr int64_t kWidePrefetchBytes = 8192;

template <class T, int R>
void wide_row_block(const T* w, const T* t, int64_t k, int64_t p, const T* start, T* y) {
  switch (p) {
    case 5: return block<T, R, 5, kWidePrefetchBytes>(w, t, k, p, start, y);
    case 6: return block<T, R, 6, kWidePrefetchBytes>(w, t, k, p, start, y);
    case 7: return block<T, R, 7, kWidePrefetchBytes>(w, t, k, p, start, y);
    case 8: return block<T, R, 8, kWidePrefetchBytes>(w, t, k, p, start, y);
    case 9: return block<T, R, 9, kWidePrefetchBytes>(w, t, k, p, start, y);
    default: return;
  }
}

// Tiles of tile_product: kTileRows weight rows × kTilePackets packets of columns. With 32 vector registers 8 × 2
// = 16 accumulators; with 16 (AVX2), 6 × 2 = 12, plus two packets of b and a broadcast weight: 15 registers. A
// multiply-add's latency (4-5 cycles at two a cycle) needs 8 to 10 independent accumulators to keep both units
// busy, and each step's 2 + R loads serve 2·R multiply-adds. 4 × 2 on AVX2 left the units idle: squeezenet1_1's
// 3×3 expand convs ran at 25 GFLOP/s, a third of the core's peak (docs/PERFORMANCE.md, session 17).
constexpr int kTileRows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 8 : 6;
constexpr int kTilePackets = 2;

// Each tile walks b down its columns, one row of 1-3 packets per step, `ldb` apart, and its R weight rows one value
// per step. Two software prefetches per step:
// - b's row 8 steps ahead: the hardware prefetchers left those loads waiting on the L2 cache (warm, alone: resnet18's
//   layer3 product, m 256 × k 2304 × 16 columns, 0.156 -> 0.110 ms; layer2's, k 1152 × 64 columns, 0.088 -> 0.079;
//   4 and 16 steps ahead level);
// - in a row block's first tile (NextRows), the next block's weights, R·k contiguous values, R a step: in a forward
//   they come from beyond the L2 cache (in order: resnet18's layer3 convs 0.161 -> 0.156 ms, layer2's 0.131 ->
//   0.125, squeezenet1_1's 7×7 expand3x3 0.039 -> 0.034). Each row's own weights, prefetched every 16 steps
//   instead, was slower on all but layer3.
// Prefetches do not fault: those past b's or w's end are harmless.
constexpr int64_t kTileAheadRows = 8;
template <class T, int NP>
void prefetch_b_row(const T* row) {
  constexpr int64_t lanes = ei::packet_traits<T>::size;
  GRIST_UNROLL for (int q = 0; q < NP; ++q) __builtin_prefetch(row + q * lanes);
}

// y[r·ldy + q] = start[r] + Σ_c w[r·k + c] · b[c·ldb + q] for r < R and the NP packets of columns q from 0.
template <class T, int R, int NP, bool NextRows = false>
void tile(const T* w, const T* b, int64_t ldb, int64_t k, const T* start, T* y, int64_t ldy) {
  using P = Packet<T>;
  constexpr int64_t lanes = ei::packet_traits<T>::size;
  P acc[R][NP];
  GRIST_UNROLL for (int r = 0; r < R; ++r)
    GRIST_UNROLL for (int q = 0; q < NP; ++q) acc[r][q] = ei::pset1<P>(start_of(start, r));
  for (int64_t c = 0; c < k; ++c) {
    if constexpr (NextRows) __builtin_prefetch(w + R * k + c * R);
    prefetch_b_row<T, NP>(b + (c + kTileAheadRows) * ldb);
    P bv[NP];
    GRIST_UNROLL for (int q = 0; q < NP; ++q) bv[q] = ei::ploadu<P>(b + c * ldb + q * lanes);
    GRIST_UNROLL for (int r = 0; r < R; ++r) {
      const P wr = ei::pset1<P>(w[r * k + c]);
      GRIST_UNROLL for (int q = 0; q < NP; ++q) acc[r][q] = ei::pmadd(wr, bv[q], acc[r][q]);
    }
  }
  GRIST_UNROLL for (int r = 0; r < R; ++r)
    GRIST_UNROLL for (int q = 0; q < NP; ++q) ei::pstoreu(y + r * ldy + q * lanes, acc[r][q]);
}

// Float packets with masked loads and stores (AVX-512's 16 lanes, AVX's 8): the columns past the last whole packet
// as one masked tile (masked-off lanes load as zero, feed nothing and are not stored).
#if defined(EIGEN_VECTORIZE_AVX512)
#define GRIST_MASKED_FLOAT 1
using FloatMask = uint16_t;
#elif defined(EIGEN_VECTORIZE_AVX)
#define GRIST_MASKED_FLOAT 1
using FloatMask = uint8_t;
#endif

#ifdef GRIST_MASKED_FLOAT
// The most packets of columns a row block's last tile takes at once: 3 while R × 3 accumulators, two packets of b
// and the broadcast still fit the registers (8 × 3 + 3 of 32; 4 × 3 + 3 of 16), else 2 (6 × 3 would spill on AVX2).
template <int R>
constexpr int64_t kMaxTailPackets = R * 3 + 3 <= EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS ? 3 : 2;

// A tile of NP packets of columns whose last packet holds `last` columns (1 to a whole packet).
template <int R, int NP, bool NextRows = false>
void masked_tile(const float* w, const float* b, int64_t ldb, int64_t k, int64_t last, const float* start, float* y,
                 int64_t ldy) {
  using P = Packet<float>;
  constexpr int64_t lanes = ei::packet_traits<float>::size, end = (NP - 1) * lanes;
  const auto mask = static_cast<FloatMask>((1u << last) - 1);
  P acc[R][NP];
  GRIST_UNROLL for (int r = 0; r < R; ++r)
    GRIST_UNROLL for (int q = 0; q < NP; ++q) acc[r][q] = ei::pset1<P>(start_of(start, r));
  for (int64_t c = 0; c < k; ++c) {
    if constexpr (NextRows) __builtin_prefetch(w + R * k + c * R);
    prefetch_b_row<float, NP>(b + (c + kTileAheadRows) * ldb);
    P bv[NP];
    GRIST_UNROLL for (int q = 0; q + 1 < NP; ++q) bv[q] = ei::ploadu<P>(b + c * ldb + q * lanes);
    bv[NP - 1] = ei::ploadu<P>(b + c * ldb + end, mask);
    GRIST_UNROLL for (int r = 0; r < R; ++r) {
      const P wr = ei::pset1<P>(w[r * k + c]);
      GRIST_UNROLL for (int q = 0; q < NP; ++q) acc[r][q] = ei::pmadd(wr, bv[q], acc[r][q]);
    }
  }
  GRIST_UNROLL for (int r = 0; r < R; ++r) {
    GRIST_UNROLL for (int q = 0; q + 1 < NP; ++q) ei::pstoreu(y + r * ldy + q * lanes, acc[r][q]);
    ei::pstoreu(y + r * ldy + end, acc[r][NP - 1], mask);
  }
}

// The last 1 to 3 packets of columns as one tile, its last packet holding `last` columns.
template <int R, bool NextRows>
void masked_tail(const float* w, const float* b, int64_t ldb, int64_t k, int64_t packets, int64_t last,
                 const float* start, float* y, int64_t ldy) {
  constexpr int64_t lanes = ei::packet_traits<float>::size;
  if (last == lanes) {  // no partial packet: plain loads and stores
    switch (packets) {
      case 1: return tile<float, R, 1, NextRows>(w, b, ldb, k, start, y, ldy);
      case 2: return tile<float, R, 2, NextRows>(w, b, ldb, k, start, y, ldy);
      case 3:
        if constexpr (kMaxTailPackets<R> >= 3) return tile<float, R, 3, NextRows>(w, b, ldb, k, start, y, ldy);
        return;
      default: return;
    }
  }
  switch (packets) {
    case 1: return masked_tile<R, 1, NextRows>(w, b, ldb, k, last, start, y, ldy);
    case 2: return masked_tile<R, 2, NextRows>(w, b, ldb, k, last, start, y, ldy);
    case 3:
      if constexpr (kMaxTailPackets<R> >= 3) return masked_tile<R, 3, NextRows>(w, b, ldb, k, last, start, y, ldy);
      return;
    default: return;
  }
}

// Float rows: 2-packet tiles (the first one prefetching the next rows' weights), then the last 1 to 3 packets (1 or
// 2 where 3 would spill: kMaxTailPackets) as one tile, its last packet masked if partial. A one-packet tile, or a
// masked tile of a few columns, after the 2-packet ones cost almost as much as another 2-packet tile each (m 128,
// k 288, warm: n = 49 took 30 µs as 32 + 16 + 1 columns, n = 64 25 µs; now 25 µs).
template <int R, bool NextRows = false>
void masked_row_block(const float* w, const float* b, int64_t ldb, int64_t k, int64_t n, const float* start,
                      float* y, int64_t ldy) {
  constexpr int64_t lanes = ei::packet_traits<float>::size, max_tail = kMaxTailPackets<R>;
  int64_t q = 0, packets = (n + lanes - 1) / lanes;
  if (packets > max_tail) {
    tile<float, R, 2, NextRows>(w, b, ldb, k, start, y, ldy);
    packets -= 2, q += 2 * lanes;
  }
  for (; packets > max_tail; packets -= 2, q += 2 * lanes) tile<float, R, 2>(w, b + q, ldb, k, start, y + q, ldy);
  const int64_t last = n - q - (packets - 1) * lanes;
  static_assert(kTilePackets == 2, "the loops above take 2 packets at a time");
  if (q > 0) return masked_tail<R, false>(w, b + q, ldb, k, packets, last, start, y + q, ldy);
  return masked_tail<R, NextRows>(w, b, ldb, k, packets, last, start, y, ldy);
}

#endif

// The columns past the last whole packet, one at a time.
template <class T>
void column_tail(const T* w, const T* b, int64_t ldb, int64_t rows, int64_t k, int64_t cols, const T* start, T* y,
                 int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < cols; ++q) {
      T sum = start_of(start, r);
      for (int64_t c = 0; c < k; ++c) sum += w[r * k + c] * b[c * ldb + q];
      y[r * ldy + q] = sum;
    }
}

// R weight rows against all n columns: wide tiles, then one packet, then single columns (floats: masked_row_block;
// this path, for doubles and targets without masked loads, does not prefetch the next rows).
template <class T, int R, bool NextRows = false>
void tile_row_block(const T* w, const T* b, int64_t ldb, int64_t k, int64_t n, const T* start, T* y, int64_t ldy) {
#ifdef GRIST_MASKED_FLOAT
  if constexpr (std::is_same_v<T, float>) return masked_row_block<R, NextRows>(w, b, ldb, k, n, start, y, ldy);
#endif
  constexpr int64_t lanes = ei::packet_traits<T>::size, wide = lanes * kTilePackets;
  int64_t q = 0;
  for (; q + wide <= n; q += wide) tile<T, R, kTilePackets>(w, b + q, ldb, k, start, y + q, ldy);
  for (; q + lanes <= n; q += lanes) tile<T, R, 1>(w, b + q, ldb, k, start, y + q, ldy);
  if (q < n) column_tail(w, b + q, ldb, R, k, n - q, start, y + q, ldy);
}

// The product's columns in panels of at most this many bytes of b (k rows × the panel's columns), each panel taken
// by every block of weight rows before the next: the panel stays in the L2 cache for all of them, where each row
// block walking all n columns streamed the whole of b from beyond it again (zoo 24's second conv, k 800 × 196
// columns, 627 KB, read once per block of 6 of its 64 rows). A column's sum is the same whichever panel and tile
// takes it.
constexpr int64_t kPanelBytes = int64_t{128} << 10;

// Every row block against columns [0, n): tile_product over one panel.
template <class T>
void panel_product(const T* w, const T* b, int64_t ldb, int64_t m, int64_t k, int64_t n, const T* start, T* y,
                   int64_t ldy) {
  int64_t i = 0;
  for (; i + kTileRows <= m; i += kTileRows)
    tile_row_block<T, kTileRows, true>(w + i * k, b, ldb, k, n, rows_from(start, i), y + i * ldy, ldy);
  // The rows left over (64 = 10 × 6 + 4 on AVX2) in blocks of 4 and 2 before single rows: a one-row tile loads
  // two packets of b for every two multiply-adds.
  if constexpr (kTileRows > 4)
    for (; i + 4 <= m; i += 4) tile_row_block<T, 4>(w + i * k, b, ldb, k, n, rows_from(start, i), y + i * ldy, ldy);
  for (; i + 2 <= m; i += 2) tile_row_block<T, 2>(w + i * k, b, ldb, k, n, rows_from(start, i), y + i * ldy, ldy);
  for (; i < m; ++i) tile_row_block<T, 1>(w + i * k, b, ldb, k, n, rows_from(start, i), y + i * ldy, ldy);
}

}  // namespace

template <class T>
void tile_product(const T* w, const T* b, int64_t ldb, int64_t m, int64_t k, int64_t n, const T* start, T* y,
                  int64_t ldy) {
  constexpr int64_t wide = ei::packet_traits<T>::size * kTilePackets;
  const int64_t fit = kPanelBytes / std::max<int64_t>(1, k * static_cast<int64_t>(sizeof(T))) / wide * wide;
  const int64_t panel = std::max(wide, fit);
  for (int64_t q = 0; q < n; q += panel)
    panel_product(w, b + q, ldb, m, k, std::min(panel, n - q), start, y + q, ldy);
}

template <class T>
void dot_product_rows(const T* w, const T* t, int64_t m, int64_t k, int64_t p, const T* start, T* y) {
  int64_t i = 0;
  if (p > kBlockCols && p <= kWidestBlock) {
    for (; i + kWideRows <= m; i += kWideRows)
      wide_row_block<T, kWideRows>(w + i * k, t, k, p, rows_from(start, i), y + i * p);
    for (; i < m; ++i) wide_row_block<T, 1>(w + i * k, t, k, p, rows_from(start, i), y + i * p);
    return;
  }
  for (; i + kBlockRows <= m; i += kBlockRows)
    row_block<T, kBlockRows>(w + i * k, t, k, p, rows_from(start, i), y + i * p);
  for (; i < m; ++i) row_block<T, 1>(w + i * k, t, k, p, rows_from(start, i), y + i * p);
}

template void dot_product_rows<float>(const float*, const float*, int64_t, int64_t, int64_t, const float*, float*);
template void dot_product_rows<double>(const double*, const double*, int64_t, int64_t, int64_t, const double*,
                                       double*);

}  // namespace grist

namespace grist {
template void tile_product<float>(const float*, const float*, int64_t, int64_t, int64_t, int64_t, const float*, float*,
                                  int64_t);
template void tile_product<double>(const double*, const double*, int64_t, int64_t, int64_t, int64_t, const double*,
                                   double*, int64_t);
}  // namespace grist
