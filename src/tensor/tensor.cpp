#include "tensor/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/half.h"

namespace grist {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::UInt8: return 1;
    case DType::Int8: return 1;
    case DType::UInt16: return 2;
    case DType::Int16: return 2;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::UInt32: return 4;
    case DType::UInt64: return 8;
    default: return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    default: return "undefined";
  }
}

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64 || is_half(t); }

bool is_integer(DType t) {
  switch (t) {
    case DType::UInt8: case DType::Int8: case DType::UInt16: case DType::Int16:
    case DType::Int32: case DType::Int64: case DType::UInt32: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

bool is_supported(DType t) { return is_float(t) || is_integer(t) || t == DType::Bool; }

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims(), ", ")); }

void Tensor::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

namespace {
uint64_t g_allocations = 0;  // single-threaded engine; a plain counter is enough
}

uint64_t Tensor::allocation_count() { return g_allocations; }

double memory_limit_bytes() {
  static const double limit = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0x1p40;
  }();
  return limit;
}

void Tensor::resize(DType dtype, const Shape& shape) {
  // The size in double first: a product of huge dimensions must not wrap around before it is checked.
  double bytes = static_cast<double>(dtype_size(dtype));
  for (int d = 0; d < shape.rank(); ++d) bytes *= static_cast<double>(shape[d]);
  if (bytes > memory_limit_bytes()) throw TensorTooLarge(dtype, shape, bytes, memory_limit_bytes());
  dtype_ = dtype;
  shape_ = shape;
  std::size_t need = nbytes();
  if (need > capacity_) {
    std::size_t rounded = (need + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<std::byte*>(p));
    ++g_allocations;
    capacity_ = rounded;
  }
}

Tensor& Tensor::operator=(const Tensor& o) {
  if (this == &o) return *this;
  resize(o.dtype_, o.shape_);
  if (nbytes()) std::memcpy(data_.get(), o.data_.get(), nbytes());
  return *this;
}

double Tensor::get_as_double(int64_t i) const {
  if (dtype_ == DType::Float16) return to_float(data<Half>()[i]);
  if (dtype_ == DType::BFloat16) return to_float(data<BFloat16>()[i]);
  double r = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    r = static_cast<double>(data<T>()[i]);
  });
  return r;
}

int64_t Tensor::get_as_int(int64_t i) const {
  if (is_half(dtype_)) {
    const double v = get_as_double(i);
    return v == v ? static_cast<int64_t>(std::clamp(v, -0x1p63, 0x1p63 - 1024)) : 0;
  }
  int64_t r = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    r = static_cast<int64_t>(data<T>()[i]);
  });
  return r;
}

double sum_of_squares(const Tensor& t, double start) {
  double sum = start;
  const bool typed = dispatch_float(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = static_cast<double>(p[i]);
      sum += v * v;
    }
  });
  if (!typed)
    for (int64_t i = 0; i < t.numel(); ++i) sum += t.get_as_double(i) * t.get_as_double(i);
  return sum;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = get_as_int(i);
  return v;
}

namespace {
template <class T>
constexpr bool is_half_type = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// dispatch_all and the two half types: every type a tensor can store.
template <class F>
void dispatch_storable(DType t, F&& f) {
  if (t == DType::Float16) f(Half{});
  else if (t == DType::BFloat16) f(BFloat16{});
  else dispatch_all(t, f);
}

// The half types go through float32, as PyTorch's casts do (a float64 source is rounded twice, to float32 and
// then to the half format; numpy rounds once, which differs only for values within 2^-29 ulp of a tie).
template <class To, class From>
To convert(From v) {
  if constexpr (is_half_type<From>) {
    return convert<To>(to_float(v));
  } else if constexpr (std::is_same_v<To, Half>) {
    return to_half(convert<float>(v));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return to_bfloat16(convert<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Out-of-range float→int is undefined in C++; saturate NaN to 0 and clamp like most runtimes.
    if (v != v) return To{};
    long double lv = static_cast<long double>(v);
    if (lv <= static_cast<long double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (lv >= static_cast<long double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace

void cast_tensor(const Tensor& src, DType to, Tensor& dst) {
  if (&src == &dst) {
    Tensor tmp = src;
    cast_tensor(tmp, to, dst);
    return;
  }
  dst.resize(to, src.shape());
  const int64_t n = src.numel();
  dispatch_storable(src.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    const From* s = src.data<From>();
    dispatch_storable(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      To* d = dst.data<To>();
      for (int64_t i = 0; i < n; ++i) d[i] = convert<To>(s[i]);
    });
  });
}

}  // namespace grist
