// NumPy .npy files (format versions 1.0, 2.0 and 3.0) ⇄ Tensor. Reading converts Fortran order and
// big-endian data to grist's C-order little-endian layout; writing produces what numpy.save would.
#pragma once

#include <string>
#include <string_view>

#include "data/byte_stream.h"
#include "tensor/tensor.h"
#include "util/status.h"

namespace grist {

// Reads a .npy file. Errors start with the path.
Result<Tensor> read_npy(const std::string& path);

// Reads one .npy array from a stream (e.g. a zip entry); errors start with `source`. The stream must
// hold exactly one array: trailing bytes are an error, since they mean the header lies about the shape.
Result<Tensor> read_npy(const ByteStream& in, const std::string& source);

// Parses .npy bytes held in memory (also the entry point for fuzzing).
Result<Tensor> parse_npy(std::string_view bytes, const std::string& source);

// The bytes numpy.save would write for `t`: format 1.0, C order, little-endian, header padded to 64.
Result<std::string> encode_npy(const Tensor& t);

// Writes `t` as a new .npy file, atomically; fails if `path` already exists.
Status write_npy(const std::string& path, const Tensor& t);

}  // namespace grist
