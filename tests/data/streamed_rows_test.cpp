// IDX rows read on a thread (data/streamed_rows.h): the same bytes as read_idx, a short file's error for the
// rows it lacks only, and the Fashion-MNIST batches a data set serves from them pinned to their values.
#include "data/streamed_rows.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>
#include <zlib.h>

#include "config/manifest.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/test_files.h"
#include "support/graph_builder.h"

namespace grist {
namespace {

using testing::GraphBuilder;
using testing::ScratchDir;

// An int16 IDX file of [rows, 512] (1 KiB a row, several of StreamedRows' 1 MiB reads), big-endian, value
// (r * 7 + j) mod 65536 as int16; `declared_rows` in the header (more than `rows`: a short file).
std::string int16_idx(int64_t rows, int64_t declared_rows, const std::string& tail = "") {
  std::string out = {'\0', '\0', '\x0B', '\x02'};
  for (uint32_t d : {static_cast<uint32_t>(declared_rows), 512u})
    out += std::string{static_cast<char>(d >> 24), static_cast<char>(d >> 16), static_cast<char>(d >> 8),
                       static_cast<char>(d)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < 512; ++j) {
      const auto v = static_cast<uint16_t>(r * 7 + j);
      out += static_cast<char>(v >> 8);
      out += static_cast<char>(v & 0xff);
    }
  return out + tail;
}

std::string gzip_to(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
  return path;
}

TEST(StreamedRows, HoldTheBytesReadIdxReadsPlainAndGzipped) {
  ScratchDir dir;
  const std::string bytes = int16_idx(3000, 3000);
  for (const std::string& path : {dir.write("plain-idx2", bytes), gzip_to(dir.path("packed-idx2.gz"), bytes)}) {
    auto s = StreamedRows::open_idx(path, 0);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ((*s)->rows(), 3000);
    EXPECT_EQ((*s)->tensor().shape(), (Shape{3000, 512}));
    ASSERT_TRUE((*s)->wait_rows(2));
    EXPECT_EQ((*s)->tensor().data<int16_t>()[512 + 3], static_cast<int16_t>(7 + 3));  // byte-swapped already
    ASSERT_TRUE((*s)->wait_rows(3000));
    auto whole = read_idx(path);
    ASSERT_TRUE(whole) << whole.message();
    ASSERT_EQ(whole->nbytes(), (*s)->tensor().nbytes());
    EXPECT_EQ(std::memcmp(whole->raw(), (*s)->tensor().raw(), whole->nbytes()), 0) << path;
  }
}

TEST(StreamedRows, AShortFileFailsForTheRowsItLacksOnly) {
  ScratchDir dir;
  const std::string path = gzip_to(dir.path("short-idx2.gz"), int16_idx(2000, 3000));
  auto s = StreamedRows::open_idx(path, 0);
  ASSERT_TRUE(s) << s.message();  // compressed: the header cannot be checked before the data is read
  EXPECT_TRUE((*s)->wait_rows(2000));
  Status past = (*s)->wait_rows(2001);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.message(), path + ": IDX header declares shape [3000, 512] of int16 but the file holds 2048000 bytes "
                                   "of data, 3072000 needed");
  // Uncompressed, the size is known: refused at once, as read_idx does.
  auto plain = StreamedRows::open_idx(dir.write("short-idx2", int16_idx(2000, 3000)), 0);
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.message().find("the file holds 2048000 bytes of data, 3072000 needed"), std::string::npos);
}

TEST(StreamedRows, DataAfterTheDeclaredEndFailsTheWholeRead) {
  ScratchDir dir;
  const std::string path = gzip_to(dir.path("long-idx2.gz"), int16_idx(100, 100, "xyz"));
  auto s = StreamedRows::open_idx(path, 0);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE((*s)->wait_rows(99));
  Status all = (*s)->wait_rows(100);
  ASSERT_FALSE(all);
  EXPECT_EQ(all.message(), path + ": IDX header declares shape [100, 512] of int16 (102400 bytes of data) but more "
                                  "data follows");
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (std::filesystem::exists(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(StreamedRows, ACompressedFilesRowsAreKeptUncompressedForTheNextRead) {
  ScratchDir dir;
  const std::string cache = dir.path("cache");
  const std::string path = gzip_to(dir.path("rows-idx2.gz"), int16_idx(3000, 3000));
  auto whole = read_idx(path);
  ASSERT_TRUE(whole) << whole.message();
  auto first = StreamedRows::open_idx(path, 0, cache);
  ASSERT_TRUE(first) << first.message();
  EXPECT_FALSE((*first)->from_cache());
  ASSERT_TRUE((*first)->wait_rows(3000));
  first->reset();  // joins the reading thread, which has renamed its copy into place
  const std::vector<std::string> kept = files_in(cache + "/idx-rows");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].rfind("rows-idx2.gz-", 0), 0u) << kept[0];
  auto copy = read_idx(cache + "/idx-rows/" + kept[0]);  // a plain IDX file
  ASSERT_TRUE(copy) << copy.message();
  ASSERT_EQ(copy->nbytes(), whole->nbytes());
  EXPECT_EQ(std::memcmp(copy->raw(), whole->raw(), whole->nbytes()), 0);

  auto again = StreamedRows::open_idx(path, 0, cache);
  ASSERT_TRUE(again) << again.message();
  EXPECT_TRUE((*again)->from_cache());
  ASSERT_TRUE((*again)->wait_rows(3000));
  EXPECT_EQ(std::memcmp((*again)->tensor().raw(), whole->raw(), whole->nbytes()), 0);

  // A file put in its place with its size and modification time kept (cp -p, rsync -a) is read afresh too.
  {
    const auto mtime = std::filesystem::last_write_time(path);
    std::filesystem::copy_file(path, path + ".new");
    std::filesystem::last_write_time(path + ".new", mtime);
    std::filesystem::rename(path + ".new", path);
    auto kept_times = StreamedRows::open_idx(path, 0, cache);
    ASSERT_TRUE(kept_times) << kept_times.message();
    EXPECT_FALSE((*kept_times)->from_cache());
  }

  // A replaced file (another size) is read afresh, not from the copy of the old one.
  gzip_to(path, int16_idx(2500, 2500));
  auto replaced = StreamedRows::open_idx(path, 0, cache);
  ASSERT_TRUE(replaced) << replaced.message();
  EXPECT_FALSE((*replaced)->from_cache());
  EXPECT_EQ((*replaced)->rows(), 2500);
  ASSERT_TRUE((*replaced)->wait_rows(2500));
  replaced->reset();
  // The copies of the file as it was are never read again: only the replacement's copy is left.
  EXPECT_EQ(files_in(cache + "/idx-rows").size(), 1u);
  auto third = StreamedRows::open_idx(path, 0, cache);
  ASSERT_TRUE(third) << third.message();
  EXPECT_TRUE((*third)->from_cache());
}

TEST(StreamedRows, AShortFileLeavesNoCopy) {
  ScratchDir dir;
  const std::string cache = dir.path("cache");
  auto s = StreamedRows::open_idx(gzip_to(dir.path("short-idx2.gz"), int16_idx(2000, 3000)), 0, cache);
  ASSERT_TRUE(s) << s.message();
  EXPECT_FALSE((*s)->wait_rows(3000));
  s->reset();
  EXPECT_TRUE(files_in(cache + "/idx-rows").empty());
}

// The hunt's first batches of Fashion-MNIST's training images, streamed, are the file's rows as read_idx reads
// them (in order), and a shuffled set's first batch is pinned to the values it had when the rows were read
// before the hunt began.
Manifest fashion(bool shuffle) {
  Manifest m;
  m.shuffle = shuffle;
  InputSpec x;
  x.name = "x";
  x.role = InputRole::Data;
  x.source = InputSource::FashionMnist;
  x.file = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  m.inputs["x"] = x;
  return m;
}

TEST(StreamedRows, FashionMnistBatchesAreTheFilesRows) {
  Graph g = GraphBuilder().input("x", DType::Float32, {-1, 784}).node("Identity", {"x"}, {"o"}).output("o").build();
  auto whole = read_idx(fashion(false).inputs.at("x").file);
  ASSERT_TRUE(whole) << whole.message() << " (install Debian's dataset-fashion-mnist)";
  auto d = Dataset::create(fashion(false), g, 100, 5);
  ASSERT_TRUE(d) << d.message();
  EXPECT_EQ(d->pool_size(), 60000);
  Batch b;
  for (int64_t batch = 0; batch < 2; ++batch) {
    ASSERT_TRUE(d->next_batch(b));
    const Tensor& x = b.at("x");
    ASSERT_EQ(x.shape(), (Shape{100, 784}));
    const uint8_t* file = whole->data<uint8_t>() + batch * 100 * 784;
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_EQ(x.data<float>()[i], static_cast<float>(file[i])) << "batch " << batch << " element " << i;
  }
}

TEST(StreamedRows, AShuffledFashionMnistBatchIsPinnedReadFromTheFileOrItsCopy) {
  Graph g = GraphBuilder().input("x", DType::Float32, {-1, 784}).node("Identity", {"x"}, {"o"}).output("o").build();
  ScratchDir dir;
  const char* before = std::getenv("GRIST_CACHE_DIR");
  const std::string saved = before ? before : "";
  setenv("GRIST_CACHE_DIR", dir.path("cache").c_str(), 1);
  for (const char* from : {"the .gz file", "the cached copy"}) {
    auto shuffled = Dataset::create(fashion(true), g, 100, 5);
    ASSERT_TRUE(shuffled) << shuffled.message();
    Batch b;
    ASSERT_TRUE(shuffled->next_batch(b));
    // Pinned from main at 76db742, whose data set read every row before the first batch: the pixels' sum, and
    // their sum weighted by position (mod 997), which a row out of place changes.
    double sum = 0, weighted = 0;
    int64_t i = 0;
    for (float v : b.at("x").span<float>()) {
      sum += v;
      weighted += v * static_cast<double>(i++ % 997);
    }
    EXPECT_EQ(sum, 5958616.0) << from;
    EXPECT_EQ(weighted, 2894009633.0) << from;
    EXPECT_EQ(shuffled->stored_bytes(), size_t{47040000});
  }
  EXPECT_EQ(files_in(dir.path("cache")).size(), 1u);
  if (before) setenv("GRIST_CACHE_DIR", saved.c_str(), 1);
  else unsetenv("GRIST_CACHE_DIR");
}

}  // namespace
}  // namespace grist
