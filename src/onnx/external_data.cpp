#include "onnx/external_data.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include "data/npy_header.h"
#include "onnx/tensor_proto.h"
#include "tensor/tensor.h"
#include "util/input_file.h"

namespace grist {

namespace fs = std::filesystem;

namespace {

struct OpenFile {
  int fd = -1;
  uint64_t size = 0;
  std::string path;  // canonical
};

class Loader {
 public:
  Loader(const std::optional<fs::path>& dir, const std::string& source, ExternalLeftInFiles* left, uint64_t min_bytes)
      : dir_(dir), source_(source), left_(left), min_bytes_(std::max<uint64_t>(min_bytes, 1)) {}
  ~Loader() {
    for (auto& [path, f] : files_) {
      if (left_) left_->fds.push_back(f.fd);  // kept open for the initializers left in them
      else ::close(f.fd);
    }
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // `main`: the model's own graph, whose initializers may be left in their files.
  Status graph(onnx::GraphProto& g, bool main = false) {
    for (int i = 0; i < g.initializer_size(); ++i) GRIST_TRY(tensor(*g.mutable_initializer(i), main ? i : -1));
    for (auto& s : *g.mutable_sparse_initializer()) GRIST_TRY(sparse(s));
    for (auto& n : *g.mutable_node()) GRIST_TRY(node(n));
    return Status::ok();
  }

  Status node(onnx::NodeProto& n) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) GRIST_TRY(tensor(*a.mutable_t()));
      for (auto& t : *a.mutable_tensors()) GRIST_TRY(tensor(t));
      if (a.has_sparse_tensor()) GRIST_TRY(sparse(*a.mutable_sparse_tensor()));
      for (auto& s : *a.mutable_sparse_tensors()) GRIST_TRY(sparse(s));
      if (a.has_g()) GRIST_TRY(graph(*a.mutable_g()));
      for (auto& g : *a.mutable_graphs()) GRIST_TRY(graph(g));
    }
    return Status::ok();
  }

 private:
  Status sparse(onnx::SparseTensorProto& s) {
    if (s.has_values()) GRIST_TRY(tensor(*s.mutable_values()));
    if (s.has_indices()) GRIST_TRY(tensor(*s.mutable_indices()));
    return Status::ok();
  }

  // `initializer`: its index among the main graph's initializers, else -1.
  Status tensor(onnx::TensorProto& p, int initializer = -1) {
    if (p.data_location() != onnx::TensorProto::EXTERNAL) return Status::ok();
    const std::string what = fmt::format("{}: tensor '{}'", source_, p.name());
    std::string location, offset_text, length_text;
    bool has_location = false, has_offset = false, has_length = false;
    for (const auto& e : p.external_data()) {
      auto take = [&](bool& seen, std::string& value) -> Status {
        GRIST_CHECK(!seen, "{}: external_data gives '{}' twice", what, e.key());
        seen = true;
        value = e.value();
        return Status::ok();
      };
      if (e.key() == "location") GRIST_TRY(take(has_location, location));
      if (e.key() == "offset") GRIST_TRY(take(has_offset, offset_text));
      if (e.key() == "length") GRIST_TRY(take(has_length, length_text));
      // "checksum" (optional SHA-1) and other keys are not needed to read the bytes.
    }
    GRIST_CHECK(has_location && !location.empty(), "{}: its data is external but external_data has no 'location'",
                what);
    const std::string file = fmt::format("{} external data '{}'", what, printable_text(location));
    GRIST_CHECK(dir_, "{}: a model read from memory has no folder to read external data from", file);
    GRIST_CHECK(!p.has_raw_data() && p.float_data_size() == 0 && p.int32_data_size() == 0 && p.int64_data_size() == 0 &&
                    p.double_data_size() == 0 && p.uint64_data_size() == 0 && p.string_data_size() == 0,
                "{}: holds data of its own as well", file);
    auto offset = parse_size(offset_text, has_offset, "offset", file);
    if (!offset) return offset.error();
    auto length = parse_size(length_text, has_length, "length", file);
    if (!length) return length.error();

    const auto dtype = static_cast<DType>(p.data_type());
    GRIST_CHECK(is_supported(dtype), "{}: element type {} is not supported", what, dtype_name(dtype));
    auto bytes = checked_nbytes(std::vector<int64_t>(p.dims().begin(), p.dims().end()), dtype, what);
    if (!bytes) return bytes.error();
    const auto need = static_cast<uint64_t>(*bytes);
    // Without a length, the tensor's own size from the offset on (as ONNX Runtime reads it).
    if (!has_length) *length = need;
    GRIST_CHECK(*length == need, "{}: length {} bytes, but its shape {} of {} needs {}", file, *length,
                Shape(std::vector<int64_t>(p.dims().begin(), p.dims().end())).str(), dtype_name(dtype), need);

    auto f = open(location, file);
    if (!f) return f.error();
    GRIST_CHECK(*offset <= f->size && *length <= f->size - *offset,
                "{}: bytes {} to {} lie beyond the end of the file ({} bytes)", file, *offset, *offset + *length,
                f->size);
    total_ += *length;
    GRIST_CHECK(total_ <= kMaxDataBytes, "{}: external data over {} GiB in all; refusing to load it", file,
                kMaxDataBytes >> 30);

    if (left_ && initializer >= 0 && *length >= min_bytes_) {
      left_->initializers[initializer] = {f->fd, *offset, *length, f->path};
      return Status::ok();
    }
    std::string* raw = p.mutable_raw_data();
    raw->resize(static_cast<size_t>(*length));
    for (uint64_t done = 0; done < *length;) {
      ssize_t n =
          ::pread(f->fd, raw->data() + done, static_cast<size_t>(*length - done), static_cast<off_t>(*offset + done));
      if (n < 0 && errno == EINTR) continue;
      GRIST_CHECK(n > 0, "{}: cannot read: {}", file, n < 0 ? std::strerror(errno) : "the file ended early");
      done += static_cast<uint64_t>(n);
    }
    p.clear_external_data();
    p.set_data_location(onnx::TensorProto::DEFAULT);
    return Status::ok();
  }

  static Result<uint64_t> parse_size(const std::string& text, bool given, const char* key, const std::string& file) {
    if (!given) return uint64_t{0};
    uint64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    GRIST_CHECK(!text.empty() && ec == std::errc() && ptr == end && v <= static_cast<uint64_t>(INT64_MAX),
                "{}: {} '{}' is not a byte count", file, key, printable_text(text));
    return v;
  }

  // The file a location names, checked to be a regular file inside the model's folder; opened once.
  Result<OpenFile> open(const std::string& location, const std::string& file) {
    GRIST_CHECK(location.find('\0') == std::string::npos, "{}: the location holds a NUL byte", file);
    const fs::path rel(location);
    GRIST_CHECK(!rel.has_root_path(), "{}: an absolute path; the data must lie in the model's folder", file);
    for (const auto& part : rel)
      GRIST_CHECK(part != "..", "{}: '..' leads out of the model's folder; the data must lie in it", file);
    const fs::path full = *dir_ / rel;
    std::error_code ec;
    const fs::path real = fs::canonical(full, ec);
    GRIST_CHECK(!ec, "{} ({}): cannot open file: {}", file, full.string(),
                ec == std::errc::no_such_file_or_directory ? "No such file or directory" : ec.message());
    auto it = files_.find(real.string());
    if (it != files_.end()) return it->second;
    const fs::path inside = real.lexically_relative(*dir_);
    GRIST_CHECK(!inside.empty() && *inside.begin() != "..",
                "{}: resolves to {}, outside the model's folder (through a symbolic link); refusing to read it", file,
                real.string());
    if (auto st = check_input_file(real.string(), UINT64_MAX, "external tensor data"); !st)
      return make_error("{}: {}", file, st.message());
    OpenFile f;
    f.fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    GRIST_CHECK(f.fd >= 0, "{} ({}): cannot open file: {}", file, real.string(), std::strerror(errno));
    struct stat st;
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(f.fd);
      return make_error("{} ({}): not a regular file", file, real.string());
    }
    f.size = static_cast<uint64_t>(st.st_size);
    f.path = real.string();
    files_.emplace(real.string(), f);
    return f;
  }

  std::optional<fs::path> dir_;  // canonical
  std::string source_;
  ExternalLeftInFiles* left_;
  uint64_t min_bytes_;
  std::map<std::string, OpenFile> files_;  // by canonical path
  uint64_t total_ = 0;
};

}  // namespace

ExternalLeftInFiles::~ExternalLeftInFiles() {
  for (int fd : fds) ::close(fd);
}

Status load_external_data(onnx::ModelProto& model, const std::optional<fs::path>& model_dir,
                          const std::string& source, ExternalLeftInFiles* left, uint64_t min_bytes) {
  std::optional<fs::path> dir;
  if (model_dir) {
    std::error_code ec;
    dir = fs::canonical(model_dir->empty() ? fs::path(".") : *model_dir, ec);
    GRIST_CHECK(!ec, "{}: cannot resolve the model's folder: {}", source, ec.message());
  }
  Loader loader(dir, source, left, min_bytes);
  if (model.has_graph()) GRIST_TRY(loader.graph(*model.mutable_graph(), true));
  for (auto& f : *model.mutable_functions())
    for (auto& n : *f.mutable_node()) GRIST_TRY(loader.node(n));
  return Status::ok();
}

}  // namespace grist
