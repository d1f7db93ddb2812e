// SHA-256 of a file (OpenSSL's libcrypto), to tie a witness to the exact model it was found on.
#pragma once

#include <string>

#include "util/status.h"

namespace grist {

Result<std::string> sha256_file(const std::string& path);  // lowercase hex

}  // namespace grist
