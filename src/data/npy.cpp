#include "data/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <sys/stat.h>

#include "data/byte_order.h"
#include "data/file_write.h"
#include "data/npy_header.h"
#include "tensor/half_tensor.h"
#include "onnx/tensor_proto.h"
#include "util/input_file.h"

namespace grist {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
// numpy refuses headers over 10 kB by default; 1 MiB leaves room for odd writers yet bounds allocation.
constexpr uint32_t kMaxHeaderLen = 1 << 20;

// Copies a Fortran-order (first index fastest) array of `dims` into C order.
template <std::size_t N>
void fortran_to_c(const std::byte* src, std::byte* dst, const std::vector<int64_t>& dims) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> fstride(dims.size()), idx(dims.size(), 0);
  int64_t acc = 1, total = 1;
  for (int k = 0; k < rank; ++k) {
    fstride[k] = acc;
    acc *= dims[k];
    total *= dims[k];
  }
  int64_t off = 0;  // Fortran offset of the C-order position `idx`
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + i * N, src + off * N, N);
    for (int k = rank - 1; k >= 0; --k) {  // C-order odometer: last index fastest
      if (++idx[k] < dims[k]) {
        off += fstride[k];
        break;
      }
      off -= (dims[k] - 1) * fstride[k];
      idx[k] = 0;
    }
  }
}

void fortran_to_c(const std::byte* src, std::byte* dst, const std::vector<int64_t>& dims, std::size_t elem) {
  switch (elem) {
    case 1: fortran_to_c<1>(src, dst, dims); break;
    case 2: fortran_to_c<2>(src, dst, dims); break;
    case 4: fortran_to_c<4>(src, dst, dims); break;
    default: fortran_to_c<8>(src, dst, dims); break;
  }
}

// A stream's I/O failure, prefixed with what was being read.
Error read_error(const std::string& source, const Error& e) {
  return make_error("{}: read error: {}", source, e.message);
}

}  // namespace

Result<Tensor> read_npy(const ByteStream& in, const std::string& source) {
  // Preamble: magic, major, minor, then a 2-byte (v1) or 4-byte (v2, v3) little-endian header length.
  unsigned char pre[12];
  auto got = read_fully(in, pre, 8);
  if (!got) return read_error(source, got.error());
  GRIST_CHECK(*got > 0, "{}: file is empty, not a .npy array", source);
  if (*got < 8 || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    if (*got >= kMagicLen && std::memcmp(pre, kMagic, kMagicLen) == 0)
      return make_error("{}: truncated .npy file: it ends inside the format version", source);
    return make_error("{}: not a .npy file (it does not start with the bytes \\x93NUMPY)", source);
  }
  const int major = pre[6], minor = pre[7];
  GRIST_CHECK(minor == 0 && major >= 1 && major <= 3,
              "{}: unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", source, major, minor);
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  got = read_fully(in, pre + 8, len_bytes);
  if (!got) return read_error(source, got.error());
  GRIST_CHECK(*got == len_bytes, "{}: truncated .npy file: it ends inside the header length", source);
  uint32_t header_len = pre[8] | (uint32_t{pre[9]} << 8);
  if (len_bytes == 4) header_len |= (uint32_t{pre[10]} << 16) | (uint32_t{pre[11]} << 24);
  GRIST_CHECK(header_len <= kMaxHeaderLen, "{}: .npy header length {} is implausibly large (limit {})", source,
              header_len, kMaxHeaderLen);
  const uint64_t preamble = 8 + len_bytes;
  if (in.size && *in.size < preamble + header_len)
    return make_error("{}: truncated .npy file: header declares {} bytes but the file holds {}", source, header_len,
                      *in.size - preamble);

  std::string text(header_len, '\0');
  got = read_fully(in, text.data(), header_len);
  if (!got) return read_error(source, got.error());
  GRIST_CHECK(*got == header_len, "{}: truncated .npy file: header declares {} bytes but the file holds {}", source,
              header_len, *got);
  auto header = parse_npy_header(text, source);
  if (!header) return header.error();
  const NpyHeader& h = *header;

  auto nbytes = checked_nbytes(h.shape, h.dtype, source);
  if (!nbytes) return nbytes.error();
  const auto need = static_cast<uint64_t>(*nbytes);
  auto short_data = [&](uint64_t have) {
    return make_error("{}: header declares shape {} of {} but the file holds {} bytes of data, {} needed", source,
                      numpy_shape_str(h.shape), dtype_name(h.dtype), have, need);
  };
  // Check against the known size before allocating, so a lying header costs nothing.
  const uint64_t data_start = preamble + header_len;
  if (in.size && *in.size - data_start < need) return short_data(*in.size - data_start);

  const bool transpose = h.fortran_order && h.shape.size() > 1;
  Tensor t(h.dtype, Shape(h.shape));
  Tensor staging;
  if (transpose) staging.resize(h.dtype, Shape(h.shape));
  std::byte* dst = transpose ? staging.raw() : t.raw();
  got = read_fully(in, dst, need);
  if (!got) return read_error(source, got.error());
  if (*got < need) return short_data(*got);
  auto end = at_end(in);
  if (!end) return read_error(source, end.error());
  GRIST_CHECK(*end, "{}: header declares shape {} of {} ({} bytes of data) but more data follows", source,
              numpy_shape_str(h.shape), dtype_name(h.dtype), need);

  const std::size_t elem = dtype_size(h.dtype);
  if (h.big_endian) swap_bytes_inplace(dst, need / elem, elem);
  if (h.dtype == DType::Bool) {
    // Any byte other than 0 or 1 in a C++ bool is undefined behaviour; numpy reads nonzero as True.
    for (uint64_t i = 0; i < need; ++i) dst[i] = dst[i] != std::byte{0} ? std::byte{1} : std::byte{0};
  }
  if (transpose) fortran_to_c(staging.raw(), t.raw(), h.shape, elem);
  return t;
}

Result<Tensor> read_npy(const std::string& path) {
  GRIST_TRY(check_input_file(path, kMaxDataBytes, "a .npy file"));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return make_error("{}: cannot open file: {}", path, std::strerror(errno));
  ByteStream s;
  struct stat st;
  if (fstat(fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode)) s.size = static_cast<uint64_t>(st.st_size);
  FILE* fp = f.get();
  s.read = [fp](void* dst, std::size_t n) -> Result<std::size_t> {
    std::size_t k = std::fread(dst, 1, n, fp);
    if (k < n && std::ferror(fp)) return Error{std::strerror(errno)};
    return k;
  };
  return read_npy(s, path);
}

Result<Tensor> parse_npy(std::string_view bytes, const std::string& source) {
  return read_npy(memory_stream(bytes), source);
}

Result<std::string> encode_npy(const Tensor& in) {
  // numpy has no bfloat16: its values are written as the float32 values they are, exactly.
  Tensor widened;
  if (in.dtype() == DType::BFloat16) widen_half(in, widened);
  const Tensor& t = in.dtype() == DType::BFloat16 ? widened : in;
  auto dict = format_npy_header(t.dtype(), t.shape().to_vector());
  if (!dict) return dict.error();
  // numpy pads with spaces and ends with '\n' so the data starts on a 64-byte boundary.
  std::size_t len_bytes = 2;
  std::size_t unpadded = kMagicLen + 2 + len_bytes + dict->size() + 1;
  if ((unpadded + 63) / 64 * 64 - (kMagicLen + 2 + len_bytes) > 0xffff) {
    len_bytes = 4;  // only a header over 64 kB needs format 2.0
    unpadded += 2;
  }
  const std::size_t total = (unpadded + 63) / 64 * 64;
  std::string header = *dict;
  header.append(total - unpadded, ' ');
  header += '\n';
  const uint32_t hl = static_cast<uint32_t>(header.size());

  std::string out;
  out.reserve(total + t.nbytes());
  out.append(kMagic, kMagicLen);
  out += static_cast<char>(len_bytes == 2 ? 1 : 2);
  out += '\0';
  for (std::size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += header;
  if (t.nbytes()) out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = encode_npy(t);
  if (!bytes) return make_error("{}: {}", path, bytes.message());
  return write_new_file(path, *bytes);
}

}  // namespace grist
