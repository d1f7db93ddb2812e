// Element types a tensor can hold, with the numbering of ONNX's TensorProto.DataType.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace grist {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,  // recognised so errors can name it; never computed on
  Bool = 9,
  Float16 = 10,   // stored only: computed on in float32 (tensor/half.h)
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,  // stored only, like Float16
};

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
bool is_float(DType t);     // Float32, Float64, Float16 or BFloat16: the types gradients flow through
bool is_half(DType t);      // Float16 or BFloat16: stored in 16 bits, computed on in float32
bool is_integer(DType t);   // signed or unsigned integers (not bool)
bool is_supported(DType t); // every type we can store and compute on

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }

// Calls f(T{}) with T the C++ type of `t`. Returns false (without calling) for unsupported types.
// Variants restrict the set so kernels only instantiate what they support.
template <class F>
bool dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::Float32: f(float{}); return true;
    case DType::Float64: f(double{}); return true;
    default: return false;
  }
}

template <class F>
bool dispatch_signed_numeric(DType t, F&& f) {  // floats and signed integers
  switch (t) {
    case DType::Float32: f(float{}); return true;
    case DType::Float64: f(double{}); return true;
    case DType::Int8: f(int8_t{}); return true;
    case DType::Int16: f(int16_t{}); return true;
    case DType::Int32: f(int32_t{}); return true;
    case DType::Int64: f(int64_t{}); return true;
    default: return false;
  }
}

template <class F>
bool dispatch_numeric(DType t, F&& f) {  // floats and all integers, no bool
  switch (t) {
    case DType::UInt8: f(uint8_t{}); return true;
    case DType::UInt16: f(uint16_t{}); return true;
    case DType::UInt32: f(uint32_t{}); return true;
    case DType::UInt64: f(uint64_t{}); return true;
    default: return dispatch_signed_numeric(t, f);
  }
}

template <class F>
bool dispatch_all(DType t, F&& f) {  // every computable type, bool included
  if (t == DType::Bool) {
    f(bool{});
    return true;
  }
  return dispatch_numeric(t, f);
}

}  // namespace grist
