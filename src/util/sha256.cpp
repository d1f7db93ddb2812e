#include "util/sha256.h"

#include <fstream>
#include <memory>

#include <openssl/evp.h>

namespace grist {

Result<std::string> sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GRIST_CHECK(f.good(), "{}: cannot open file", path);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  GRIST_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, "sha256: cannot start a digest");
  char buf[1 << 16];
  while (f) {
    f.read(buf, sizeof buf);
    if (f.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(f.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  GRIST_CHECK(EVP_DigestFinal_ex(ctx.get(), digest, &len) == 1, "sha256: cannot finish the digest");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace grist
