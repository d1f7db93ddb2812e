// The cache folder of uncompressed IDX copies (data/row_cache.h) does not grow without end: a replaced
// source's old copy, dead processes' partial copies and the least recently used copies beyond the limit go;
// the copy just kept, partial copies of running processes and files the cache did not write stay.
#include "data/row_cache.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/test_files.h"

namespace grist {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// A copy of `bytes` bytes, last used `age` ago.
std::string put(const ScratchDir& dir, const std::string& name, size_t bytes, std::chrono::seconds age) {
  const std::string path = dir.write(name, std::string(bytes, 'x'));
  fs::last_write_time(path, fs::file_time_type::clock::now() - age);
  return path;
}

TEST(RowCache, ACopyIsNamedBySourceAndKeyAndChangesWhenTheSourceIsReplaced) {
  ScratchDir dir;
  const std::string src = dir.write("train-images-idx3-ubyte.gz", "one");
  const std::string a = row_cache_file_for(src, dir.path("cache"));
  EXPECT_EQ(fs::path(a).parent_path(), fs::path(dir.path("cache")) / "idx-rows");
  const std::string name = fs::path(a).filename().string();
  ASSERT_EQ(name.size(), std::string("train-images-idx3-ubyte.gz").size() + 1 + 8 + 1 + 16) << name;
  dir.write("train-images-idx3-ubyte.gz.new", "other");
  fs::rename(dir.path("train-images-idx3-ubyte.gz.new"), src);
  const std::string b = row_cache_file_for(src, dir.path("cache"));
  EXPECT_NE(a, b);
  // Same source path, so the same "<name>-<path hash>-" prefix: tidying knows b replaces a.
  const std::string bn = fs::path(b).filename().string();
  EXPECT_EQ(name.substr(0, name.size() - 16), bn.substr(0, bn.size() - 16));
  EXPECT_EQ(row_cache_file_for(dir.path("missing.gz"), dir.path("cache")), "");
}

// A link names the file it points to: one copy, not two that each tidy the other away as "the same source
// under an older key".
TEST(RowCache, ALinkAndItsFileShareOneCopy) {
  ScratchDir dir;
  const std::string src = dir.write("train-labels-idx1-ubyte.gz", "labels");
  fs::create_directory(dir.path("links"));
  fs::create_symlink(src, dir.path("links/labels.gz"));
  const std::string direct = row_cache_file_for(src, dir.path("cache"));
  ASSERT_FALSE(direct.empty());
  EXPECT_EQ(row_cache_file_for(dir.path("links/labels.gz"), dir.path("cache")), direct);
  EXPECT_EQ(row_cache_file_for(dir.path("links/../train-labels-idx1-ubyte.gz"), dir.path("cache")), direct);
}

TEST(RowCache, TidyingRemovesStaleCopiesAndDeadPartialsOnly) {
  ScratchDir dir;
  using std::chrono::seconds;
  const std::string kept = put(dir, "rows.gz-0000abcd-1111111111111111", 100, seconds(0));
  put(dir, "rows.gz-0000abcd-2222222222222222", 100, seconds(10));          // the same source, another key
  put(dir, "rows.gz-3333333333333333", 100, seconds(10));                   // not a name idx-rows/ holds
  put(dir, "other.gz-0000beef-4444444444444444", 100, seconds(10));         // another source: stays
  put(dir, "rows.gz-0000abcd-5555555555555555.partial-999999999-0", 50, seconds(7200));  // no such process
  const std::string recent = "rows.gz-0000abcd-7777777777777777.partial-999999998-0";
  put(dir, recent, 50, seconds(10));  // no such process here, but recent: perhaps another machine's
  const std::string live = "rows.gz-0000abcd-6666666666666666.partial-" + std::to_string(getpid()) + "-0";
  put(dir, live, 50, seconds(10));                                           // this process: still writing
  put(dir, "notes.txt", 10, seconds(10));                                    // not the cache's: stays
  tidy_row_cache(kept, uint64_t{1} << 30);
  EXPECT_EQ(names_in(fs::path(kept).parent_path().string()),
            (std::vector<std::string>{"notes.txt", "other.gz-0000beef-4444444444444444",
                                      "rows.gz-0000abcd-1111111111111111", live, recent,
                                      "rows.gz-3333333333333333"}));
}

TEST(RowCache, TidyingKeepsTheFolderUnderItsLimitDroppingTheLeastRecentlyUsed) {
  ScratchDir dir;
  using std::chrono::seconds;
  put(dir, "a.gz-00000001-1111111111111111", 400, seconds(300));  // oldest
  put(dir, "b.gz-00000002-2222222222222222", 400, seconds(200));
  put(dir, "c.gz-00000003-3333333333333333", 400, seconds(100));
  const std::string kept = put(dir, "d.gz-00000004-4444444444444444", 400, seconds(500));  // just written
  tidy_row_cache(kept, 1000);  // 1600 bytes held: a and b go, c and the new copy stay
  EXPECT_EQ(names_in(fs::path(kept).parent_path().string()),
            (std::vector<std::string>{"c.gz-00000003-3333333333333333", "d.gz-00000004-4444444444444444"}));
  // A copy read again moves to the back of the queue.
  touch_row_cache_file(dir.path("c.gz-00000003-3333333333333333"));
  const std::string e = put(dir, "e.gz-00000005-5555555555555555", 400, seconds(0));
  tidy_row_cache(e, 800);
  EXPECT_EQ(names_in(fs::path(kept).parent_path().string()),
            (std::vector<std::string>{"c.gz-00000003-3333333333333333", "e.gz-00000005-5555555555555555"}));
  // Even a limit smaller than the new copy keeps the new copy.
  tidy_row_cache(e, 1);
  EXPECT_EQ(names_in(fs::path(kept).parent_path().string()),
            (std::vector<std::string>{"e.gz-00000005-5555555555555555"}));
}

TEST(RowCache, TheLimitComesFromTheEnvironment) {
  setenv("GRIST_CACHE_MAX_MB", "3", 1);
  EXPECT_EQ(row_cache_limit_bytes(), uint64_t{3} << 20);
  setenv("GRIST_CACHE_MAX_MB", "3x", 1);  // not a number: the default
  EXPECT_EQ(row_cache_limit_bytes(), uint64_t{2048} << 20);
  unsetenv("GRIST_CACHE_MAX_MB");
  EXPECT_EQ(row_cache_limit_bytes(), uint64_t{2048} << 20);
}

}  // namespace
}  // namespace grist
