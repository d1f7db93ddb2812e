#include "data/idx.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <sys/stat.h>
#include <zlib.h>

#include "data/byte_order.h"
#include "data/byte_stream.h"
#include "onnx/tensor_proto.h"
#include "util/input_file.h"

namespace grist {

namespace {

DType idx_dtype(unsigned code) {
  switch (code) {
    case 0x08: return DType::UInt8;
    case 0x09: return DType::Int8;
    case 0x0B: return DType::Int16;
    case 0x0C: return DType::Int32;
    case 0x0D: return DType::Float32;
    case 0x0E: return DType::Float64;
    default: return DType::Undefined;
  }
}

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// gzread reads plain files unchanged, which is what makes ".gz or not" transparent.
ByteStream gz_stream(gzFile f) {
  ByteStream s;
  s.read = [f](void* dst, std::size_t n) -> Result<std::size_t> {
    // gzread takes an unsigned count and returns int: ask for at most 1 GiB at a time.
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, std::size_t{1} << 30));
    const int k = gzread(f, dst, chunk);
    int code = Z_OK;
    const char* msg = gzerror(f, &code);
    if (k < 0) return Error{code == Z_ERRNO ? std::strerror(errno) : msg};
    // zlib reports a gzip stream cut short as Z_BUF_ERROR with a short (possibly zero) count.
    if (k == 0 && code == Z_BUF_ERROR) return Error{"the gzip data ends unexpectedly (truncated .gz file)"};
    return static_cast<std::size_t>(k);
  };
  return s;
}

}  // namespace

Result<Tensor> read_idx(const std::string& path) {
  GRIST_TRY(check_input_file(path, kMaxDataBytes, "an IDX data file"));
  errno = 0;
  std::unique_ptr<gzFile_s, GzClose> f(gzopen(path.c_str(), "rb"));
  if (!f) return make_error("{}: cannot open file: {}", path, errno ? std::strerror(errno) : "out of memory");
  ByteStream in = gz_stream(f.get());
  auto fail_read = [&](const Error& e) { return make_error("{}: read error: {}", path, e.message); };

  unsigned char magic[4];
  auto got = read_fully(in, magic, 4);
  if (!got) return fail_read(got.error());
  GRIST_CHECK(*got == 4, "{}: truncated IDX file: {} bytes, too short for the 4-byte magic number", path, *got);
  GRIST_CHECK(magic[0] == 0 && magic[1] == 0, "{}: not an IDX file (magic number 0x{:02x}{:02x}{:02x}{:02x})", path,
              magic[0], magic[1], magic[2], magic[3]);
  const DType dtype = idx_dtype(magic[2]);
  GRIST_CHECK(dtype != DType::Undefined,
              "{}: unknown IDX element type code 0x{:02x} (expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)", path,
              magic[2]);
  const int rank = magic[3];
  GRIST_CHECK(rank <= Shape::kMaxRank, "{}: IDX rank {} exceeds the supported maximum of {}", path, rank,
              Shape::kMaxRank);

  unsigned char dim_bytes[4 * Shape::kMaxRank];
  got = read_fully(in, dim_bytes, 4 * static_cast<std::size_t>(rank));
  if (!got) return fail_read(got.error());
  GRIST_CHECK(*got == 4 * static_cast<std::size_t>(rank), "{}: truncated IDX file: it ends inside the {} dimensions",
              path, rank);
  std::vector<int64_t> dims(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) dims[i] = load_be32(dim_bytes + 4 * i);
  auto nbytes = checked_nbytes(dims, dtype, path);
  if (!nbytes) return nbytes.error();
  const auto need = static_cast<uint64_t>(*nbytes);
  const std::string shape_str = Shape(dims).str();
  auto short_data = [&](uint64_t have) {
    return make_error("{}: IDX header declares shape {} of {} but the file holds {} bytes of data, {} needed", path,
                      shape_str, dtype_name(dtype), have, need);
  };
  // An uncompressed file's size is known: refuse a lying header before allocating for it.
  struct stat st;
  const uint64_t header = 4 + 4 * static_cast<uint64_t>(rank);
  if (gzdirect(f.get()) && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) - header < need)
    return short_data(static_cast<uint64_t>(st.st_size) - header);

  Tensor t;
  if (gzdirect(f.get())) {
    t = Tensor(dtype, Shape(dims));
    got = read_fully(in, t.raw(), need);
    if (!got) return fail_read(got.error());
    if (*got < need) return short_data(*got);
  } else {
    // Compressed, the header cannot be checked against the file's size (a 36-byte .gz may declare
    // gigabytes): memory follows the bytes that actually decompress, 16 MiB at a time, before the tensor
    // is allocated.
    constexpr uint64_t kChunk = uint64_t{16} << 20;
    std::vector<unsigned char> data;
    while (data.size() < need) {
      const std::size_t have = data.size();
      const auto want = static_cast<std::size_t>(std::min<uint64_t>(kChunk, need - have));
      data.resize(have + want);
      got = read_fully(in, data.data() + have, want);
      if (!got) return fail_read(got.error());
      data.resize(have + *got);
      if (*got < want) return short_data(data.size());
    }
    t = Tensor(dtype, Shape(dims));
    if (need) std::memcpy(t.raw(), data.data(), need);
  }
  auto end = at_end(in);
  if (!end) return fail_read(end.error());
  GRIST_CHECK(*end, "{}: IDX header declares shape {} of {} ({} bytes of data) but more data follows", path, shape_str,
              dtype_name(dtype), need);
  swap_bytes_inplace(t.raw(), need / dtype_size(dtype), dtype_size(dtype));
  return t;
}

}  // namespace grist
