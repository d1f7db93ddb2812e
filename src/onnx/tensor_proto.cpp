#include "onnx/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "onnx/model_file.h"
#include "tensor/half.h"
#include "util/input_file.h"

namespace grist {

Result<int64_t> checked_nbytes(const std::vector<int64_t>& dims, DType dtype, const std::string& what) {
  GRIST_CHECK(static_cast<int>(dims.size()) <= Shape::kMaxRank, "{}: rank {} exceeds the supported maximum of {}",
              what, dims.size(), Shape::kMaxRank);
  int64_t n = 1;
  for (int64_t d : dims) {
    GRIST_CHECK(d >= 0, "{}: negative dimension {}", what, d);
    if (d != 0 && n > kMaxTensorBytes / d) return make_error("{}: dimensions are too large to hold in memory", what);
    n *= d;
  }
  int64_t bytes = n * static_cast<int64_t>(dtype_size(dtype));
  GRIST_CHECK(bytes <= kMaxTensorBytes, "{}: {} bytes would exceed the {} GiB limit", what, bytes,
              kMaxTensorBytes >> 30);
  return bytes;
}

namespace {

// How many values `p` stores in the typed field that `dtype` reads (float16 and bfloat16 keep one 16-bit pattern
// per int32_data entry); -1 for a type with no such field.
int64_t typed_field_size(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::Float32: return p.float_data_size();
    case DType::Float64: return p.double_data_size();
    case DType::Int64: return p.int64_data_size();
    case DType::UInt32: case DType::UInt64: return p.uint64_data_size();
    case DType::Int32: case DType::Int16: case DType::Int8: case DType::UInt16: case DType::UInt8: case DType::Bool:
    case DType::Float16: case DType::BFloat16: return p.int32_data_size();
    default: return -1;
  }
}

template <class T, class Field>
void copy_field(const Field& field, Tensor& t) {
  T* d = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

template <class H>
void copy_half_patterns(const google::protobuf::RepeatedField<int32_t>& field, Tensor& t) {
  H* d = t.data<H>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i].bits = static_cast<uint16_t>(field.Get(static_cast<int>(i)));
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const RawDataInFile* in_file) {
  const std::string what = p.name().empty() ? std::string("tensor") : "tensor '" + p.name() + "'";
  auto dtype = static_cast<DType>(p.data_type());
  GRIST_CHECK(is_supported(dtype), "{}: element type {} is not supported", what, dtype_name(dtype));
  GRIST_CHECK(in_file || p.data_location() != onnx::TensorProto::EXTERNAL,
              "{}: data stored in an external file is not supported", what);
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  auto bytes = checked_nbytes(dims, dtype, what);
  if (!bytes) return bytes.error();
  const Shape shape(dims);
  // What the proto holds is checked against its shape before the tensor is allocated: a few bytes that claim
  // gigabytes are refused, not allocated.
  const bool raw = in_file || p.has_raw_data();
  if (raw) {
    const uint64_t have = in_file ? in_file->length : p.raw_data().size();
    GRIST_CHECK(have == static_cast<uint64_t>(*bytes), "{}: raw data has {} bytes, its shape {} needs {}", what, have,
                shape.str(), *bytes);
  } else {
    const int64_t have = typed_field_size(p, dtype);
    GRIST_CHECK(have >= 0, "{}: element type {} is not supported", what, dtype_name(dtype));
    GRIST_CHECK(have == shape.numel(), "{}: holds {} values, its shape {} needs {}", what, have, shape.str(),
                shape.numel());
  }
  Tensor t(dtype, shape);
  if (raw) {
    // ONNX raw data is little-endian, as this machine is.
    if (in_file) {
      int error = 0;
      GRIST_CHECK(read_file_bytes(in_file->fd, in_file->offset, in_file->length, t.raw(), error),
                  "{}: cannot read its bytes from {}: {}", what, in_file->path,
                  error ? std::strerror(error) : "the file ended early");
    } else if (*bytes) {
      std::memcpy(t.raw(), p.raw_data().data(), static_cast<size_t>(*bytes));
    }
    // A bool is one byte, and any byte but 0 is true: stored as 1, since a bool holding another value is
    // undefined behaviour wherever it is read.
    if (dtype == DType::Bool) {
      auto* b = reinterpret_cast<unsigned char*>(t.raw());
      for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  switch (dtype) {
    case DType::Float32: copy_field<float>(p.float_data(), t); break;
    case DType::Float64: copy_field<double>(p.double_data(), t); break;
    case DType::Int64: copy_field<int64_t>(p.int64_data(), t); break;
    case DType::UInt32: copy_field<uint32_t>(p.uint64_data(), t); break;
    case DType::UInt64: copy_field<uint64_t>(p.uint64_data(), t); break;
    case DType::Int32: copy_field<int32_t>(p.int32_data(), t); break;
    case DType::Int16: copy_field<int16_t>(p.int32_data(), t); break;
    case DType::Int8: copy_field<int8_t>(p.int32_data(), t); break;
    case DType::UInt16: copy_field<uint16_t>(p.int32_data(), t); break;
    case DType::UInt8: copy_field<uint8_t>(p.int32_data(), t); break;
    case DType::Bool: copy_field<bool>(p.int32_data(), t); break;
    case DType::Float16: copy_half_patterns<Half>(p.int32_data(), t); break;
    case DType::BFloat16: copy_half_patterns<BFloat16>(p.int32_data(), t); break;
    default: break;  // typed_field_size refused it above
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p) {
  p.Clear();
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(reinterpret_cast<const char*>(t.raw()), t.nbytes());
}

Result<Tensor> read_tensor_pb(const std::string& path, std::string* name) {
  GRIST_TRY(check_input_file(path, kMaxDataBytes, "an ONNX TensorProto"));
  std::ifstream f(path, std::ios::binary);
  GRIST_CHECK(f.good(), "{}: cannot open file", path);
  std::stringstream buf;
  buf << f.rdbuf();
  std::string bytes = buf.str();
  onnx::TensorProto p;
  GRIST_CHECK(p.ParseFromString(bytes), "{}: not a serialized ONNX TensorProto", path);
  auto t = tensor_from_proto(p);
  if (!t) return make_error("{}: {}", path, t.message());
  if (name) *name = p.name();
  return t;
}

}  // namespace grist
