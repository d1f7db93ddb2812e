// A tensor shape stored inline (no heap), so kernels can build shapes in the hot loop for free.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace grist {

class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(std::span<const int64_t> dims) { assign(dims.begin(), dims.end()); }
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }

  template <class It>
  void assign(It first, It last) {
    rank_ = 0;
    for (; first != last && rank_ < kMaxRank; ++first) dims_[rank_++] = static_cast<int64_t>(*first);
  }

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  int64_t back() const { return dims_[rank_ - 1]; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  void push_back(int64_t d) { dims_[rank_++] = d; }
  void resize(int r, int64_t fill = 1) {
    for (int i = rank_; i < r; ++i) dims_[i] = fill;
    rank_ = r;
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  // Product of dims in [from, to).
  int64_t numel(int from, int to) const {
    int64_t n = 1;
    for (int i = from; i < to; ++i) n *= dims_[i];
    return n;
  }

  bool operator==(const Shape& o) const {
    return rank_ == o.rank_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

  std::string str() const;  // "[2, 3, 4]"

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Row-major strides of a shape, in elements.
inline std::array<int64_t, Shape::kMaxRank> strides_of(const Shape& s) {
  std::array<int64_t, Shape::kMaxRank> st{};
  int64_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// Normalises a possibly negative axis into [0, rank); returns -1 when out of range.
inline int normalize_axis(int64_t axis, int rank) {
  if (axis < 0) axis += rank;
  return (axis < 0 || axis >= rank) ? -1 : static_cast<int>(axis);
}

}  // namespace grist
