#include "onnx/import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx/attribute_checks.h"
#include "onnx/external_data.h"
#include "onnx/model_file.h"
#include "onnx/newer_opsets.h"
#include "onnx/tensor_proto.h"
#include "util/input_file.h"

namespace grist {

namespace {

std::optional<std::vector<Dim>> shape_from_type(const onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  std::vector<Dim> dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.size = d.dim_value();
    if (d.has_dim_param()) dim.symbol = d.dim_param();
    dims.push_back(dim);
  }
  return dims;
}

DType dtype_from_type(const onnx::TypeProto& type) {
  return type.has_tensor_type() ? static_cast<DType>(type.tensor_type().elem_type()) : DType::Undefined;
}

Result<Attribute> convert_attribute(const onnx::AttributeProto& a, const std::string& where) {
  Attribute r;
  using AP = onnx::AttributeProto;
  switch (a.type()) {
    case AP::FLOAT: r.type = Attribute::Type::Float; r.f = a.f(); break;
    case AP::INT: r.type = Attribute::Type::Int; r.i = a.i(); break;
    case AP::STRING: r.type = Attribute::Type::String; r.s = a.s(); break;
    case AP::TENSOR: {
      r.type = Attribute::Type::Tensor;
      auto t = tensor_from_proto(a.t());
      if (!t) return make_error("{}, attribute '{}': {}", where, a.name(), t.message());
      r.t = std::make_shared<const Tensor>(std::move(t).value());
      break;
    }
    case AP::FLOATS: r.type = Attribute::Type::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
    case AP::INTS: r.type = Attribute::Type::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AP::STRINGS: r.type = Attribute::Type::Strings; r.strings.assign(a.strings().begin(), a.strings().end()); break;
    case AP::GRAPH: case AP::GRAPHS: r.type = Attribute::Type::Graph; break;
    default: r.type = Attribute::Type::Other; break;
  }
  return r;
}

// The main graph's initializers whose bytes were left in a file (the model file, or their external data file),
// by index: read from there straight into their Tensors.
using LeftInFiles = std::map<int, RawDataInFile>;

Result<Graph> convert_graph(onnx::ModelProto& model, const std::string& source, const LeftInFiles& in_files) {
  onnx::GraphProto& gp = *model.mutable_graph();
  Graph g;
  g.name = gp.name();
  for (const auto& op : model.opset_import()) g.opsets[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();

  // Declared types and shapes of everything the model (or shape inference) describes.
  std::unordered_map<std::string, const onnx::ValueInfoProto*> info;
  for (const auto& v : gp.input()) info[v.name()] = &v;
  for (const auto& v : gp.output()) info[v.name()] = &v;
  for (const auto& v : gp.value_info()) info.try_emplace(v.name(), &v);
  auto describe = [&](Value& v) {
    auto it = info.find(v.name);
    if (it == info.end() || !it->second->has_type()) return;
    if (v.dtype == DType::Undefined) v.dtype = dtype_from_type(it->second->type());
    if (!v.shape) v.shape = shape_from_type(it->second->type());
  };

  std::unordered_set<std::string> init_names;
  for (int index = 0; index < gp.initializer_size(); ++index) {
    onnx::TensorProto& tp = *gp.mutable_initializer(index);
    GRIST_CHECK(!tp.name().empty(), "{}: an initializer has no name", source);
    GRIST_CHECK(g.find_value(tp.name()) == kNoValue, "{}: initializer '{}' is defined twice", source, tp.name());
    const auto in_file = in_files.find(index);
    auto t = tensor_from_proto(tp, in_file == in_files.end() ? nullptr : &in_file->second);
    if (!t) return make_error("{}: initializer {}", source, t.message());
    // Copied: freed now, so a model of several GiB is not held twice (clear_raw_data alone keeps the capacity).
    std::string().swap(*tp.mutable_raw_data());
    tp.clear_raw_data();
    Value v;
    v.name = tp.name();
    v.kind = ValueKind::Initializer;
    v.dtype = t->dtype();
    std::vector<Dim> dims;
    for (int64_t d : t->shape()) dims.push_back(Dim{d, {}});
    v.shape = dims;
    v.initial = std::make_shared<Tensor>(std::move(t).value());  // non-const: Graph::take_initial
    g.initializers.push_back(g.add_value(std::move(v)));
    init_names.insert(tp.name());
  }
  for (const auto& in : gp.input()) {
    if (init_names.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    GRIST_CHECK(g.find_value(in.name()) == kNoValue, "{}: graph input '{}' is declared twice", source, in.name());
    Value v;
    v.name = in.name();
    v.kind = ValueKind::Input;
    describe(v);
    GRIST_CHECK(v.dtype == DType::Undefined || is_supported(v.dtype), "{}: input '{}' has element type {}, which grist cannot compute on",
                source, v.name, dtype_name(v.dtype));
    g.inputs.push_back(g.add_value(std::move(v)));
  }

  int index = 0;
  std::unordered_set<std::string> node_names;
  for (const auto& np : gp.node()) {
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? fmt::format("{}_{}", np.op_type(), index) : np.name();
    if (!node_names.insert(n.name).second) n.name = fmt::format("{}_{}", n.name, index);
    auto ver = g.opsets.find(n.domain);
    n.opset = ver == g.opsets.end() ? 0 : static_cast<int>(ver->second);
    const std::string where = fmt::format("{}: node '{}' ({})", source, n.name, n.op_type);
    for (const auto& ap : np.attribute()) {
      auto a = convert_attribute(ap, where);
      if (!a) return a.error();
      n.attributes.emplace_back(ap.name(), std::move(a).value());
    }
    for (const auto& name : np.input()) {
      if (name.empty()) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      ValueId id = g.find_value(name);
      if (id == kNoValue) {  // produced by a later node (unsorted model) or missing: resolved below
        Value v;
        v.name = name;
        id = g.add_value(std::move(v));
      }
      n.inputs.push_back(id);
    }
    for (const auto& name : np.output()) {
      if (name.empty()) {
        n.outputs.push_back(kNoValue);
        continue;
      }
      ValueId id = g.find_value(name);
      if (id != kNoValue) {
        const Value& existing = g.value(id);
        GRIST_CHECK(existing.kind == ValueKind::Intermediate && existing.producer < 0,
                    "{} writes '{}', which is already defined elsewhere", where, name);
      } else {
        Value v;
        v.name = name;
        id = g.add_value(std::move(v));
      }
      g.value(id).producer = index;  // provisional; link() recomputes
      n.outputs.push_back(id);
    }
    g.nodes.push_back(std::move(n));
    ++index;
  }
  for (auto& v : g.values)
    if (v.kind == ValueKind::Intermediate) describe(v);
  for (const auto& out : gp.output()) {
    ValueId id = g.find_value(out.name());
    GRIST_CHECK(id != kNoValue, "{}: graph output '{}' is not produced by any node", source, out.name());
    g.outputs.push_back(id);
  }
  // Nodes a half-precision run keeps in float32 (grist fix's keep-in-float32), by name, one a line.
  for (const auto& p : model.metadata_props()) {
    if (p.key() != kKeepFloat32Key) continue;
    std::set<std::string> names;
    for (size_t at = 0; at <= p.value().size();) {
      const size_t end = std::min(p.value().find('\n', at), p.value().size());
      if (end > at) names.insert(p.value().substr(at, end - at));
      at = end + 1;
    }
    for (Node& n : g.nodes) n.keep_float32 = names.count(n.name) > 0;
  }
  auto st = g.sort_topologically();
  if (!st) return make_error("{}: {}", source, st.message());
  return g;
}

constexpr const char* kMalformed = "{}: not an ONNX model (the protobuf data is malformed or truncated)";

// `model` parsed from `source`; `dir`: the model's folder, where its external data lies; none for a model from
// memory. `own`: the initializers whose raw_data parse_model_file left in the model file, open as `fd`.
Result<Graph> import_model(onnx::ModelProto& model, const std::string& source, ImportOptions options,
                           const std::optional<std::filesystem::path>& dir, const InFileInitializers* own = nullptr,
                           int fd = -1) {
  // An opset from after those grist knows would run under rules grist does not know: refused, as ONNX Runtime
  // does. The default domain's newest is kNewestOpset (onnx/newer_opsets.h), other domains' libonnx's.
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& op : model.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    auto range = known.find(domain);
    if (range == known.end()) continue;
    const int64_t libonnx = range->second.second;
    const int64_t newest = domain.empty() ? std::max(kNewestOpset, libonnx) : libonnx;
    GRIST_CHECK(op.version() <= newest,
                "{}: opset {} of the {} domain is newer than the newest grist knows ({}); export with "
                "opset_version {} or lower",
                source, op.version(), domain.empty() ? "default (ai.onnx)" : "'" + domain + "'", newest, newest);
  }
  GRIST_CHECK(model.has_graph(), "{}: not an ONNX model (no graph inside)", source);
  GRIST_CHECK(model.graph().node_size() > 0 || model.graph().output_size() > 0, "{}: the model's graph is empty",
              source);
  // Checked (and small tensors read) before the checker, which would look for the files relative to the working
  // directory.
  ExternalLeftInFiles external;
  const bool leave = dir && options.in_file_min_bytes > 0;
  GRIST_TRY(load_external_data(model, dir, source, leave ? &external : nullptr, options.in_file_min_bytes));
  LeftInFiles in_files;
  if (own && !own->empty()) {
    std::error_code ec;
    const std::string self = std::filesystem::absolute(source, ec).string();
    GRIST_CHECK(!ec, "{}: cannot resolve the model's path: {}", source, ec.message());
    for (const auto& [index, b] : *own) in_files[index] = {fd, b.offset, b.length, self};
  }
  for (const auto& [index, e] : external.initializers) in_files[index] = e;
  // Marked as data in a file (by absolute path, which the checker wants to exist): a tensor without a data field
  // would be refused. Shape inference does not read such tensors.
  for (const auto& [index, f] : in_files) {
    onnx::TensorProto& tp = *model.mutable_graph()->mutable_initializer(index);
    tp.set_data_location(onnx::TensorProto::EXTERNAL);
    tp.clear_external_data();
    auto* location = tp.add_external_data();
    location->set_key("location");
    location->set_value(f.path);
  }
  if (options.run_checker) {
    try {
      with_libonnx_opset(model, [&] { onnx::checker::check_model(model); });
    } catch (const std::exception& e) {
      std::string msg = e.what();
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      for (auto& c : msg)
        if (c == '\n') c = ' ';
      return make_error("{}: the ONNX checker rejects the model: {}", source, msg);
    }
  }
  // Invalid for grist's kernels as well, so checked whether or not shapes are inferred.
  GRIST_TRY(check_attributes_before_shape_inference(model.graph(), source));
  if (options.infer_shapes && raw_data_sizes_fit(model.graph())) {
    try {
      with_libonnx_opset(model, [&] { onnx::shape_inference::InferShapes(model); });
    } catch (const std::exception&) {
      // Shapes are only hints for grist (kernels compute real shapes); carry on without them.
    }
  }
  return convert_graph(model, source, in_files);
}

}  // namespace

Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source, ImportOptions options) {
  onnx::ModelProto model;
  GRIST_CHECK(!bytes.empty(), "{}: the file is empty", source);
  GRIST_CHECK(model.ParseFromString(bytes), kMalformed, source);
  return import_model(model, source, options, std::nullopt);
}

Result<Graph> import_onnx_file(const std::string& path, ImportOptions options) {
  GRIST_TRY(check_input_file(path, kMaxModelBytes, "an ONNX file"));
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  GRIST_CHECK(!ec, "{}: cannot open file", path);
  GRIST_CHECK(size > 0, "{}: the file is empty", path);
  GRIST_CHECK(size <= (uint64_t{1} << 31), "{}: {} bytes, over protobuf's 2 GiB limit for one ONNX file", path, size);
  // Parsed straight from the file in buffered blocks, large raw_data left there to be read into their Tensors
  // (onnx/model_file.h): neither the whole file nor any large weight is held twice.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  GRIST_CHECK(fd >= 0, "{}: cannot open file", path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  onnx::ModelProto model;
  InFileInitializers initializers;
  int error = 0;
  bool parsed = false;
  if (options.in_file_min_bytes > 0) {
    parsed = parse_model_file(fd, size, options.in_file_min_bytes, model, initializers, error);
  } else {
    google::protobuf::io::FileInputStream in(fd, 1 << 20);
    parsed = model.ParseFromZeroCopyStream(&in);
    error = in.GetErrno();
  }
  GRIST_CHECK(error == 0, "{}: cannot read file", path);
  GRIST_CHECK(parsed, kMalformed, path);
  return import_model(model, path, options, std::filesystem::path(path).parent_path(), &initializers, fd);
}

}  // namespace grist
