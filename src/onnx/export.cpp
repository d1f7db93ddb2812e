#include "onnx/export.h"

#include <cstdio>
#include <filesystem>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx/newer_opsets.h"
#include "onnx/tensor_proto.h"

namespace grist {

namespace {

// One line from an exception text that may hold several.
std::string one_line(std::string msg) {
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  for (auto& c : msg)
    if (c == '\n') c = ' ';
  return msg;
}

void set_type(const Value& v, onnx::ValueInfoProto& info) {
  info.set_name(v.name);
  auto* t = info.mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(v.dtype));
  if (!v.shape) return;  // unknown rank: no shape field at all
  auto* shape = t->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* dim = shape->add_dim();
    if (d.known()) {
      dim->set_dim_value(d.size);
    } else if (!d.symbol.empty()) {
      dim->set_dim_param(d.symbol);
    }
  }
}

Status convert_attribute(const std::string& key, const Attribute& a, const Node& n, onnx::AttributeProto& p) {
  using AP = onnx::AttributeProto;
  p.set_name(key);
  switch (a.type) {
    case Attribute::Type::Float: p.set_type(AP::FLOAT); p.set_f(static_cast<float>(a.f)); break;
    case Attribute::Type::Int: p.set_type(AP::INT); p.set_i(a.i); break;
    case Attribute::Type::String: p.set_type(AP::STRING); p.set_s(a.s); break;
    case Attribute::Type::Tensor:
      GRIST_CHECK(a.t != nullptr, "node '{}' ({}): attribute '{}' holds no tensor", n.name, n.op_type, key);
      p.set_type(AP::TENSOR);
      tensor_to_proto(*a.t, "", *p.mutable_t());
      break;
    case Attribute::Type::Floats:
      p.set_type(AP::FLOATS);
      for (double f : a.floats) p.add_floats(static_cast<float>(f));
      break;
    case Attribute::Type::Ints:
      p.set_type(AP::INTS);
      for (int64_t i : a.ints) p.add_ints(i);
      break;
    case Attribute::Type::Strings:
      p.set_type(AP::STRINGS);
      for (const auto& s : a.strings) p.add_strings(s);
      break;
    case Attribute::Type::Graph:
      return make_error("node '{}' ({}): attribute '{}' is a subgraph, which grist's importer does not keep, so the "
                        "model cannot be written back", n.name, n.op_type, key);
    case Attribute::Type::Other:
      return make_error("node '{}' ({}): attribute '{}' has a type grist does not keep (sparse tensor or type)",
                        n.name, n.op_type, key);
  }
  return Status::ok();
}

Result<onnx::ModelProto> build_model(const Graph& g, const ExportOptions& o) {
  onnx::ModelProto m;
  m.set_ir_version(o.ir_version);
  m.set_producer_name(o.producer_name);
  m.set_producer_version("0.1.0");
  if (!o.doc_string.empty()) m.set_doc_string(o.doc_string);
  for (const auto& [k, v] : o.metadata) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  std::string kept;
  for (const Node& n : g.nodes)
    if (n.keep_float32) kept += (kept.empty() ? "" : "\n") + n.name;
  if (!kept.empty()) {
    auto* p = m.add_metadata_props();
    p->set_key(std::string(kKeepFloat32Key));
    p->set_value(kept);
  }
  for (const auto& [domain, version] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  onnx::GraphProto& gp = *m.mutable_graph();
  gp.set_name(g.name.empty() ? "grist" : g.name);
  for (ValueId id : g.initializers) {
    const Value& v = g.value(id);
    GRIST_CHECK(v.initial != nullptr, "initializer '{}' holds no tensor", v.name);
    GRIST_CHECK(is_supported(v.initial->dtype()), "initializer '{}': element type {} cannot be written", v.name,
                dtype_name(v.initial->dtype()));
    tensor_to_proto(*v.initial, v.name, *gp.add_initializer());
  }
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    GRIST_CHECK(v.dtype != DType::Undefined, "graph input '{}' has no element type", v.name);
    set_type(v, *gp.add_input());
  }
  for (const Node& n : g.nodes) {
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    for (ValueId in : n.inputs) np->add_input(in == kNoValue ? std::string() : g.value(in).name);
    for (ValueId out : n.outputs) np->add_output(out == kNoValue ? std::string() : g.value(out).name);
    for (const auto& [key, a] : n.attributes) GRIST_TRY(convert_attribute(key, a, n, *np->add_attribute()));
  }
  // Outputs need a type and a shape in ONNX; what grist does not know (a value a rewrite created) comes from
  // inference.
  bool untyped = false;
  for (ValueId id : g.outputs) untyped |= g.value(id).dtype == DType::Undefined || !g.value(id).shape;
  onnx::ModelProto inferred;
  if (untyped) {
    inferred = m;
    try {
      with_libonnx_opset(inferred, [&] { onnx::shape_inference::InferShapes(inferred); });
    } catch (const std::exception&) {
    }
  }
  for (ValueId id : g.outputs) {
    const Value& v = g.value(id);
    if (v.dtype != DType::Undefined && v.shape) {
      set_type(v, *gp.add_output());
      continue;
    }
    const onnx::ValueInfoProto* found = nullptr;
    for (const auto& vi : inferred.graph().value_info())
      if (vi.name() == v.name) found = &vi;
    GRIST_CHECK(found != nullptr && found->type().tensor_type().has_shape(),
                "graph output '{}' has no element type or shape and ONNX cannot infer them", v.name);
    *gp.add_output() = *found;
  }
  return m;
}

}  // namespace

Result<std::string> export_onnx_bytes(const Graph& g, const ExportOptions& options) {
  auto m = build_model(g, options);
  if (!m) return m.error();
  try {
    with_libonnx_opset(*m, [&] { onnx::checker::check_model(*m); });
  } catch (const std::exception& e) {
    return make_error("the ONNX checker rejects the exported model: {}", one_line(e.what()));
  }
  std::string bytes;
  GRIST_CHECK(m->SerializeToString(&bytes), "the exported model cannot be serialized (over protobuf's 2 GiB?)");
  return bytes;
}

Status export_onnx_file(const Graph& g, const std::string& path, const ExportOptions& options) {
  auto bytes = export_onnx_bytes(g, options);
  if (!bytes) return make_error("{}: {}", path, bytes.message());
  // "wx": created exclusively, so an existing file (or one another process just made) is never replaced.
  std::FILE* f = std::fopen(path.c_str(), "wbx");
  GRIST_CHECK(f != nullptr, "{}: cannot create (it exists already, or the folder is not writable)", path);
  const bool written = std::fwrite(bytes->data(), 1, bytes->size(), f) == bytes->size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return make_error("{}: write failed", path);
  }
  return Status::ok();
}

}  // namespace grist
