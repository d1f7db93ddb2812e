// SHA-256 of a file, which ties a witness to its model: FIPS 180-4's known answers, a file larger than the
// 64 KiB read buffer, and a missing file.
#include "util/sha256.h"

#include <gtest/gtest.h>

#include "data/test_files.h"

namespace grist {
namespace {

using testing::ScratchDir;

TEST(Sha256, KnownAnswerVectors) {
  ScratchDir dir;
  struct Vector {
    std::string message, digest;
  };
  const Vector vectors[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
  };
  for (const Vector& v : vectors) {
    auto h = sha256_file(dir.write("m.bin", v.message));
    ASSERT_TRUE(h) << h.message();
    EXPECT_EQ(*h, v.digest) << "'" << v.message << "'";
  }
}

// One million 'a': FIPS 180-4's long vector, read in sixteen 64 KiB chunks and a partial one.
TEST(Sha256, AMillionAsAcrossManyReadBuffers) {
  ScratchDir dir;
  auto h = sha256_file(dir.write("a.bin", std::string(1'000'000, 'a')));
  ASSERT_TRUE(h) << h.message();
  EXPECT_EQ(*h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AMissingFileIsAnError) {
  auto h = sha256_file("/nonexistent/model.onnx");
  ASSERT_FALSE(h);
  EXPECT_EQ(h.message(), "/nonexistent/model.onnx: cannot open file");
}

}  // namespace
}  // namespace grist
