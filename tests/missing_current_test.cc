// A published root whose CURRENT was deleted is damage, not a root with
// nothing published: status, query, serve and publish each say that CURRENT
// is missing while the state records generation G, with the line that
// restores it (publish/current_file.h CheckCurrentPresent). Publish refuses
// rather than rewriting it, so the operator learns of the damage.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

class MissingCurrent : public ServeFixture {
 protected:
  void SetUp() override {
    ServeFixture::SetUp();
    PublishRound(0);
    PublishRound(1);  // generation 2
    good_ = ReadFile(root_ + "/CURRENT");
    ASSERT_EQ(good_.substr(0, 2), "2 ");
    query_ = Snapsink({"query", root_, "--format", "json"}).out;
    ASSERT_EQ(::remove((root_ + "/CURRENT").c_str()), 0);
  }
  // The message every reader and writer gives.
  void ExpectNamed(const RunResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 10) << what << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(root_ + "/CURRENT is missing, but the state records generation 2 as published"),
              std::string::npos)
        << what << ": " << r.err;
    EXPECT_NE(r.err.find("printf '" + good_.substr(0, good_.size() - 1) + "\\n' > " + root_ + "/CURRENT"),
              std::string::npos)
        << what << ": " << r.err;
  }
  std::string good_, query_;
};

TEST_F(MissingCurrent, StatusQueryAndPublishSayItWithTheFix) {
  ExpectNamed(Snapsink({"status", root_}), "status");
  ExpectNamed(Snapsink({"status", root_, "--json"}), "status --json");
  RunResult q = Snapsink({"query", root_, "--format", "json"});
  ExpectNamed(q, "query");
  EXPECT_EQ(q.out, "");  // no rows that look like an empty root
  // publish refuses and writes nothing back.
  ExpectNamed(Snapsink({"publish", root_}), "publish");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/CURRENT"));
  ExpectNamed(Snapsink({"gc", root_}), "gc");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/CURRENT"));
  // A given generation is still served: it does not depend on CURRENT.
  EXPECT_EQ(Snapsink({"query", root_, "--generation", "2", "--format", "json"}).exit_code, 0);

  // The fix, run as the message prints it, restores the root.
  RunResult st = Snapsink({"status", root_});
  const size_t at = st.err.find("printf ");
  const size_t end = st.err.find(" && snapsink verify");
  ASSERT_NE(at, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  ASSERT_EQ(std::system(("sh -c \"" + st.err.substr(at, end - at) + "\"").c_str()), 0);
  EXPECT_EQ(ReadFile(root_ + "/CURRENT"), good_);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
  EXPECT_EQ(Snapsink({"query", root_, "--format", "json"}).out, query_);
}

TEST_F(MissingCurrent, ManifestGoneTooNamesABackup) {
  ASSERT_EQ(::remove((root_ + "/manifests/2").c_str()), 0);
  RunResult r = Snapsink({"query", root_});
  EXPECT_EQ(r.exit_code, 10) << r.err;
  EXPECT_NE(r.err.find("manifests/2 is missing or does not hash to what the state records"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("restore " + root_ + " from a backup"), std::string::npos) << r.err;
}

TEST_F(MissingCurrent, ServeAnswers503WithTheReason) {
  Server server = StartServe(root_);
  ASSERT_NE(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  for (const char* path : {"/healthz", "/v1/query"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 503) << path << ": " << res->body;
    EXPECT_NE(res->body.find("CURRENT is missing, but the state records generation 2"), std::string::npos)
        << path << ": " << res->body;
  }
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("CURRENT is missing"), std::string::npos);
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
