// Bounded open files and block memory however many windows a root has
// (snapshot/table_cache.h): the TableCache and BlockCache on their own, a
// Reader that touches more windows than the cache holds (and a pinned
// generation read again after its files were closed and gc ran), and, with
// `ulimit -n 64`, `query` and `serve` over a root of 5,000 windows.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/env.h"
#include "publish/generation_reader.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/table_cache.h"
#include "snapsink/sink.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

int OpenFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') n++;
  }
  ::closedir(d);
  return n - 1;  // the directory stream itself
}



// A root with `windows` one-minute windows, one row (m, k) each with value
// i + 1 in window i, published in one generation by one `run --final`.
void MakeRoot(const std::string& root, const std::string& input, int windows) {
  std::string lines;
  for (int i = 0; i < windows; i++) {
    lines += EventLine().Seq(i).Ts(kBase + int64_t{i} * 60000).Metric("m").Key("k").Value(i + 1).Line();
  }
  WriteFile(input, lines);
  RunResult r = Snapsink({"init", root, "--window", "1m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Writes a snapshot file with rows ("m", "k<i>") i < n and opens it.
void WriteSnapshot(const std::string& path, int n) {
  std::unique_ptr<SnapshotWriter> w;
  ASSERT_STATUS_OK(SnapshotWriter::Open(Env::Default(), path, &w));
  for (int i = 0; i < n; i++) {
    char key[16];
    std::snprintf(key, sizeof(key), "k%05d", i);
    ASSERT_STATUS_OK(w->Add(Row{"m", key, 1, i, 1}));
  }
  SnapshotFileInfo info;
  ASSERT_STATUS_OK(w->Finish(&info));
}

TEST(TableCache, KeepsAtMostMaxOpenFilesAndNeverClosesOneInUse) {
  TempDir dir;
  constexpr int kFiles = 20;
  for (int i = 0; i < kFiles; i++) WriteSnapshot(dir / std::to_string(i), 10 + i);
  TableCache cache(4);
  const int before = OpenFds();
  std::shared_ptr<const SnapshotReader> held;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < kFiles; i++) {
      const std::string path = dir / std::to_string(i);
      std::shared_ptr<const SnapshotReader> r;
      ASSERT_STATUS_OK(cache.Find(Env::Default(), path, path + TableCache::FileIdentity(path), &r));
      EXPECT_EQ(r->rows(), static_cast<uint64_t>(10 + i));
      Row row;
      ASSERT_STATUS_OK(r->Get("m", "k00009", &row));
      EXPECT_EQ(row.sum_micros, 9);
      if (i == 0 && round == 0) held = r;
      EXPECT_LE(cache.cached_files(), 4u);
      // The held file (in use) stays open beside at most 4 cached ones.
      EXPECT_LE(OpenFds() - before, 5 + 1);
    }
  }
  // The held reader was evicted from the cache but still works.
  Row row;
  ASSERT_STATUS_OK(held->Get("m", "k00003", &row));
  EXPECT_EQ(row.sum_micros, 3);
  held.reset();
  cache.SetMaxOpenFiles(1);
  EXPECT_EQ(cache.cached_files(), 1u);
  EXPECT_LE(OpenFds() - before, 1);
}

TEST(TableCache, DropRemovedLetsGoOfRemovedFilesOnly) {
  TempDir dir;
  for (int i = 0; i < 3; i++) WriteSnapshot(dir / std::to_string(i), 10);
  TableCache cache(8);
  std::shared_ptr<const SnapshotReader> held;
  for (int i = 0; i < 3; i++) {
    const std::string path = dir / std::to_string(i);
    std::shared_ptr<const SnapshotReader> r;
    ASSERT_STATUS_OK(cache.Find(Env::Default(), path, path, &r));
    if (i == 0) held = r;
  }
  ASSERT_EQ(cache.cached_files(), 3u);
  ASSERT_EQ(::unlink((dir / "0").c_str()), 0);
  ASSERT_EQ(::unlink((dir / "1").c_str()), 0);
  const int before = OpenFds();
  EXPECT_EQ(cache.DropRemoved(), 2u);
  EXPECT_EQ(cache.cached_files(), 1u);
  EXPECT_EQ(OpenFds(), before - 1);  // "1" closed; "0" is held, closed when let go
  Row row;
  ASSERT_STATUS_OK(held->Get("m", "k00003", &row));
  held.reset();
  EXPECT_EQ(OpenFds(), before - 2);
  EXPECT_EQ(cache.DropRemoved(/*at_most_every_second=*/true), 0u);  // it just ran
}

// Snapshot files of this process that are deleted but still open.
int DeletedSnapshotFdsOfThisProcess() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (struct dirent* e = ::readdir(d)) {
    char target[4096];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t len = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (len <= 0) continue;
    const std::string t(target, static_cast<size_t>(len));
    n += t.find("/snapshots/") != std::string::npos && t.size() > 10 && t.substr(t.size() - 10) == " (deleted)";
  }
  ::closedir(d);
  return n;
}

// gc in the process that read the files (`run --follow`, an embedding
// program) lets go of those it removed: their disk space comes back.
TEST(TableCache, GcInTheReadingProcessClosesTheFilesItRemoved) {
  TempDir dir;
  const std::string root = dir / "root", input = dir / "in.ndjson";
  MakeRoot(root, input, 3);
  {  // reads every window: the process's cache opens their files
    std::unique_ptr<Reader> r;
    ASSERT_STATUS_OK(Reader::Open(Env::Default(), root, 0, &r));
    for (const GenerationEntry& e : r->windows()) ASSERT_STATUS_OK(r->Scan(e.window_ms, nullptr, [](const Row&) {}));
  }
  std::string more;
  for (int i = 0; i < 3; i++) {
    more += EventLine().Seq(100 + i).Ts(kBase + 2 * 60000 + 1 + i).Metric("m").Key("k").Value(1).Line();
  }
  AppendFile(input, more);
  RunResult run = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto sink = api::Sink::Open(root);
  ASSERT_STATUS_OK(sink);
  auto gc = (*sink)->Gc(1);
  ASSERT_STATUS_OK(gc);
  ASSERT_EQ(gc->removed_snapshots.size(), 1u);  // the last window's v1
  EXPECT_EQ(DeletedSnapshotFdsOfThisProcess(), 0);
}

TEST(TableCache, DefaultIsWellUnderTheProcessLimit) {
  struct rlimit rl;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  TableCache cache;
  EXPECT_LE(cache.max_open_files(), 500u);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= 32) {
    EXPECT_LE(cache.max_open_files(), rl.rlim_cur / 4);
  }
}

TEST(BlockCache, HoldsAtMostItsCapacityInBytes) {
  BlockCache cache(10000);
  const uint64_t id = cache.NewId();
  for (uint64_t b = 0; b < 100; b++) {
    cache.Insert(id, b, std::make_shared<const std::string>(1000, 'x'));
    EXPECT_LE(cache.bytes(), 10000u);
  }
  EXPECT_EQ(cache.Lookup(id, 0), nullptr);  // least recently used, dropped
  EXPECT_NE(cache.Lookup(id, 99), nullptr);
  cache.Erase(id, 100);
  EXPECT_EQ(cache.bytes(), 0u);
}

std::shared_ptr<const std::string> Block(size_t bytes, char c) { return std::make_shared<const std::string>(bytes, c); }

// CLOCK order, step by step: a hit sets a bit and moves nothing; the hand
// goes over the blocks in the order they entered (a block given a second
// chance re-enters behind the others), so here block 4, newer than 0 and 1
// but not looked up since, goes before them, where LRU would drop 1.
TEST(BlockCache, EvictsInClockOrder) {
  BlockCache cache(4000);
  const uint64_t id = cache.NewId();
  for (uint64_t b = 0; b < 4; b++) cache.Insert(id, b, Block(1000, static_cast<char>('0' + b)));
  ASSERT_NE(cache.Lookup(id, 1), nullptr);
  ASSERT_NE(cache.Lookup(id, 0), nullptr);
  auto present = [&] {
    std::string out;
    for (uint64_t b = 0; b < 8; b++) {
      if (cache.Lookup(id, b) != nullptr) out += static_cast<char>('0' + b);
    }
    return out;
  };
  // Clock [0* 1* 2 3]: 0 and 1 lose their bits and go round, 2 is dropped.
  cache.Insert(id, 4, Block(1000, '4'));
  EXPECT_EQ(cache.bytes(), 4000u);
  // Clock [3 4 0 1]: 3 is dropped.
  cache.Insert(id, 5, Block(1000, '5'));
  // Clock [4 0 1 5]: 4 is dropped (LRU would drop 1, looked up before 4 came).
  cache.Insert(id, 6, Block(1000, '6'));
  // present() looks every block up, setting bits: call it last.
  EXPECT_EQ(present(), "0156");
  std::shared_ptr<const std::string> zero = cache.Lookup(id, 0);
  ASSERT_NE(zero, nullptr);
  EXPECT_EQ(*zero, std::string(1000, '0'));
}

// A block read once (never looked up again) leaves before any block that
// is looked up again, however long ago that was: a scan of cold blocks
// through the cache does not push the hot ones out.
TEST(BlockCache, BlocksReadOnceLeaveBeforeBlocksReadAgain) {
  BlockCache cache(4000);
  const uint64_t id = cache.NewId();
  cache.Insert(id, 0, Block(1000, 'h'));
  cache.Insert(id, 1, Block(1000, 'h'));
  for (uint64_t b = 100; b < 200; b++) {
    ASSERT_NE(cache.Lookup(id, 0), nullptr);
    ASSERT_NE(cache.Lookup(id, 1), nullptr);
    cache.Insert(id, b, Block(1000, 'c'));
    EXPECT_LE(cache.bytes(), 4000u);
  }
  EXPECT_NE(cache.Lookup(id, 0), nullptr);
  EXPECT_NE(cache.Lookup(id, 1), nullptr);
  EXPECT_NE(cache.Lookup(id, 199), nullptr);  // the block just inserted stays
  EXPECT_EQ(cache.Lookup(id, 100), nullptr);
}

// A block larger than the cache is kept alone until the next insert; an
// erased or replaced block's old place in the clock is skipped.
TEST(BlockCache, OversizedReplacedAndErasedBlocks) {
  BlockCache cache(2000);
  const uint64_t a = cache.NewId(), b = cache.NewId();
  cache.Insert(a, 0, Block(1000, 'a'));
  cache.Insert(a, 0, Block(1500, 'A'));  // replaced: counted once
  EXPECT_EQ(cache.bytes(), 1500u);
  ASSERT_NE(cache.Lookup(a, 0), nullptr);
  EXPECT_EQ(*cache.Lookup(a, 0), std::string(1500, 'A'));
  cache.Insert(b, 0, Block(5000, 'b'));  // larger than the cache: alone
  EXPECT_EQ(cache.Lookup(a, 0), nullptr);
  EXPECT_NE(cache.Lookup(b, 0), nullptr);
  EXPECT_EQ(cache.bytes(), 5000u);
  cache.Insert(a, 1, Block(100, 'a'));
  EXPECT_EQ(cache.Lookup(b, 0), nullptr);
  EXPECT_EQ(cache.bytes(), 100u);
  for (int round = 0; round < 50; round++) {  // the clock's stale places are dropped
    for (uint64_t k = 0; k < 10; k++) cache.Insert(b, k, Block(10, 'b'));
    cache.Erase(b, 10);
  }
  EXPECT_EQ(cache.bytes(), 100u);
  EXPECT_NE(cache.Lookup(a, 1), nullptr);
  cache.SetCapacity(50);  // smaller than the one block left: it stays
  EXPECT_NE(cache.Lookup(a, 1), nullptr);
  // A replaced block enters the clock again, behind the others: its old
  // place is skipped, so the older block goes first.
  BlockCache two(2000);
  const uint64_t c = two.NewId();
  two.Insert(c, 0, Block(1000, 'x'));
  two.Insert(c, 1, Block(1000, 'y'));
  two.Insert(c, 0, Block(1000, 'z'));  // clock [0 (stale), 1, 0]
  two.Insert(c, 2, Block(1000, 'w'));
  EXPECT_EQ(two.Lookup(c, 1), nullptr);
  EXPECT_NE(two.Lookup(c, 0), nullptr);
  EXPECT_NE(two.Lookup(c, 2), nullptr);
}

// Threads look up (shared lock), insert and erase (exclusive) the same
// blocks at once: every block found is the one inserted under its key, and
// the cache ends within its capacity. (ASan/UBSan runs check the memory.)
TEST(BlockCache, ConcurrentLookupsGetTheirOwnBlocks) {
  BlockCache cache(16 * 500);
  const uint64_t id = cache.NewId();
  auto content = [](uint64_t k) { return std::string(500, static_cast<char>('a' + k % 26)) + std::to_string(k); };
  std::atomic<uint64_t> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(t + 1);
      for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const uint64_t k = x % 48;
        if (i % 1000 == 999) {
          cache.Erase(id, 4);
          continue;
        }
        std::shared_ptr<const std::string> got = cache.Lookup(id, k);
        if (got == nullptr) {
          cache.Insert(id, k, std::make_shared<const std::string>(content(k)));
        } else {
          hits++;
          if (*got != content(k)) wrong++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_LE(cache.bytes(), cache.capacity());
}

// A block inserted with its owner's slot is published through the slot while
// the cache holds it, and the slot is cleared when the cache drops it
// (evicted, erased or replaced by another slot's); the slot's bit is the
// block's CLOCK bit, so a lookup through the slot alone keeps it.
TEST(BlockCache, SlotFollowsItsBlock) {
  BlockCache cache(3000);
  const uint64_t id = cache.NewId();
  std::shared_mutex mu;
  CachedBlockSlot slots[5];
  for (CachedBlockSlot& s : slots) s.mu = &mu;
  for (uint64_t b = 0; b < 3; b++) cache.Insert(id, b, Block(1000, static_cast<char>('0' + b)), &slots[b]);
  ASSERT_NE(slots[0].data, nullptr);
  EXPECT_EQ(*slots[0].data, std::string(1000, '0'));
  slots[0].referenced.store(true);  // as SnapshotReader::Get marks a hit
  // Clock [0* 1 2]: 0 goes round, 1 is dropped and its slot cleared.
  cache.Insert(id, 3, Block(1000, '3'), &slots[3]);
  EXPECT_NE(slots[0].data, nullptr);
  EXPECT_EQ(slots[1].data, nullptr);
  EXPECT_EQ(cache.Lookup(id, 1), nullptr);
  EXPECT_NE(slots[2].data, nullptr);
  // Replaced under another slot: the first slot no longer names it.
  cache.Insert(id, 2, Block(1000, 'x'), &slots[4]);
  EXPECT_EQ(slots[2].data, nullptr);
  ASSERT_NE(slots[4].data, nullptr);
  EXPECT_EQ(*slots[4].data, std::string(1000, 'x'));
  cache.Erase(id, 5);
  for (const CachedBlockSlot& s : slots) EXPECT_EQ(s.data, nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
}

// Point lookups of several threads on one file while the process's block
// cache holds about one block: blocks come and go under the lookups (the
// cache clears a reader's slot as it drops the block), and every lookup
// still finds its row. (ASan/UBSan runs check the memory.)
TEST(BlockCache, LookupsThroughSlotsWhileBlocksAreEvicted) {
  TempDir dir;
  const std::string path = dir.path() + "/data";
  {
    std::unique_ptr<SnapshotWriter> w;
    SnapshotWriterOptions o;
    o.block_bytes = 512;  // many blocks
    ASSERT_STATUS_OK(SnapshotWriter::Open(Env::Default(), path, &w, o));
    for (int i = 0; i < 4000; i++) {
      char key[16];
      std::snprintf(key, sizeof(key), "k%05d", i);
      ASSERT_STATUS_OK(w->Add(Row{"m", key, 1, i, 1}));
    }
    SnapshotFileInfo info;
    ASSERT_STATUS_OK(w->Finish(&info));
  }
  std::unique_ptr<SnapshotReader> reader;
  ASSERT_STATUS_OK(SnapshotReader::Open(Env::Default(), path, &reader));
  ASSERT_GT(reader->blocks(), 20u);
  BlockCache* cache = BlockCache::Default();
  const size_t capacity = cache->capacity();
  cache->SetCapacity(1000);
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      uint64_t x = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(t + 1);
      Row row;
      for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const int k = static_cast<int>(x % 4000);
        char key[16];
        std::snprintf(key, sizeof(key), "k%05d", k);
        if (!reader->Get("m", key, &row).ok() || row.key != key || row.sum_micros != k) wrong++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_LE(cache->bytes(), 2000u);
  reader.reset();  // its blocks leave the cache with it
  cache->SetCapacity(capacity);
}

// A Reader whose generation has more windows than the cache holds files:
// the open files stay bounded, and after a newer generation and gc (which
// keeps the pinned one), every window read again (its file reopened) gives
// the pinned generation's rows.
TEST(TableCache, PinnedGenerationStaysCorrectWhenItsFilesAreReopened) {
  TempDir dir;
  const std::string root = dir / "root";
  constexpr int kWindows = 60;
  MakeRoot(root, dir / "in.ndjson", kWindows);
  TableCache* cache = TableCache::Default();
  cache->SetMaxOpenFiles(8);
  const int before = OpenFds();
  std::unique_ptr<Reader> reader;
  ASSERT_STATUS_OK(Reader::Open(Env::Default(), root, 0, &reader));
  ASSERT_EQ(reader->windows().size(), static_cast<size_t>(kWindows));
  auto check_all = [&] {
    for (int i = 0; i < kWindows; i++) {
      Row row;
      ASSERT_STATUS_OK(reader->Get(kBase + int64_t{i} * 60000, "m", "k", &row));
      EXPECT_EQ(row.sum_micros, int64_t{i + 1} * 1000000) << i;
      EXPECT_LE(OpenFds() - before, 1 + 8 + 1);  // the pin, the cache, slack
    }
  };
  check_all();
  // Generation 2 changes every window; gc drops what nothing pins.
  std::string more;
  for (int i = 0; i < kWindows; i++) {
    more += EventLine().Seq(kWindows + i).Ts(kBase + int64_t{i} * 60000).Metric("m").Key("k").Value(1000).Line();
  }
  AppendFile(dir / "in.ndjson", more);
  RunResult r = Snapsink({"run", root, dir / "in.ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"gc", root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  check_all();
  std::unique_ptr<Reader> now;
  ASSERT_STATUS_OK(Reader::Open(Env::Default(), root, 0, &now));
  EXPECT_EQ(now->generation(), 2u);
  Row row;
  ASSERT_STATUS_OK(now->Get(kBase, "m", "k", &row));
  EXPECT_EQ(row.sum_micros, 1001 * 1000000);
  cache->SetMaxOpenFiles(0);
}

// `ulimit -n 64` for the duration of a scope (for the processes it forks).
class FileLimit {
 public:
  explicit FileLimit(rlim_t n) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    struct rlimit rl = saved_;
    rl.rlim_cur = std::min(n, saved_.rlim_cur);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  ~FileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  struct rlimit saved_;
};

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  return out + "\nexit " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

// 5,000 windows, 64 descriptors: `query` through the binary and a `serve`
// query (and /healthz, which reads every block) that touch every window.
TEST(TableCache, FiveThousandWindowsUnderUlimit64) {
  FastDir dir;
  const std::string root = dir / "root";
  constexpr int kWindows = 5000;
  MakeRoot(root, dir / "in.ndjson", kWindows);

  const std::string out =
      Shell("bash -c 'ulimit -n 64 && exec \"$0\" query \"$1\" --metric m --key k --format csv' " +
            std::string(SNAPSINK_BINARY) + " " + root + " 2>&1");
  ASSERT_NE(out.find("\nexit 0"), std::string::npos) << out.substr(0, 2000);
  size_t rows = 0;
  for (char c : out) rows += c == '\n';
  EXPECT_EQ(rows, static_cast<size_t>(kWindows) + 1 /* header */ + 1 /* exit line */) << out.substr(0, 2000);
  EXPECT_NE(out.find(",5000"), std::string::npos);
  EXPECT_EQ(out.find("Too many open files"), std::string::npos);

  Server server;
  const int port = FreePort();
  {
    FileLimit limit(64);
    server.proc = SpawnSnapsink({"serve", root, "--listen", "127.0.0.1:" + std::to_string(port)});
  }
  server.port = port;
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(std::chrono::seconds(60));
  int health = 0;
  for (int i = 0; i < 600 && health != 200 && server.proc.Running(); i++) {
    auto res = c.Get("/healthz");
    if (res) health = res->status;
    if (health != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(health, 200);
  auto res = c.Get("/v1/query?metric=m&key=k&format=csv");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  size_t lines = 0;
  for (char ch : res->body) lines += ch == '\n';
  EXPECT_EQ(lines, static_cast<size_t>(kWindows) + 1);
  ::kill(server.proc.pid, SIGTERM);
  EXPECT_EQ(server.proc.Wait(), 0);
}

}  // namespace
}  // namespace snapsink::testing
