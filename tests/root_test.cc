// Root: init, open, the writer lock and the format check.
#include <gtest/gtest.h>
#include <unistd.h>

#include "engine/filenames.h"
#include "engine/root.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

TEST(Root, InitStoresSettingsAndOpenReadsThem) {
  TempDir d;
  RootConfig c;
  c.window_ms = 15 * 60 * 1000;
  c.lateness_ms = 0;
  c.on_gap = OnGap::kStop;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", c));
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), d / "r", Root::Access::kUnlocked, &root));
  EXPECT_EQ(root->config().window_ms, c.window_ms);
  EXPECT_EQ(root->config().lateness_ms, 0);
  EXPECT_EQ(root->config().on_gap, OnGap::kStop);
}

TEST(Root, InitTwiceIsRefused) {
  TempDir d;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", RootConfig()));
  Status s = Root::Init(Env::Default(), d / "r", RootConfig());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("already a snapsink root"), std::string::npos);
}

TEST(Root, NotARootIsACleanError) {
  TempDir d;
  std::unique_ptr<Root> root;
  Status s = Root::Open(Env::Default(), d.path(), Root::Access::kUnlocked, &root);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find("is not a snapsink root"), std::string::npos) << s.message();
  RunResult r = Snapsink({"ingest", d.path(), "/dev/null"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a snapsink root"), std::string::npos) << r.err;
}

TEST(Root, NewerFormatIsRefused) {
  TempDir d;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", RootConfig()));
  {
    std::unique_ptr<Store> store;
    ASSERT_STATUS_OK(Store::Open(filenames::StateDir(d / "r"), false, &store));
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    ASSERT_STATUS_OK(Root::PutMetaU64(txn.get(), meta::kFormat, kNewestFormat + 1));
    ASSERT_STATUS_OK(txn->Commit());
  }
  RunResult r = Snapsink({"inspect", d / "r", "sources"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("newer snapsink"), std::string::npos) << r.err;
}

TEST(Root, SecondWriterIsLockedOutAndToldTheHolder) {
  TempDir d;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), d / "r", RootConfig()));
  std::unique_ptr<Root> writer;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), d / "r", Root::Access::kWriter, &writer));
  // In this process (open-file-description locks exclude the same process too)…
  std::unique_ptr<FileLock> lock;
  EXPECT_EQ(LockRoot(Env::Default(), d / "r", &lock).code(), Status::Code::kLocked);
  // …and from another one, with exit status 5 and the holder's pid.
  RunResult r = Snapsink({"seal", d / "r"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("locked by another writer (pid " + std::to_string(::getpid()) + ")"), std::string::npos) << r.err;
  // Readers are not blocked.
  EXPECT_EQ(Snapsink({"inspect", d / "r", "windows"}).exit_code, 0);
  writer.reset();
  EXPECT_EQ(Snapsink({"seal", d / "r"}).exit_code, 0);
}

}  // namespace
}  // namespace snapsink::testing
