#include "data/load.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "data/idx.h"
#include "data/npy.h"
#include "data/npz.h"
#include "onnx/tensor_proto.h"

namespace grist {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// MNIST's naming: "train-images-idx3-ubyte", "t10k-labels.idx1-ubyte" (the '.' form is common too).
bool is_idx_name(std::string_view lower) {
  if (ends_with(lower, ".gz")) lower.remove_suffix(3);
  if (ends_with(lower, ".idx")) return true;
  if (!ends_with(lower, "-ubyte")) return false;
  lower.remove_suffix(6);
  std::size_t digits = 0;
  while (digits < lower.size() && std::isdigit(static_cast<unsigned char>(lower[lower.size() - 1 - digits]))) ++digits;
  lower.remove_suffix(digits);
  return digits > 0 && (ends_with(lower, "-idx") || ends_with(lower, ".idx") || lower == "idx");
}

}  // namespace

Result<std::vector<std::pair<std::string, Tensor>>> load_tensors(const std::string& path) {
  const std::string file = std::filesystem::path(path).filename().string();
  std::string lower = file;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  auto without = [&](std::size_t n) { return file.substr(0, file.size() - n); };

  std::vector<std::pair<std::string, Tensor>> out;
  if (ends_with(lower, ".npz")) {
    return read_npz(path);
  } else if (ends_with(lower, ".npy")) {
    auto t = read_npy(path);
    if (!t) return t.error();
    out.emplace_back(without(4), std::move(*t));
  } else if (ends_with(lower, ".pb")) {
    std::string name;
    auto t = read_tensor_pb(path, &name);
    if (!t) return t.error();
    out.emplace_back(name.empty() ? without(3) : name, std::move(*t));
  } else if (is_idx_name(lower)) {
    auto t = read_idx(path);
    if (!t) return t.error();
    std::string name = ends_with(lower, ".gz") ? without(3) : file;
    if (ends_with(lower.substr(0, name.size()), ".idx")) name.resize(name.size() - 4);
    out.emplace_back(std::move(name), std::move(*t));
  } else {
    return make_error("{}: unknown tensor file type; expected .npy, .npz, .pb (ONNX TensorProto) or an IDX file "
                      "(*-idx3-ubyte, *.idx, optionally .gz)",
                      path);
  }
  return out;
}

}  // namespace grist
