// .npz reading (numpy.savez and savez_compressed archives) and writing (stored, never overwriting).
#include "data/npz.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <zip.h>

#include "data/npy.h"
#include "data/test_files.h"

namespace grist {
namespace {

using testing::fixture;
using testing::ScratchDir;

std::vector<std::string> names_of(const NamedTensors& ts) {
  std::vector<std::string> v;
  for (const auto& [name, t] : ts) v.push_back(name);
  return v;
}

// Builds a zip with the given (entry name, bytes) pairs, for archives numpy would not write.
std::string make_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  EXPECT_NE(za, nullptr);
  for (const auto& [name, bytes] : entries) {
    zip_source_t* s = zip_source_buffer(za, bytes.data(), bytes.size(), 0);
    EXPECT_GE(zip_file_add(za, name.c_str(), s, 0), 0);
  }
  EXPECT_EQ(zip_close(za), 0);
  return path;
}

TEST(Npz, ReadsNumpySavezInArchiveOrder) {
  auto r = read_npz(fixture("savez.npz"));
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(names_of(*r), (std::vector<std::string>{"weights", "flag", "arr_0"}));
  const Tensor& w = (*r)[0].second;
  EXPECT_EQ(w.dtype(), DType::Float32);
  EXPECT_EQ(w.shape(), (Shape{2, 2}));
  EXPECT_EQ(w.to_int_vector(), (std::vector<int64_t>{1, 2, 3, 4}));
  const Tensor& flag = (*r)[1].second;
  EXPECT_EQ(flag.dtype(), DType::Bool);
  EXPECT_EQ(flag.rank(), 0);
  EXPECT_TRUE(flag.data<bool>()[0]);
  EXPECT_EQ((*r)[2].second.dtype(), DType::UInt32);
  EXPECT_EQ((*r)[2].second.to_int_vector(), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Npz, ReadsSavezCompressed) {
  auto r = read_npz(fixture("savez_compressed.npz"));
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(names_of(*r), (std::vector<std::string>{"a", "b", "zeros"}));
  const Tensor& a = (*r)[0].second;
  EXPECT_EQ(a.dtype(), DType::Float64);
  EXPECT_EQ(a.shape(), (Shape{5}));
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(a.data<double>()[i], i * 0.25);
  const Tensor& b = (*r)[1].second;
  EXPECT_EQ(b.dtype(), DType::UInt64);
  EXPECT_EQ(b.shape(), (Shape{4, 5}));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(b.data<uint64_t>()[i], static_cast<uint64_t>(i));
  const Tensor& z = (*r)[2].second;
  EXPECT_EQ(z.dtype(), DType::Int16);
  EXPECT_EQ(z.numel(), 64);
  for (int64_t v : z.to_int_vector()) EXPECT_EQ(v, 0);
}

TEST(Npz, RoundTripsEveryDtypeInOrder) {
  ScratchDir dir;
  NamedTensors in;
  in.emplace_back("f32", Tensor::from<float>(Shape{2, 2}, {1.5f, -0.0f, 3e38f, -1e-40f}));
  in.emplace_back("f64", Tensor::from<double>(Shape{3}, {1e308, -2.5, 0.1}));
  in.emplace_back("i8", Tensor::from<int8_t>(Shape{2}, {-128, 127}));
  in.emplace_back("i16", Tensor::from<int16_t>(Shape{1, 2}, {-32768, 32767}));
  in.emplace_back("i32", Tensor::scalar<int32_t>(-123456));
  in.emplace_back("i64", Tensor::from<int64_t>(Shape{2}, {INT64_MIN, INT64_MAX}));
  in.emplace_back("u8", Tensor(DType::UInt8, Shape{0, 3}));
  in.emplace_back("u16", Tensor::from<uint16_t>(Shape{2}, {0, 65535}));
  in.emplace_back("u32", Tensor::from<uint32_t>(Shape{1}, {4000000000u}));
  in.emplace_back("u64", Tensor::from<uint64_t>(Shape{1, 1, 1}, {UINT64_MAX}));
  in.emplace_back("b", Tensor::from<bool>(Shape{3}, {true, false, true}));
  in.emplace_back("a0 with space", Tensor(DType::Float32, Shape{0}));
  const std::string path = dir.path("all.npz");
  ASSERT_TRUE(write_npz(path, in));
  auto out = read_npz(path);
  ASSERT_TRUE(out) << out.message();
  ASSERT_EQ(names_of(*out), names_of(in));
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].first);
    const Tensor &a = in[i].second, &b = (*out)[i].second;
    ASSERT_EQ(a.dtype(), b.dtype());
    ASSERT_EQ(a.shape(), b.shape());
    if (a.nbytes()) {
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
    }
  }
}

TEST(Npz, WritesStoredEntriesLikeSavez) {
  ScratchDir dir;
  const std::string path = dir.path("s.npz");
  const Tensor t = Tensor::from<float>(Shape{2}, {1.0f, 2.0f});
  ASSERT_TRUE(write_npz(path, {{"x", t}}));
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  ASSERT_NE(za, nullptr);
  ASSERT_EQ(zip_get_num_entries(za, 0), 1);
  zip_stat_t st;
  ASSERT_EQ(zip_stat_index(za, 0, 0, &st), 0);
  EXPECT_STREQ(st.name, "x.npy");
  EXPECT_EQ(st.comp_method, ZIP_CM_STORE);
  auto npy = encode_npy(t);
  ASSERT_TRUE(npy);
  EXPECT_EQ(st.size, npy->size());
  zip_discard(za);
}

TEST(Npz, EmptyArchiveRoundTrips) {
  ScratchDir dir;
  const std::string path = dir.path("empty.npz");
  ASSERT_TRUE(write_npz(path, {}));
  auto r = read_npz(path);
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(r->empty());
}

TEST(Npz, WriterRefusesToOverwrite) {
  ScratchDir dir;
  const std::string path = dir.write("exists.npz", "precious");
  Status s = write_npz(path, {{"x", Tensor::scalar<float>(1.0f)}});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), path + ": already exists; refusing to overwrite it");
  EXPECT_EQ(testing::read_file_bytes(path), "precious");
  // Also when the existing file is one we wrote.
  const std::string ours = dir.path("ours.npz");
  ASSERT_TRUE(write_npz(ours, {{"x", Tensor::scalar<float>(1.0f)}}));
  EXPECT_FALSE(write_npz(ours, {{"y", Tensor::scalar<float>(2.0f)}}));
  auto r = read_npz(ours);
  ASSERT_TRUE(r);
  EXPECT_EQ(names_of(*r), (std::vector<std::string>{"x"}));
}

TEST(Npz, WriterRejectsBadNames) {
  ScratchDir dir;
  const Tensor t = Tensor::scalar<float>(1.0f);
  const std::string path = dir.path("n.npz");
  Status empty = write_npz(path, {{"", t}});
  EXPECT_NE(empty.message().find("empty name"), std::string::npos);
  Status slash = write_npz(path, {{"a/b", t}});
  EXPECT_NE(slash.message().find("must not contain '/'"), std::string::npos);
  Status dup = write_npz(path, {{"a", t}, {"a", t}});
  EXPECT_EQ(dup.message(), path + ": two arrays are named 'a'");
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ONNX value names ("/fc1/Gemm_output_0", or any bytes at all) as array names numpy reads back unchanged.
TEST(Npz, ArrayNamesEscapeWhatNumpyCannotReadBack) {
  EXPECT_EQ(npz_array_name("/fc1/Gemm_output_0"), "%2Ffc1%2FGemm_output_0");
  EXPECT_EQ(npz_array_name("x: y.z-0 [1]"), "x: y.z-0 [1]");
  EXPECT_EQ(npz_array_name("100%"), "100%25");
  EXPECT_EQ(npz_array_name("a\\b"), "a%5Cb");
  EXPECT_EQ(npz_array_name(std::string("a\0b\n\x7f", 5)), "a%00b%0A%7F");
  EXPECT_EQ(npz_array_name("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(npz_array_name("\xff"), "%FF");                   // never UTF-8
  EXPECT_EQ(npz_array_name("\xc0\xaf"), "%C0%AF");            // overlong '/'
  EXPECT_EQ(npz_array_name("\xed\xa0\x80"), "%ED%A0%80");     // a surrogate
  EXPECT_EQ(npz_array_name("\xf4\x90\x80\x80"), "%F4%90%80%80");  // past U+10FFFF
  EXPECT_EQ(npz_array_name("\xe2\x82"), "%E2%82");            // cut short
  EXPECT_EQ(npz_array_name(""), "");
  // Injective: the escape character itself is escaped, so "%2F" and "/" stay apart.
  EXPECT_NE(npz_array_name("%2F"), npz_array_name("/"));

  ScratchDir dir;
  const Tensor t = Tensor::scalar<float>(1.0f);
  const std::vector<std::string> names{"/a/b", "%2Fa%2Fb", "caf\xc3\xa9", std::string("n\0l", 3)};
  NamedTensors arrays;
  for (const auto& n : names) arrays.emplace_back(npz_array_name(n), t);
  ASSERT_TRUE(write_npz(dir.path("names.npz"), arrays));
  auto r = read_npz(dir.path("names.npz"));
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(names_of(*r), (std::vector<std::string>{"%2Fa%2Fb", "%252Fa%252Fb", "caf\xc3\xa9", "n%00l"}));
}

TEST(Npz, RejectsWhatIsNotAnNpz) {
  ScratchDir dir;
  auto missing = read_npz(dir.path("missing.npz"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message().rfind(dir.path("missing.npz") + ": cannot open", 0), 0u) << missing.message();

  const std::string not_zip = dir.write("text.npz", "hello, this is not a zip archive at all");
  auto r = read_npz(not_zip);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.message().rfind(not_zip + ": cannot open as a .npz (zip) archive: ", 0), 0u) << r.message();

  auto other = read_npz(make_zip(dir.path("other.npz"), {{"readme.txt", "hi"}}));
  ASSERT_FALSE(other);
  EXPECT_NE(other.message().find("other.npz: entry 'readme.txt': not a .npy array"), std::string::npos)
      << other.message();

  auto good = encode_npy(Tensor::from<int32_t>(Shape{3}, {1, 2, 3}));
  ASSERT_TRUE(good);
  const std::string short_entry = good->substr(0, good->size() - 4);
  auto cut = read_npz(make_zip(dir.path("cut.npz"), {{"ok.npy", *good}, {"bad.npy", short_entry}}));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.message().find("cut.npz: entry 'bad.npy': header declares shape (3,) of int32 but the file holds 8 "
                               "bytes of data, 12 needed"),
            std::string::npos)
      << cut.message();
}

TEST(Npz, TruncatedOrCorruptedArchivesGiveErrors) {
  ScratchDir dir;
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    const std::string whole = testing::read_file_bytes(fixture(name));
    for (std::size_t len = 0; len < whole.size(); len += 7) {
      auto r = read_npz(dir.write("t.npz", whole.substr(0, len)));
      EXPECT_FALSE(r) << name << " cut to " << len << " bytes";
      std::filesystem::remove(dir.path("t.npz"));
    }
    std::mt19937 rng(99);
    for (int iter = 0; iter < 300; ++iter) {
      std::string bytes = whole;
      for (int e = 0; e < 3; ++e) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      const std::string path = dir.write("c.npz", bytes);
      auto r = read_npz(path);  // either error or well-formed arrays; must not crash
      if (!r) {
        EXPECT_EQ(r.message().rfind(path + ": ", 0), 0u) << r.message();
      }
      std::filesystem::remove(path);
    }
  }
}

}  // namespace
}  // namespace grist
