// Store: reader slots of dead processes, read-only opens, clear errors.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

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
  ASSERT_TRUE(Root::Init(Env::Default(), d / "r", RootConfig()).ok());
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
    ASSERT_TRUE(Store::OpenReadOnly(state, &store).ok());
  }
  EXPECT_EQ(SlotsOf(state, child), 0);
  ::close(quit[1]);
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Store, ReadOnlyOpenRefusesWrites) {
  TempDir d;
  ASSERT_TRUE(Root::Init(Env::Default(), d / "r", RootConfig()).ok());
  std::unique_ptr<Root> root;
  ASSERT_TRUE(Root::OpenReadOnly(Env::Default(), d / "r", &root).ok());
  std::unique_ptr<Txn> txn;
  EXPECT_FALSE(root->store()->BeginWrite(&txn).ok());
  ASSERT_TRUE(root->store()->BeginRead(&txn).ok());
}

TEST(Store, LmdbErrorsNameTheDirectory) {
  EXPECT_EQ(LmdbStatus(ENOSPC, "commit", "/x/state").message(), "lmdb commit /x/state: no space left on device");
  EXPECT_EQ(LmdbStatus(EACCES, "open", "/x/state").message(), "lmdb open /x/state: permission denied");
  EXPECT_EQ(LmdbStatus(EROFS, "open", "/x/state").message(), "lmdb open /x/state: read-only file system");
}

// Broke: with a small `ulimit -v` init failed on LMDB's map reservation and
// left a root that nothing could open or init again.
TEST(Store, InitUnderASmallAddressSpaceLimitFailsCleanly) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space at start: no binary of this build runs "
                  "under ulimit -v";
#endif
  TempDir d;
  const std::string cmd = "ulimit -v 2000000 && exec '" + std::string(SNAPSINK_BINARY) + "' init '" + d / "r" +
                          "' 2>'" + d / "err" + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << ReadFile(d / "err");
  EXPECT_NE(ReadFile(d / "err").find("ulimit -v"), std::string::npos) << ReadFile(d / "err");
  EXPECT_FALSE(Env::Default()->FileExists(d / "r"));
  EXPECT_EQ(Snapsink({"init", d / "r"}).exit_code, 0);
}

}  // namespace
}  // namespace snapsink::testing
