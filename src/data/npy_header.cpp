#include "data/npy_header.h"

#include <cctype>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tensor/half.h"

namespace grist {

std::string printable_text(std::string_view text) {
  std::string s;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    s += std::isprint(u) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return s;
}

namespace {

// A header value: numpy only ever writes strings, booleans and tuples of ints here.
struct PyValue {
  enum class Kind { String, Bool, IntTuple } kind = Kind::String;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// Recursive descent without recursion: dict of string keys; values are strings, True/False, int tuples.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : t_(text), source_(source) {}

  Error fail(std::string_view what) const {
    return make_error("{}: malformed .npy header: {} at offset {} in {}", source_, what, pos_, quoted_excerpt());
  }

  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= t_.size();
  }

  Result<std::string> parse_string() {
    skip_ws();
    if (pos_ >= t_.size() || (t_[pos_] != '\'' && t_[pos_] != '"')) return fail("expected a quoted string");
    const char quote = t_[pos_++];
    std::string s;
    while (pos_ < t_.size() && t_[pos_] != quote) {
      if (t_[pos_] == '\\' && pos_ + 1 < t_.size()) ++pos_;  // escapes never occur in simple descrs; keep the char
      s += t_[pos_++];
    }
    if (pos_ >= t_.size()) return fail("unterminated string");
    ++pos_;
    return s;
  }

  Result<int64_t> parse_int() {
    skip_ws();
    bool negative = false;
    if (pos_ < t_.size() && t_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (pos_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[pos_]))) return fail("expected an integer");
    int64_t v = 0;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
      int d = t_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return fail("integer too large");
      v = v * 10 + d;
    }
    if (pos_ < t_.size() && t_[pos_] == 'L') ++pos_;  // Python 2 numpy wrote long dims as "3L"
    return negative ? -v : v;
  }

  // "(" [int ("," int)* [","]] ")"
  Result<std::vector<int64_t>> parse_int_tuple() {
    if (!eat('(')) return fail("expected '('");
    std::vector<int64_t> v;
    if (eat(')')) return v;
    for (;;) {
      // Far beyond any rank we accept, but bounds the work a hostile header can cause.
      if (v.size() >= 64) return fail("too many dimensions");
      auto d = parse_int();
      if (!d) return d.error();
      v.push_back(*d);
      if (eat(')')) return v;
      if (!eat(',')) return fail("expected ',' or ')' in the shape");
      if (eat(')')) return v;
    }
  }

  Result<PyValue> parse_value() {
    skip_ws();
    PyValue v;
    if (pos_ >= t_.size()) return fail("unexpected end");
    const char c = t_[pos_];
    if (c == '\'' || c == '"') {
      auto s = parse_string();
      if (!s) return s.error();
      v.kind = PyValue::Kind::String;
      v.str = std::move(*s);
    } else if (t_.substr(pos_, 4) == "True" || t_.substr(pos_, 5) == "False") {
      v.kind = PyValue::Kind::Bool;
      v.boolean = t_[pos_] == 'T';
      pos_ += v.boolean ? 4 : 5;
    } else if (c == '(') {
      auto ints = parse_int_tuple();
      if (!ints) return ints.error();
      v.kind = PyValue::Kind::IntTuple;
      v.ints = std::move(*ints);
    } else if (c == '[') {
      return make_error("{}: structured .npy arrays (record dtypes) are not supported", source_);
    } else {
      return fail(fmt::format("unexpected character '{}'", printable(c)));
    }
    return v;
  }

  std::string_view rest() const { return t_.substr(pos_); }

 private:
  static std::string printable(char c) { return printable_text(std::string_view(&c, 1)); }
  std::string quoted_excerpt() const {
    return "\"" + printable_text(t_.substr(0, 120)) + (t_.size() > 120 ? "...\"" : "\"");
  }

  std::string_view t_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

// "<f4" → Float32 etc. Only little/big-endian forms of our dtypes; everything else is refused by name.
Status parse_descr(const std::string& descr, const std::string& source, NpyHeader& h) {
  std::string_view d = descr;
  char order = '|';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d.remove_prefix(1);
  }
  struct Known {
    std::string_view code;
    DType dtype;
  };
  static constexpr Known kKnown[] = {
      {"f4", DType::Float32}, {"f8", DType::Float64}, {"i1", DType::Int8},   {"i2", DType::Int16},
      {"i4", DType::Int32},   {"i8", DType::Int64},   {"u1", DType::UInt8},  {"u2", DType::UInt16},
      {"u4", DType::UInt32},  {"u8", DType::UInt64},  {"b1", DType::Bool},   {"?", DType::Bool},
      {"f2", DType::Float16},
  };
  for (const auto& k : kKnown) {
    if (d == k.code) {
      h.dtype = k.dtype;
      // '=' is native order, little-endian on every host grist builds for; '|' means "not applicable".
      h.big_endian = order == '>' && dtype_size(k.dtype) > 1;
      return Status::ok();
    }
  }
  std::string_view why = "";
  if (!d.empty() && d[0] == 'c') why = " (complex numbers are not supported)";
  else if (!d.empty() && (d[0] == 'U' || d[0] == 'S' || d[0] == 'a')) why = " (string arrays are not supported)";
  else if (d == "O") why = " (object arrays are not supported)";
  return make_error("{}: .npy element type '{}' is not supported{}; expected one of float16, float32, float64, "
                    "int8-int64, uint8-uint64 or bool",
                    source, printable_text(descr), why);
}

std::string_view descr_of(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    case DType::Float16: return "<f2";
    default: return "";  // bfloat16 too: numpy has no such type
  }
}

}  // namespace

std::string numpy_shape_str(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

Result<NpyHeader> parse_npy_header(std::string_view text, const std::string& source) {
  HeaderParser p(text, source);
  if (!p.eat('{')) return p.fail("expected '{'");
  NpyHeader h;
  bool have_descr = false, have_order = false, have_shape = false;
  while (!p.eat('}')) {
    auto key = p.parse_string();
    if (!key) return key.error();
    if (!p.eat(':')) return p.fail("expected ':'");
    auto value = p.parse_value();
    if (!value) return value.error();
    using K = PyValue::Kind;
    if (*key == "descr" && !have_descr) {
      if (value->kind != K::String) return p.fail("'descr' must be a string");
      GRIST_TRY(parse_descr(value->str, source, h));
      have_descr = true;
    } else if (*key == "fortran_order" && !have_order) {
      if (value->kind != K::Bool) return p.fail("'fortran_order' must be True or False");
      h.fortran_order = value->boolean;
      have_order = true;
    } else if (*key == "shape" && !have_shape) {
      if (value->kind != K::IntTuple) return p.fail("'shape' must be a tuple of integers");
      h.shape = std::move(value->ints);
      have_shape = true;
    } else {
      return make_error("{}: malformed .npy header: unexpected or repeated key '{}'", source, printable_text(*key));
    }
    if (!p.eat(',')) {
      if (!p.eat('}')) return p.fail("expected ',' or '}'");
      break;
    }
  }
  if (!p.at_end()) return p.fail("unexpected text after the closing '}'");
  if (!have_descr || !have_order || !have_shape) {
    return make_error("{}: malformed .npy header: missing key '{}'", source,
                      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  }
  return h;
}

Result<std::string> format_npy_header(DType dtype, const std::vector<int64_t>& shape) {
  std::string_view descr = descr_of(dtype);
  if (descr.empty()) return make_error(".npy cannot store element type {}", dtype_name(dtype));
  return fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, numpy_shape_str(shape));
}

}  // namespace grist
