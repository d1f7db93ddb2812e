#include "data/random_input.h"

#include "onnx/tensor_proto.h"
#include "tensor/half.h"

namespace grist {

Result<Shape> concrete_shape(const Value& v, const RandomInputSpec& spec) {
  GRIST_CHECK(v.shape.has_value(), "input '{}' has no declared shape; give its data with --input {}=FILE", v.name,
              v.name);
  std::vector<int64_t> dims;
  for (const Dim& d : *v.shape) {
    if (d.known()) {
      dims.push_back(d.size);
      continue;
    }
    auto it = spec.dims.find(d.symbol);
    dims.push_back(it != spec.dims.end() ? it->second : spec.default_dim);
  }
  auto bytes = checked_nbytes(dims, v.dtype == DType::Undefined ? DType::Float32 : v.dtype,
                              fmt::format("input '{}'", v.name));
  if (!bytes) return bytes.error();
  return Shape(dims);
}

Result<Tensor> random_input(const Value& v, const RandomInputSpec& spec, Rng& rng) {
  auto shape = concrete_shape(v, spec);
  if (!shape) return shape.error();
  DType dt = v.dtype == DType::Undefined ? DType::Float32 : v.dtype;
  GRIST_CHECK(is_supported(dt), "input '{}' has element type {}, which grist cannot generate", v.name, dtype_name(dt));
  if (is_half(dt)) {  // drawn as float32, then rounded to the half type
    Value wide = v;
    wide.dtype = DType::Float32;
    auto f = random_input(wide, spec, rng);
    if (!f) return f.error();
    Tensor h;
    cast_tensor(*f, dt, h);
    return h;
  }
  Tensor t(dt, *shape);
  dispatch_all(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(rng.uniform(spec.lo, spec.hi));
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = rng.below(2) == 1;
      } else {
        uint64_t span = static_cast<uint64_t>(std::max<int64_t>(spec.int_hi - spec.int_lo, 1));
        p[i] = static_cast<T>(spec.int_lo + static_cast<int64_t>(rng.below(span)));
      }
    }
  });
  return t;
}

}  // namespace grist
