// Store: reader slots of dead processes, read-only opens, clear errors.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "engine/window_records.h"

#include <cstdlib>
#include <string>

#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/store.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// Reader slots in the environment in dir whose process is pid.
int SlotsOf(const std::string& dir, pid_t pid) {
  MDB_env* env = nullptr;
  EXPECT_EQ(mdb_env_create(&env), MDB_SUCCESS);
  EXPECT_EQ(mdb_env_set_maxdbs(env, kNumTables), MDB_SUCCESS);
  EXPECT_EQ(mdb_env_open(env, dir.c_str(), MDB_RDONLY | MDB_NOTLS, 0644), MDB_SUCCESS);
  struct Ctx {
    std::string text;
  } ctx;
  mdb_reader_list(
      env,
      [](const char* msg, void* c) {
        static_cast<Ctx*>(c)->text += msg;
        return 0;
      },
      &ctx);
  mdb_env_close(env);
  int n = 0;
  const std::string needle = std::to_string(pid) + " ";
  for (size_t pos = 0; (pos = ctx.text.find('\n', pos)) != std::string::npos; ++pos) {
    const size_t start = ctx.text.find_first_not_of(' ', pos + 1);
    if (start != std::string::npos && ctx.text.compare(start, needle.size(), needle) == 0) ++n;
  }
  return n;
}

// Broke: nothing called mdb_reader_check, so the reader slot of a process
// killed inside a read transaction stayed taken (and pinned its pages)
// until every process closed the environment.
TEST(Store, OpenClearsReaderSlotsOfDeadProcesses) {
  TempDir d;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", RootConfig()));
  const std::string state = filenames::StateDir(d / "r");
  // A process that keeps the environment open, so that no open below is
  // the first one (the first open of an environment resets its reader
  // table anyway).
  int ready[2], quit[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(quit), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    ::close(ready[0]);
    ::close(quit[1]);
    std::unique_ptr<Store> store;
    if (!Store::OpenReadOnly(state, &store).ok()) ::_exit(1);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    while (::read(quit[0], &c, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(quit[0]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const pid_t child = ::fork();
  if (child == 0) {
    std::unique_ptr<Store> store;
    std::unique_ptr<Txn> txn;
    if (!Store::OpenReadOnly(state, &store).ok() || !store->BeginRead(&txn).ok()) ::_exit(1);
    ::_exit(0);  // dies holding the read transaction, as after kill -9
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(SlotsOf(state, child), 1) << "the dead reader's slot is there to be cleared";
  {
    std::unique_ptr<Store> store;
    ASSERT_STATUS_OK(Store::OpenReadOnly(state, &store));
  }
  EXPECT_EQ(SlotsOf(state, child), 0);
  ::close(quit[1]);
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Store, ReadOnlyOpenRefusesWrites) {
  TempDir d;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", RootConfig()));
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), d / "r", Root::Access::kReadOnly, &root));
  std::unique_ptr<Txn> txn;
  EXPECT_FALSE(root->store()->BeginWrite(&txn).ok());
  ASSERT_STATUS_OK(root->store()->BeginRead(&txn));
}

TEST(Store, LmdbErrorsNameTheDirectory) {
  EXPECT_EQ(LmdbStatus(ENOSPC, "commit", "/x/state").message(), "lmdb commit /x/state: no space left on device");
  EXPECT_EQ(LmdbStatus(EACCES, "open", "/x/state").message(), "lmdb open /x/state: permission denied");
  EXPECT_EQ(LmdbStatus(EROFS, "open", "/x/state").message(), "lmdb open /x/state: read-only file system");
}

// Broke: with a small `ulimit -v` init failed on LMDB's map reservation
// ("cannot map 256 GiB of address space for the state"). The map now
// follows RLIMIT_AS and grows when full: init and run work under the limit.
TEST(Store, InitAndRunUnderASmallAddressSpaceLimit) {
#if defined(SNAPSINK_SANITIZED)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start: no binary of this build runs "
                  "under ulimit -v";
#endif
  TempDir d;
  std::string events;
  for (int i = 0; i < 300; ++i) events += EventLine().Seq(i).Ts(i * 60000).Key("k" + std::to_string(i % 7)).Value(1).Line();
  WriteFile(d / "in", events);
  const std::string bin = SNAPSINK_BINARY;
  const std::string cmd = "ulimit -v 8000000 && '" + bin + "' init '" + d / "r" + "' && '" + bin + "' run '" + d / "r" +
                          "' '" + d / "in" + "' --final 2>'" + d / "err" + "' >/dev/null";
  const int status = std::system(("bash -c \"" + cmd + "\"").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << ReadFile(d / "err");
  RunResult v = Snapsink({"verify", d / "r"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Events with n distinct keys over a few windows, producer p.
std::string ManyKeys(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += EventLine().Seq(i).Ts(int64_t{i % 5} * 3600000).Metric("orders")
               .Key("customer-" + std::to_string(i) + "-0123456789abcdef0123456789abcdef").Value(i % 100).Line();
  }
  return out;
}

// A map of 1 MiB grows several times while a run ingests (both before a
// transaction and when a batch met MDB_MAP_FULL, then redone), under the
// address-space limit; the result is the run's without growth, byte for
// byte; a reader in this process that opened the environment while it was
// small adopts the grown map (MDB_MAP_RESIZED) and reads on.
TEST(Store, TheMapGrowsWhenFullAndReadersFollow) {
#if defined(SNAPSINK_SANITIZED)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start: no binary of this build runs "
                  "under ulimit -v";
#endif
  TempDir d;
  WriteFile(d / "a", ManyKeys(20000));
  WriteFile(d / "b", ManyKeys(80000).substr(ManyKeys(20000).size()));
  ASSERT_EQ(Snapsink({"init", d / "clean"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", d / "clean", d / "a"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", d / "clean", d / "b", "--final"}).exit_code, 0);

  const std::string bin = SNAPSINK_BINARY;
  auto limited = [&](const std::string& args) {
    const std::string cmd = "ulimit -v 8000000 && SNAPSINK_LMDB_MAP_BYTES=1048576 '" + bin + "' " + args + " 2>>'" +
                            d / "err" + "' >/dev/null";
    const int status = std::system(("bash -c \"" + cmd + "\"").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(limited("init '" + d / "r" + "'"), 0) << ReadFile(d / "err");
  ASSERT_EQ(limited("run '" + d / "r" + "' '" + d / "a" + "'"), 0) << ReadFile(d / "err");
  const std::string state = filenames::StateDir(d / "r");
  ASSERT_EQ(::setenv("SNAPSINK_LMDB_MAP_BYTES", "1048576", 1), 0);
  std::unique_ptr<Store> reader;
  Status opened = Store::OpenReadOnly(state, &reader);
  ::unsetenv("SNAPSINK_LMDB_MAP_BYTES");
  ASSERT_STATUS_OK(opened);
  const uint64_t small = reader->map_bytes();
  ASSERT_EQ(limited("run '" + d / "r" + "' '" + d / "b" + "' --final"), 0) << ReadFile(d / "err");
  uint64_t data = 0;
  ASSERT_STATUS_OK(Env::Default()->GetFileSize(filenames::LmdbDataFile(state), &data));
  EXPECT_GT(data, uint64_t{4} << 20) << "the map of 1 MiB should have grown several times";
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(reader->BeginRead(&txn));
  // Every key is there, in the base records or the runs (engine/window_records_runs.h).
  std::vector<int64_t> windows;
  ASSERT_STATUS_OK(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view) {
    windows.push_back(codec::DecodeWindowKey(k));
    return true;
  }));
  uint64_t entries = 0;
  for (int64_t w : windows) {
    ASSERT_STATUS_OK(ScanWindowAggregates(txn.get(), w, [&](const std::string&, std::string_view, const Aggregate&) {
      ++entries;
      return Status::OK();
    }));
  }
  EXPECT_EQ(entries, 80000u);
  EXPECT_GT(reader->map_bytes(), small);
  txn.reset();
  reader.reset();
  EXPECT_EQ(TreeDiff(TreeContents(d / "r"), TreeContents(d / "clean")), "");
  EXPECT_EQ(StateDump(d / "r"), StateDump(d / "clean"));
  RunResult v = Snapsink({"verify", d / "r"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

}  // namespace
}  // namespace snapsink::testing
