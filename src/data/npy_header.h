// The header of a .npy file: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// parsed by hand (a tiny grammar, no recursion) so malformed or hostile headers only ever yield errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"
#include "util/status.h"

namespace grist {

struct NpyHeader {
  DType dtype = DType::Undefined;
  bool big_endian = false;     // descr began with '>'
  bool fortran_order = false;  // column-major data
  std::vector<int64_t> shape;  // numpy's order, before any Fortran transposition
};

// Parses the dict text; errors start with `source`.
Result<NpyHeader> parse_npy_header(std::string_view text, const std::string& source);

// The dict text numpy writes for a C-order little-endian array, without padding or newline.
// Fails for dtypes .npy cannot express among ours (e.g. Undefined).
Result<std::string> format_npy_header(DType dtype, const std::vector<int64_t>& shape);

// numpy's shape notation: "()", "(3,)", "(3, 4)"; used in messages so they read like numpy.
std::string numpy_shape_str(const std::vector<int64_t>& shape);

// Text from a file made safe to quote in a one-line message: bytes outside printable ASCII become \xHH.
std::string printable_text(std::string_view text);

}  // namespace grist
