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

void IdxReader::GzClose::operator()(gzFile_s* f) const { gzclose(f); }

Result<IdxReader> IdxReader::open(const std::string& path) {
  GRIST_TRY(check_input_file(path, kMaxDataBytes, "an IDX data file"));
  IdxReader r;
  r.path_ = path;
  errno = 0;
  r.file_.reset(gzopen(path.c_str(), "rb"));
  if (!r.file_) return make_error("{}: cannot open file: {}", path, errno ? std::strerror(errno) : "out of memory");
  gzbuffer(r.file_.get(), 1u << 20);  // fewer, larger reads of the compressed file
  ByteStream in = gz_stream(r.file_.get());
  auto fail_read = [&](const Error& e) { return make_error("{}: read error: {}", path, e.message); };

  unsigned char magic[4];
  auto got = read_fully(in, magic, 4);
  if (!got) return fail_read(got.error());
  GRIST_CHECK(*got == 4, "{}: truncated IDX file: {} bytes, too short for the 4-byte magic number", path, *got);
  GRIST_CHECK(magic[0] == 0 && magic[1] == 0, "{}: not an IDX file (magic number 0x{:02x}{:02x}{:02x}{:02x})", path,
              magic[0], magic[1], magic[2], magic[3]);
  r.dtype_ = idx_dtype(magic[2]);
  GRIST_CHECK(r.dtype_ != DType::Undefined,
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
  auto nbytes = checked_nbytes(dims, r.dtype_, path);
  if (!nbytes) return nbytes.error();
  r.data_bytes_ = static_cast<uint64_t>(*nbytes);
  r.shape_ = Shape(dims);
  r.compressed_ = !gzdirect(r.file_.get());
  // An uncompressed file's size is known: refuse a lying header before allocating for it.
  struct stat st;
  const uint64_t header = 4 + 4 * static_cast<uint64_t>(rank);
  if (!r.compressed_ && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) - header < r.data_bytes_)
    return make_error("{}: IDX header declares shape {} of {} but the file holds {} bytes of data, {} needed", path,
                      r.shape_.str(), dtype_name(r.dtype_), static_cast<uint64_t>(st.st_size) - header,
                      r.data_bytes_);
  return r;
}

Result<std::size_t> IdxReader::read(void* dst, std::size_t n) {
  n = static_cast<std::size_t>(std::min<uint64_t>(n, data_bytes_ - read_bytes_));
  auto got = read_fully(gz_stream(file_.get()), dst, n);
  if (!got) return make_error("{}: read error: {}", path_, got.error().message);
  read_bytes_ += *got;
  if (*got < n)
    return make_error("{}: IDX header declares shape {} of {} but the file holds {} bytes of data, {} needed", path_,
                      shape_.str(), dtype_name(dtype_), read_bytes_, data_bytes_);
  return *got;
}

Status IdxReader::check_end() {
  auto end = at_end(gz_stream(file_.get()));
  if (!end) return make_error("{}: read error: {}", path_, end.error().message);
  GRIST_CHECK(*end, "{}: IDX header declares shape {} of {} ({} bytes of data) but more data follows", path_,
              shape_.str(), dtype_name(dtype_), data_bytes_);
  return Status::ok();
}

Result<Tensor> read_idx(const std::string& path) {
  auto r = IdxReader::open(path);
  if (!r) return r.error();
  const uint64_t need = r->data_bytes();
  Tensor t;
  if (!r->compressed()) {
    t = Tensor(r->dtype(), r->shape());
    auto got = r->read(t.raw(), need);
    if (!got) return got.error();
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
      auto got = r->read(data.data() + have, want);
      if (!got) return got.error();
    }
    t = Tensor(r->dtype(), r->shape());
    if (need) std::memcpy(t.raw(), data.data(), need);
  }
  GRIST_TRY(r->check_end());
  swap_bytes_inplace(t.raw(), need / dtype_size(r->dtype()), dtype_size(r->dtype()));
  return t;
}

}  // namespace grist
