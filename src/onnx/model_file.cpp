#include "onnx/model_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

#include "onnx/tensor_proto.h"

namespace grist {

bool read_file_bytes(int fd, uint64_t offset, uint64_t length, void* into, int& read_errno) {
  auto* p = static_cast<char*>(into);
  for (uint64_t done = 0; done < length;) {
    const ssize_t n = ::pread(fd, p + done, static_cast<size_t>(length - done), static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      read_errno = n < 0 ? errno : 0;
      return false;
    }
    done += static_cast<uint64_t>(n);
  }
  return true;
}

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using Wire = google::protobuf::internal::WireFormatLite;

constexpr int kModelGraph = 7;
constexpr int kGraphInitializer = 5;
constexpr int kTensorRawData = 9;

bool is_message_field(uint32_t tag, int number) {
  return Wire::GetTagFieldNumber(tag) == number && Wire::GetTagWireType(tag) == Wire::WIRETYPE_LENGTH_DELIMITED;
}

// The next tag, 0 at the message's end. Protobuf's parser refuses a tag longer than 5 bytes, which ReadTag would
// truncate to 32 bits instead: refused here too.
bool read_tag(CodedInputStream& in, uint32_t& tag) {
  const int at = in.CurrentPosition();
  tag = in.ReadTag();
  return tag == 0 || in.CurrentPosition() - at <= 5;
}

// Appends one field (its tag just read) to `out` as it was serialized, for protobuf to merge afterwards.
bool copy_field(CodedInputStream& in, uint32_t tag, std::string& out) {
  StringOutputStream s(&out);
  CodedOutputStream o(&s);
  return Wire::SkipField(&in, tag, &o);
}

// Reads a message's fields up to its end: each length-delimited field `number` goes to `on_field` (its tag just
// read), every other is appended to `fields` as serialized. False for malformed data or an early end.
template <class OnField>
bool walk_fields(CodedInputStream& in, int number, std::string& fields, OnField on_field) {
  for (uint32_t tag;;) {
    if (!read_tag(in, tag)) return false;
    if (tag == 0) return in.ConsumedEntireMessage();
    if (!(is_message_field(tag, number) ? on_field(tag) : copy_field(in, tag, fields))) return false;
  }
}

class Walk {
 public:
  Walk(int fd, uint64_t size, uint64_t min_bytes, InFileInitializers& in_file, int& read_errno)
      : fd_(fd), size_(size), min_bytes_(std::max<uint64_t>(min_bytes, 1)), in_file_(in_file), errno_(read_errno) {}

  bool model(CodedInputStream& in, onnx::ModelProto& m) {
    std::string fields;
    // A field given twice is merged into one message, as protobuf does.
    return walk_fields(in, kModelGraph, fields,
                       [&](uint32_t) { return nested(in, [&] { return graph(in, *m.mutable_graph()); }); }) &&
           m.MergeFromString(fields);
  }

 private:
  // Parses a length-delimited message's contents with `body`, which must end exactly at its end.
  template <class Body>
  bool nested(CodedInputStream& in, Body body) {
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(INT_MAX)) return false;
    // PushLimit keeps the enclosing message's limit when the new one lies beyond it: such a length is malformed.
    const int outer = in.BytesUntilLimit();
    if (outer >= 0 && length > static_cast<uint32_t>(outer)) return false;
    const auto limit = in.PushLimit(static_cast<int>(length));
    // The end of the file before the message's end reads as an end too: BytesUntilLimit tells them apart.
    const bool ok = body() && in.BytesUntilLimit() == 0;
    in.PopLimit(limit);
    return ok;
  }

  bool graph(CodedInputStream& in, onnx::GraphProto& g) {
    std::string fields;
    return walk_fields(in, kGraphInitializer, fields,
                       [&](uint32_t) {
                         onnx::TensorProto* t = g.add_initializer();
                         const int index = g.initializer_size() - 1;
                         std::optional<InFileBytes> raw;
                         if (!nested(in, [&] { return tensor(in, *t, raw); })) return false;
                         if (raw) in_file_[index] = *raw;
                         return true;
                       }) &&
           g.MergeFromString(fields);
  }

  bool tensor(CodedInputStream& in, onnx::TensorProto& t, std::optional<InFileBytes>& raw) {
    std::string fields;
    const bool walked = walk_fields(in, kTensorRawData, fields, [&](uint32_t tag) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(INT_MAX)) return false;
      const auto at = static_cast<uint64_t>(in.CurrentPosition());
      if (length < min_bytes_) {
        raw.reset();  // the last raw_data given is the tensor's
        std::string bytes;
        if (!in.ReadString(&bytes, static_cast<int>(length))) return false;
        StringOutputStream s(&fields);
        CodedOutputStream o(&s);
        o.WriteTag(tag);
        o.WriteVarint32(length);
        o.WriteString(bytes);
        return true;
      }
      // Skipping seeks, and a seek past the end of the file succeeds: a file that ends early is caught here.
      if (at + length > size_ || !in.Skip(static_cast<int>(length))) return false;
      raw = InFileBytes{at, length};
      return true;
    });
    if (!walked || !t.MergeFromString(fields)) return false;
    if (!raw) return true;
    t.clear_raw_data();  // a shorter raw_data before this one
    if (stays_in_file(t, raw->length)) return true;
    // Read as protobuf would have, so the checker and the importer see and report it as they always did.
    const InFileBytes b = *raw;
    raw.reset();
    std::string* bytes = t.mutable_raw_data();
    bytes->resize(static_cast<size_t>(b.length));
    return read_file_bytes(fd_, b.offset, b.length, bytes->data(), errno_);
  }

  // A tensor whose raw_data alone holds its values, exactly as many bytes as its shape needs, of a type grist
  // computes on: the checker accepts it (marked as data held elsewhere) as it accepts it with its bytes.
  static bool stays_in_file(const onnx::TensorProto& t, uint64_t length) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
      return false;  // the external-data loader refuses it with its own message
    if (t.float_data_size() > 0 || t.int32_data_size() > 0 || t.string_data_size() > 0 || t.int64_data_size() > 0 ||
        t.double_data_size() > 0 || t.uint64_data_size() > 0)
      return false;  // the checker refuses two value fields
    const auto dtype = static_cast<DType>(t.data_type());
    if (!is_supported(dtype)) return false;
    auto bytes = checked_nbytes(std::vector<int64_t>(t.dims().begin(), t.dims().end()), dtype, "tensor");
    return bytes && static_cast<uint64_t>(*bytes) == length;
  }

  int fd_;
  uint64_t size_;
  uint64_t min_bytes_;
  InFileInitializers& in_file_;
  int& errno_;
};

}  // namespace

bool parse_model_file(int fd, uint64_t size, uint64_t min_bytes, onnx::ModelProto& model, InFileInitializers& in_file,
                      int& read_errno) {
  read_errno = 0;
  google::protobuf::io::FileInputStream stream(fd, 1 << 20);
  bool ok = false;
  {
    CodedInputStream in(&stream);
    in.SetTotalBytesLimit(INT_MAX);
    ok = Walk(fd, size, min_bytes, in_file, read_errno).model(in, model);
  }
  if (stream.GetErrno() != 0) read_errno = stream.GetErrno();
  return ok && read_errno == 0;
}

}  // namespace grist
