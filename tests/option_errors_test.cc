// A value out of range is refused once, by the layer that owns it: the
// library's message names the public field the caller set
// ("InitOptions::window_size_ms 0: must be greater than zero"), never a CLI flag;
// the binary names its flag for the same mistake ("--from is after --to").
#include <gtest/gtest.h>

#include <fstream>

#include "snapsink/utilities/serve.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

// The status's message, or a failure when it is OK.
template <typename T>
std::string Refusal(const T& status_or_result) {
  const Status& s = StatusOf(status_or_result);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.message();
  return s.message();
}

class OptionErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
    ASSERT_STATUS_OK(api::Sink::Create(root_, api::InitOptions{}));
    std::ofstream(in_) << EventLine().Seq(1).Ts("2026-10-21T10:05:00Z").Metric("orders").Key("eu").Value(1).Line()
                       << EventLine().Seq(2).Ts("2026-10-21T11:05:00Z").Metric("orders").Key("eu").Value(2).Line();
  }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(OptionErrorsTest, CreateNamesTheInitOptionsField) {
  api::InitOptions o;
  o.window_size_ms = 0;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "a", o)), "InitOptions::window_size_ms 0: must be greater than zero");
  o = api::InitOptions{};
  o.lateness_ms = -1;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "a", o)), "InitOptions::lateness_ms -1: must not be negative");
  o = api::InitOptions{};
  o.id_horizon_ms = -5;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "b", o)), "InitOptions::id_horizon_ms -5: must be greater than zero");
  o = api::InitOptions{};
  o.producer_retention_ms = -1;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "c", o)), "InitOptions::producer_retention_ms -1: must not be negative");
  o = api::InitOptions{};
  o.retain_ms = -1;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "d", o)), "InitOptions::retain_ms -1: must not be negative");
  o = api::InitOptions{};
  o.max_ahead_ms = -1;
  EXPECT_EQ(Refusal(api::Sink::Create(dir_ / "e", o)), "InitOptions::max_ahead_ms -1: must not be negative");
}

TEST_F(OptionErrorsTest, SinkCallsNameTheirParameterOrField) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  EXPECT_EQ(Refusal((*sink)->SetHistory(-1, std::nullopt)), "retain_ms -1: must not be negative");
  EXPECT_EQ(Refusal((*sink)->SetHistory(std::nullopt, -2)), "max_ahead_ms -2: must not be negative");
  EXPECT_EQ(Refusal((*sink)->RetireIdleProducers(0)), "idle_ms 0: must be greater than zero");
  EXPECT_EQ(Refusal((*sink)->AcceptSourceGap({"", 1, 2})), "SourceGapAcceptance::source is empty: name the source");
  api::FollowOptions f;
  f.inputs = {in_};
  f.poll_ms = 0;
  api::FollowStop stop;
  EXPECT_EQ(Refusal((*sink)->Follow(f, &stop)), "FollowOptions::poll_ms 0: must be greater than zero");
  f.poll_ms = 1000;
  f.keep_generations = 0;
  EXPECT_EQ(Refusal((*sink)->Follow(f, &stop)), "FollowOptions::keep_generations 0: must be at least 1");
}

TEST_F(OptionErrorsTest, BackfillNamesTheBackfillOptionsField) {
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  api::BackfillOptions b;
  b.files = {in_};
  api::BackfillResult r;
  EXPECT_EQ(Refusal(api::Backfill(**ro, b, &r)), "BackfillOptions::version 0: must be at least 1");
  b.version = 2;
  b.from = Ms("2026-10-21T11:00:00Z");
  b.to = Ms("2026-10-21T10:00:00Z");
  EXPECT_EQ(Refusal(api::Backfill(**ro, b, &r)), "BackfillOptions::from is after BackfillOptions::to");
  b.dry_run = true;
  EXPECT_EQ(Refusal(api::Backfill(**ro, b, &r)), "BackfillOptions::from is after BackfillOptions::to");
  b = api::BackfillOptions{};
  b.version = 2;
  b.files = {in_, in_};
  b.source = "archive";
  EXPECT_EQ(Refusal(api::Backfill(**ro, b, &r)),
            "BackfillOptions::source names one input; BackfillOptions::files must hold exactly one");
}

TEST_F(OptionErrorsTest, ServerNamesTheServeOptionsField) {
  api::ServeOptions o;
  o.listen = "127.0.0.1:0";
  o.threads = 0;
  EXPECT_EQ(Refusal(api::Server::Start(root_, o)), "ServeOptions::threads 0: must be at least 1");
  o.threads = 2;
  o.read_timeout_ms = -1;
  EXPECT_EQ(Refusal(api::Server::Start(root_, o)), "ServeOptions::read_timeout_ms -1: must be at least 1");
  o.read_timeout_ms = 1000;
  o.listen = "http";
  EXPECT_EQ(Refusal(api::Server::Start(root_, o)).rfind("ServeOptions::listen http: expected HOST:PORT", 0), 0u);
  o.listen = "127.0.0.1:0";
  o.tls_cert_file = dir_ / "a.crt";
  EXPECT_EQ(Refusal(api::Server::Start(root_, o)), "ServeOptions::tls_cert_file and ServeOptions::tls_key_file go together");
  o.tls_cert_file.clear();
  o.listen = "0.0.0.0:0";
  const std::string beyond = Refusal(api::Server::Start(root_, o));
  EXPECT_NE(beyond.find("needs ServeOptions::tls_cert_file, ServeOptions::tls_key_file and ServeOptions::token_file "
                        "(or ServeOptions::insecure"),
            std::string::npos)
      << beyond;
  EXPECT_EQ(beyond.find("--"), std::string::npos) << beyond;
}

// The binary keeps naming its flags for the same mistakes.
TEST_F(OptionErrorsTest, TheBinaryNamesItsFlags) {
  RunResult r = Snapsink({"backfill", root_, "--version", "2", "--from", "2026-10-21T11:00:00Z", "--to",
                          "2026-10-21T10:00:00Z", in_, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("snapsink: --from is after --to\n", 0), 0u) << r.err;
  r = Snapsink({"backfill", root_, "--version", "2", "--source", "archive", in_, in_, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("snapsink: --source names one input; give one FILE with it\n", 0), 0u) << r.err;
  r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--tls-cert", dir_ / "a.crt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("snapsink: --tls-cert and --tls-key go together\n", 0), 0u) << r.err;
  r = Snapsink({"serve", root_, "--listen", "0.0.0.0:0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs --tls-cert, --tls-key and --token-file (or --insecure to serve without them)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("Options::"), std::string::npos) << r.err;
  // run --serve reports its address as serve --listen does.
  r = Snapsink({"run", root_, in_, "--follow", "--serve", "http"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("snapsink: --listen http: expected HOST:PORT", 0), 0u) << r.err;
}

}  // namespace
}  // namespace snapsink::testing
