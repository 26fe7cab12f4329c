// engine/object_cache.h: least recently used entries go first past the
// capacity; a second process opening the directory finds the entries; a
// temporary file whose writer is gone is removed, one whose writer runs is
// left; an entry that fails its check is never answered.
#include "engine/object_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace snapsink {
namespace {

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(ObjectCache, TheLeastRecentlyUsedEntryGoesFirstPastTheCapacity) {
  testing::TempDir dir;
  const std::string data(100, 'x');  // an entry of a one-letter name is 129 bytes
  std::unique_ptr<ObjectCache> cache;
  ASSERT_TRUE(ObjectCache::Open(dir.path(), 300, &cache).ok());
  cache->Put("a", data);
  cache->Put("b", data);
  std::string out;
  // File times tick by the kernel's clock (a few ms): apart, so that the
  // second cache below can order them.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(cache->Get("a", &out));  // a is used after b
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  cache->Put("c", data);               // past 300: b goes
  EXPECT_TRUE(cache->Get("a", &out));
  EXPECT_EQ(out, data);
  EXPECT_FALSE(cache->Get("b", &out));
  EXPECT_TRUE(cache->Get("c", &out));
  EXPECT_EQ(Files(dir.path()).size(), 2u);
  EXPECT_LE(cache->bytes(), 300u);

  // Another process (here another cache on the directory) finds them, and
  // orders them by their files' times: c was used last, so a goes next.
  std::unique_ptr<ObjectCache> again;
  ASSERT_TRUE(ObjectCache::Open(dir.path(), 300, &again).ok());
  EXPECT_EQ(again->bytes(), 258u);
  again->Put("d", data);
  EXPECT_FALSE(again->Get("a", &out));
  EXPECT_TRUE(again->Get("c", &out));
  EXPECT_TRUE(again->Get("d", &out));
}

TEST(ObjectCache, ATemporaryFileIsRemovedOnceItsWriterIsGoneAndADamagedEntryIsNeverAnswered) {
  testing::TempDir dir;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string left_by_dead = "0123456789abcdef.tmp." + std::to_string(dead) + ".1";
  const std::string being_written = "0123456789abcdef.tmp." + std::to_string(::getpid()) + ".1";
  std::ofstream(dir.path() + "/" + left_by_dead) << "half";
  std::ofstream(dir.path() + "/" + being_written) << "half";
  std::unique_ptr<ObjectCache> cache;
  ASSERT_TRUE(ObjectCache::Open(dir.path(), 1 << 20, &cache).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + left_by_dead));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/" + being_written));
  std::filesystem::remove(dir.path() + "/" + being_written);

  cache->Put("block", std::string(64, 'y'));
  const std::vector<std::string> files = Files(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const std::string entry = dir.path() + "/" + files[0];
  std::string bytes;
  {
    std::ifstream in(entry, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 1] = 'z';  // as many bytes, one of them other
  std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;
  std::string out;
  EXPECT_FALSE(cache->Get("block", &out));
  EXPECT_FALSE(std::filesystem::exists(entry)) << "a damaged entry is removed";
  EXPECT_EQ(cache->misses(), 1u);
  EXPECT_EQ(cache->hits(), 0u);

  std::unique_ptr<ObjectCache> other;
  const Status s = ObjectCache::Open("/proc/no-such-dir/cache", 1 << 20, &other);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("--cache-dir /proc/no-such-dir/cache: cannot be made"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace snapsink
