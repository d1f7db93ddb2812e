// .npy reading and writing: round trips, files written by numpy itself, and hostile input.
#include "data/npy.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "data/test_files.h"
#include "tensor/half.h"

namespace grist {
namespace {

using testing::fixture;
using testing::ScratchDir;

const DType kAllDTypes[] = {DType::Float32, DType::Float64, DType::Int8,   DType::Int16,  DType::Int32, DType::Int64,
                            DType::UInt8,   DType::UInt16,  DType::UInt32, DType::UInt64, DType::Bool,
                            DType::Float16};

// Distinct bytes everywhere (NaN payloads included for floats), 0/1 for bool.
Tensor patterned(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  auto* p = reinterpret_cast<unsigned char*>(t.raw());
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    p[i] = dtype == DType::Bool ? i % 2 : static_cast<unsigned char>(i * 31 + 7);
  }
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  if (a.nbytes()) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  }
}

// A .npy file with an arbitrary header text (padded like numpy) and data.
std::string make_npy(const std::string& dict, const std::string& data = "", int major = 1) {
  std::string header = dict;
  const std::size_t pre = major == 1 ? 10 : 12;
  while ((pre + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < pre - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string error_of(const std::string& bytes) {
  auto r = parse_npy(bytes, "x.npy");
  return r ? std::string("(no error)") : r.message();
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  ScratchDir dir;
  const Shape shapes[] = {Shape{}, Shape{0}, Shape{3}, Shape{2, 0, 3}, Shape{2, 3, 4}, Shape{1, 2, 1, 2, 1, 2, 1, 2}};
  int n = 0;
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape.str());
      Tensor t = patterned(dtype, shape);
      auto bytes = encode_npy(t);
      ASSERT_TRUE(bytes) << bytes.message();
      EXPECT_EQ((bytes->size() - t.nbytes()) % 64, 0u) << "data must start 64-byte aligned";
      auto back = parse_npy(*bytes, "mem");
      ASSERT_TRUE(back) << back.message();
      expect_same(t, *back);

      const std::string path = dir.path("t" + std::to_string(n++) + ".npy");
      ASSERT_TRUE(write_npy(path, t));
      auto from_file = read_npy(path);
      ASSERT_TRUE(from_file) << from_file.message();
      expect_same(t, *from_file);
    }
  }
}

TEST(Npy, EncodesLikeNumpy) {
  auto t = read_npy(fixture("float32_2x3.npy"));
  ASSERT_TRUE(t) << t.message();
  auto ours = encode_npy(*t);
  ASSERT_TRUE(ours);
  const std::string theirs = testing::read_file_bytes(fixture("float32_2x3.npy"));
  // Same preamble and dict; numpy 1.24 pads differently (room to grow the shape), so compare trimmed.
  EXPECT_EQ(ours->substr(0, 8), theirs.substr(0, 8));
  auto dict = [](const std::string& f) {
    std::string h = f.substr(10, (unsigned char)f[8] | ((unsigned char)f[9] << 8));
    return h.substr(0, h.find_last_not_of(" \n") + 1);
  };
  EXPECT_EQ(dict(*ours), dict(theirs));
  EXPECT_EQ(dict(*ours), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(ours->substr(ours->size() - 24), theirs.substr(theirs.size() - 24));
}

TEST(Npy, ReadsNumpyFixtures) {
  auto f32 = read_npy(fixture("float32_2x3.npy"));
  ASSERT_TRUE(f32) << f32.message();
  EXPECT_EQ(f32->shape(), (Shape{2, 3}));
  const float* f = f32->data<float>();
  EXPECT_EQ(f[0], 0.0f);
  EXPECT_EQ(f[1], 1.5f);
  EXPECT_EQ(f[2], -2.0f);
  EXPECT_EQ(f[3], 3.25f);
  EXPECT_TRUE(std::isinf(f[4]) && f[4] > 0);
  EXPECT_TRUE(std::isnan(f[5]));

  auto scalar = read_npy(fixture("int64_scalar.npy"));
  ASSERT_TRUE(scalar) << scalar.message();
  EXPECT_EQ(scalar->rank(), 0);
  EXPECT_EQ(scalar->data<int64_t>()[0], -7);

  auto b = read_npy(fixture("bool_5.npy"));
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(b->to_int_vector(), (std::vector<int64_t>{1, 0, 1, 1, 0}));

  auto empty = read_npy(fixture("uint16_0x4.npy"));
  ASSERT_TRUE(empty) << empty.message();
  EXPECT_EQ(empty->dtype(), DType::UInt16);
  EXPECT_EQ(empty->shape(), (Shape{0, 4}));

  auto v2 = read_npy(fixture("uint8_v2_4.npy"));
  ASSERT_TRUE(v2) << v2.message();
  EXPECT_EQ(v2->to_int_vector(), (std::vector<int64_t>{0, 1, 254, 255}));

  auto v3 = read_npy(fixture("int8_v3_3.npy"));
  ASSERT_TRUE(v3) << v3.message();
  EXPECT_EQ(v3->dtype(), DType::Int8);
  EXPECT_EQ(v3->to_int_vector(), (std::vector<int64_t>{-128, 0, 127}));
}

TEST(Npy, ConvertsFortranOrderAndBigEndian) {
  auto f = read_npy(fixture("int32_fortran_2x3x2.npy"));
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(f->to_int_vector(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));

  auto be = read_npy(fixture("float64_bigendian_3.npy"));
  ASSERT_TRUE(be) << be.message();
  EXPECT_EQ(be->dtype(), DType::Float64);
  EXPECT_EQ(be->data<double>()[0], 1.5);
  EXPECT_EQ(be->data<double>()[1], -2.0);
  EXPECT_EQ(be->data<double>()[2], 1e300);

  auto both = read_npy(fixture("int16_bigendian_fortran_2x3.npy"));
  ASSERT_TRUE(both) << both.message();
  EXPECT_EQ(both->shape(), (Shape{2, 3}));
  EXPECT_EQ(both->to_int_vector(), (std::vector<int64_t>{-3, -2, -1, 0, 1, 2}));
}

TEST(Npy, AcceptsHeaderVariantsNumpyHasWritten) {
  const std::string four(4, '\x01');
  // Python 2 era long dims, double quotes, no trailing comma, '<u1' instead of '|u1'.
  auto a = parse_npy(make_npy("{'descr': '<u1', 'fortran_order': False, 'shape': (2L, 2L)}", four), "x.npy");
  ASSERT_TRUE(a) << a.message();
  EXPECT_EQ(a->shape(), (Shape{2, 2}));
  auto b = parse_npy(make_npy("{\"shape\": (4,), \"fortran_order\": False, \"descr\": \"|u1\"}", four), "x.npy");
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(b->shape(), (Shape{4}));
}

TEST(Npy, NormalisesBoolBytes) {
  const std::string data("\x00\x02\xff", 3);
  auto t = parse_npy(make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", data), "x.npy");
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(t->to_int_vector(), (std::vector<int64_t>{0, 1, 1}));
}

TEST(Npy, RejectsMalformedHeadersWithClearErrors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  struct Case {
    std::string bytes, expected;
  };
  const Case cases[] = {
      {"", "x.npy: file is empty"},
      {"PK\x03\x04 not npy at all", "x.npy: not a .npy file"},
      {std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '), "unsupported .npy format version 4.0"},
      {std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), "implausibly large"},
      {std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 17), "header declares 64 bytes but the file holds 7"},
      {make_npy("['descr', '<f4']"), "expected '{'"},
      {make_npy("{'descr': '<f4', 'fortran_order': False}"), "missing key 'shape'"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}"), "unexpected character '1'"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 'x'}"),
       "unexpected or repeated key 'extra'"},
      {make_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}"), "repeated key 'descr'"},
      {make_npy("{'descr': '<f4', 'fortran_order': 'no', 'shape': (3,)}"), "'fortran_order' must be True or False"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [3]}"), "structured"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4)}"), "expected ',' or ')'"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}"), "negative dimension -3"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"), "integer too large"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"), "too large"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}"), "rank 9 exceeds"},
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk"), "unexpected text after"},
      {make_npy("{'descr' '<f4', 'fortran_order': False, 'shape': (3,)}"), "expected ':'"},
      {make_npy("{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}"), "type '<f4, ' is not supported"},
      {make_npy("{'descr': '<f4"), "unterminated string"},
      {make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}"), "'<c8' is not supported (complex"},
      {make_npy("{'descr': '<f16', 'fortran_order': False, 'shape': (3,)}"), "'<f16' is not supported"},
      {make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}"), "object arrays"},
      {make_npy("{'descr': '<U3', 'fortran_order': False, 'shape': (3,)}"), "string arrays"},
      {make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}"), "structured .npy arrays"},
      {make_npy(ok_dict, std::string(40, '\0')),
       "x.npy: header declares shape (3, 4) of float32 but the file holds 40 bytes of data, 48 needed"},
      {make_npy(ok_dict, std::string(52, '\0')), "(48 bytes of data) but more data follows"},
      // Text quoted from the header keeps the message on one line (found by the .npz fuzzer).
      {make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'py\n\x8ai': 'x'}"),
       "unexpected or repeated key 'py\\x0a\\x8ai'"},
      {make_npy("{'descr': '<f\n4', 'fortran_order': False, 'shape': (3,)}"), "element type '<f\\x0a4' is not"},
  };
  for (const Case& c : cases) {
    const std::string err = error_of(c.bytes);
    EXPECT_NE(err.find(c.expected), std::string::npos) << "got: " << err << "\nexpected to contain: " << c.expected;
    EXPECT_EQ(err.rfind("x.npy: ", 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  }
}

TEST(Npy, EveryTruncationIsAnError) {
  const std::string whole = testing::read_file_bytes(fixture("int32_fortran_2x3x2.npy"));
  ScratchDir dir;
  for (std::size_t len = 0; len < whole.size(); ++len) {
    const std::string part = whole.substr(0, len);
    EXPECT_FALSE(parse_npy(part, "x.npy")) << "prefix of " << len << " bytes";
    // Without a known size the reader allocates first and must still notice the short read.
    ByteStream unsized = memory_stream(part);
    unsized.size.reset();
    EXPECT_FALSE(read_npy(unsized, "x.npy")) << "unsized prefix of " << len << " bytes";
  }
  auto r = read_npy(dir.write("cut.npy", whole.substr(0, whole.size() - 5)));
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("cut.npy: header declares shape (2, 3, 2) of int32 but the file holds 43 bytes of data, "
                             "48 needed"),
            std::string::npos)
      << r.message();
}

// Random corruption must only ever produce errors or well-formed tensors (run under ASan/UBSan too).
TEST(Npy, SurvivesRandomCorruption) {
  const std::string files[] = {"float32_2x3.npy", "int16_bigendian_fortran_2x3.npy", "int8_v3_3.npy"};
  std::mt19937 rng(1234);
  for (const auto& name : files) {
    const std::string whole = testing::read_file_bytes(fixture(name));
    for (int iter = 0; iter < 3000; ++iter) {
      std::string bytes = whole;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = rng() % bytes.size();
        // Favour header bytes and characters the parser cares about.
        const char pool[] = "(),:{}'\"0123456789 -LTF<>|";
        bytes[at] = rng() % 2 ? static_cast<char>(rng()) : pool[rng() % (sizeof(pool) - 1)];
      }
      if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
      auto r = parse_npy(bytes, "fuzz.npy");
      if (r) {
        EXPECT_EQ(r->nbytes(), static_cast<std::size_t>(r->numel()) * dtype_size(r->dtype()));
      } else {
        EXPECT_EQ(r.message().rfind("fuzz.npy: ", 0), 0u) << r.message();
      }
    }
  }
}

TEST(Npy, WriterNeverOverwrites) {
  ScratchDir dir;
  const std::string path = dir.path("a.npy");
  ASSERT_TRUE(write_npy(path, Tensor::from<int32_t>(Shape{2}, {1, 2})));
  Status again = write_npy(path, Tensor::from<int32_t>(Shape{2}, {3, 4}));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.message(), path + ": already exists; refusing to overwrite it");
  auto kept = read_npy(path);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->to_int_vector(), (std::vector<int64_t>{1, 2}));
  // No temporary files left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path(""))) ++files;
  EXPECT_EQ(files, 1);
}

TEST(Npy, MissingFileNamesThePath) {
  auto r = read_npy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.message(), "/nonexistent/dir/x.npy: cannot open file: No such file or directory");
  Status w = write_npy("/nonexistent/dir/y.npy", Tensor::scalar<float>(1.0f));
  ASSERT_FALSE(w);
  EXPECT_EQ(w.message().rfind("/nonexistent/dir/y.npy: ", 0), 0u) << w.message();
}

TEST(Npy, ReadsNumpysFloat16) {
  auto t = read_npy(fixture("float16_5.npy"));
  ASSERT_TRUE(t) << t.message();
  ASSERT_EQ(t->dtype(), DType::Float16);
  const uint16_t expected[] = {0x3c00, 0x7bff, 0x0001, 0xfc00, 0xc100};  // 1, 65504, 2^-24, -inf, -2.5
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t->data<Half>()[i].bits, expected[i]) << i;
}

TEST(Npy, WritesBFloat16AsTheFloat32ValuesItHolds) {
  Tensor b(DType::BFloat16, Shape{2});
  b.data<BFloat16>()[0] = to_bfloat16(1.5f);
  b.data<BFloat16>()[1] = to_bfloat16(-0x1p-133f);
  auto bytes = encode_npy(b);
  ASSERT_TRUE(bytes) << bytes.message();
  auto back = parse_npy(*bytes, "mem");
  ASSERT_TRUE(back) << back.message();
  ASSERT_EQ(back->dtype(), DType::Float32);
  EXPECT_EQ(back->data<float>()[0], 1.5f);
  EXPECT_EQ(back->data<float>()[1], -0x1p-133f);
}

TEST(Npy, WriterRejectsUnstorableTensors) {
  ScratchDir dir;
  Status s = write_npy(dir.path("u.npy"), Tensor());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("cannot store element type undefined"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace grist
