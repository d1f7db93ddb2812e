// Tensor: a dtype, a shape and an owned, 64-byte aligned buffer that keeps its capacity across resizes,
// so an executor can reuse the same tensors every iteration without allocating.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace grist {

// Thrown by Tensor::resize for a buffer larger than the machine's memory (Linux would promise it and kill the
// process on first touch): a bad_alloc that remembers the request, so the executor can name the node.
class TensorTooLarge : public std::bad_alloc {
 public:
  TensorTooLarge(DType dtype, const Shape& shape, double bytes, double limit)
      : dtype(dtype), shape(shape), bytes(bytes), limit(limit) {}
  const char* what() const noexcept override { return "tensor larger than the machine's memory"; }
  DType dtype;
  Shape shape;
  double bytes, limit;
};

// What one tensor may take: the machine's physical memory.
double memory_limit_bytes();

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, const Shape& shape) { resize(dtype, shape); }
  Tensor(const Tensor& o) { *this = o; }
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  // Scalars and vectors for tests and constants.
  template <class T>
  static Tensor scalar(T v) {
    Tensor t(dtype_of<T>(), Shape{});
    t.data<T>()[0] = v;
    return t;
  }
  template <class T>
  static Tensor from(const Shape& shape, std::initializer_list<T> values) {
    Tensor t(dtype_of<T>(), shape);
    assert(static_cast<int64_t>(values.size()) == t.numel());
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }

  // Sets dtype and shape; reallocates only when the buffer is too small. Contents are unspecified.
  void resize(DType dtype, const Shape& shape);
  // Same, then zero-fills.
  void resize_zero(DType dtype, const Shape& shape) {
    resize(dtype, shape);
    if (nbytes()) std::memset(data_.get(), 0, nbytes());
  }
  // Changes the shape without touching data; numel must stay the same.
  void reshape(const Shape& shape) {
    assert(shape.numel() == shape_.numel());
    shape_ = shape;
  }
  // Copies another tensor's dtype, shape and data (reusing this buffer when large enough).
  void copy_from(const Tensor& o) { *this = o; }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::Undefined; }
  std::size_t capacity_bytes() const { return capacity_; }
  // How many buffers all tensors have allocated so far (tests check the hot loop allocates none).
  static uint64_t allocation_count();

  template <class T>
  T* data() {
    assert(dtype_of<T>() == dtype_);
    return reinterpret_cast<T*>(data_.get());
  }
  template <class T>
  const T* data() const {
    assert(dtype_of<T>() == dtype_);
    return reinterpret_cast<const T*>(data_.get());
  }
  template <class T>
  std::span<T> span() { return {data<T>(), static_cast<size_t>(numel())}; }
  template <class T>
  std::span<const T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }
  std::byte* raw() { return data_.get(); }
  const std::byte* raw() const { return data_.get(); }

  // Element i converted to double, whatever the dtype (for reports, tests and shape operands).
  double get_as_double(int64_t i) const;
  // Element i converted to int64 (for shape/index operands).
  int64_t get_as_int(int64_t i) const;
  // All elements as int64 (shape/axes operands).
  std::vector<int64_t> to_int_vector() const;

  void fill_zero() {
    if (nbytes()) std::memset(data_.get(), 0, nbytes());
  }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::unique_ptr<std::byte[], FreeDeleter> data_;
  std::size_t capacity_ = 0;
};

// start + Σ t[i]² in double, the terms added in i's order: the same sum as a loop over get_as_double, read typed for
// float tensors (the hunt sums a model's weights and their gradients this way every crafted-training iteration).
double sum_of_squares(const Tensor& t, double start = 0);

// Converts `src` to dtype `to` into `dst` (numpy/ONNX Cast semantics: float→int truncates toward zero).
void cast_tensor(const Tensor& src, DType to, Tensor& dst);

}  // namespace grist
