#include "data/npz.h"

#include <memory>
#include <set>

#include <zip.h>

#include "data/byte_stream.h"
#include "data/file_write.h"
#include "data/npy.h"
#include "data/npy_header.h"
#include "util/input_file.h"

namespace grist {

namespace {

std::string zip_code_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string msg = zip_error_strerror(&e);
  zip_error_fini(&e);
  return msg;
}

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
struct ZipSourceFree {
  void operator()(zip_source_t* s) const { zip_source_free(s); }
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Assembles the archive in a libzip memory buffer and returns its bytes. Building it in memory lets the
// file itself be published with write_new_file's no-overwrite rename, which zip_close cannot promise.
Result<std::string> build_archive(const NamedTensors& tensors) {
  std::vector<std::string> encoded;
  encoded.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    auto bytes = encode_npy(t);
    if (!bytes) return make_error("array '{}': {}", name, bytes.message());
    encoded.push_back(std::move(*bytes));
  }

  zip_error_t err;
  zip_error_init(&err);
  std::unique_ptr<zip_source_t, ZipSourceFree> buffer(zip_source_buffer_create(nullptr, 0, 0, &err));
  if (!buffer) return make_error("cannot create an in-memory zip: {}", zip_error_strerror(&err));
  std::unique_ptr<zip_t, ZipDiscard> za(zip_open_from_source(buffer.get(), ZIP_TRUNCATE, &err));
  if (!za) return make_error("cannot create an in-memory zip: {}", zip_error_strerror(&err));
  zip_source_keep(buffer.get());  // the archive holds a reference now; ours must outlive zip_close

  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string entry = tensors[i].first + ".npy";
    zip_source_t* src = zip_source_buffer(za.get(), encoded[i].data(), encoded[i].size(), 0);
    if (!src) return make_error("array '{}': {}", tensors[i].first, zip_strerror(za.get()));
    zip_int64_t idx = zip_file_add(za.get(), entry.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);  // not taken over on failure
      return make_error("array '{}': {}", tensors[i].first, zip_strerror(za.get()));
    }
    if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) != 0)
      return make_error("array '{}': {}", tensors[i].first, zip_strerror(za.get()));
  }
  if (zip_close(za.get()) != 0) return make_error("cannot build the zip archive: {}", zip_strerror(za.get()));
  za.release();  // zip_close freed it

  zip_stat_t st;
  if (zip_source_stat(buffer.get(), &st) != 0 || !(st.valid & ZIP_STAT_SIZE) || zip_source_open(buffer.get()) != 0)
    return make_error("cannot read back the zip archive: {}", zip_error_strerror(zip_source_error(buffer.get())));
  std::string out(st.size, '\0');
  zip_int64_t n = out.empty() ? 0 : zip_source_read(buffer.get(), out.data(), out.size());
  zip_source_close(buffer.get());
  if (n != static_cast<zip_int64_t>(out.size())) return make_error("cannot read back the zip archive");
  return out;
}

// Length of the well-formed UTF-8 sequence at s[i] (as Python's strict decoder accepts: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when the byte there starts none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string npz_array_name(std::string_view name) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80) {
      if (std::size_t n = utf8_sequence(name, i)) {
        out.append(name.substr(i, n));
        i += n;
        continue;
      }
    } else if (c >= 0x20 && c != 0x7F && c != '%' && c != '/' && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 15];
    ++i;
  }
  return out;
}

Result<NamedTensors> read_npz(const std::string& path) {
  GRIST_TRY(check_input_file(path, kMaxDataBytes, "a .npz archive"));
  int code = 0;
  // ZIP_CHECKCONS: cross-check central directory and local headers, since the file may be hostile.
  std::unique_ptr<zip_t, ZipDiscard> za(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!za) return make_error("{}: cannot open as a .npz (zip) archive: {}", path, zip_code_message(code));

  NamedTensors out;
  std::set<std::string> seen;
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t st;
    if (zip_stat_index(za.get(), index, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      return make_error("{}: cannot read entry {} of the archive: {}", path, i, zip_strerror(za.get()));
    const std::string entry = st.name;
    if (ends_with(entry, "/")) continue;  // directory entries carry no data
    const std::string source = path + ": entry '" + printable_text(entry) + "'";
    if (!ends_with(entry, ".npy") || entry.size() == 4)
      return make_error("{}: not a .npy array (a .npz holds only NAME.npy entries)", source);
    std::string name = entry.substr(0, entry.size() - 4);
    if (!seen.insert(name).second) return make_error("{}: a second array named '{}'", source, printable_text(name));

    std::unique_ptr<zip_file_t, ZipFileClose> zf(zip_fopen_index(za.get(), index, 0));
    if (!zf) return make_error("{}: cannot open: {}", source, zip_strerror(za.get()));
    ByteStream s;
    if (st.valid & ZIP_STAT_SIZE) s.size = st.size;
    zip_file_t* f = zf.get();
    s.read = [f](void* dst, std::size_t len) -> Result<std::size_t> {
      zip_int64_t k = zip_fread(f, dst, len);
      if (k < 0) return Error{zip_file_strerror(f)};
      return static_cast<std::size_t>(k);
    };
    auto t = read_npy(s, source);
    if (!t) return t.error();
    out.emplace_back(std::move(name), std::move(*t));
  }
  return out;
}

Status write_npz(const std::string& path, const NamedTensors& tensors) {
  std::set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    GRIST_CHECK(!name.empty(), "{}: cannot store an array with an empty name", path);
    GRIST_CHECK(name.find('/') == std::string::npos && name.find('\0') == std::string::npos,
                "{}: array name '{}' must not contain '/' or NUL", path, name);
    GRIST_CHECK(names.insert(name).second, "{}: two arrays are named '{}'", path, name);
  }
  std::string bytes;
  if (tensors.empty()) {
    // libzip drops an archive with no entries; numpy.savez() writes the bare end-of-central-directory record.
    bytes = std::string("PK\x05\x06", 4) + std::string(18, '\0');
  } else {
    auto built = build_archive(tensors);
    if (!built) return make_error("{}: {}", path, built.message());
    bytes = std::move(*built);
  }
  return write_new_file(path, bytes);
}

}  // namespace grist
