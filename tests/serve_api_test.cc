// The serving utility (include/snapsink/utilities/serve.h), in process:
// Start on a root or on an open writer's Sink, port 0, Stop from another
// thread, Wait; bad options refused before anything is bound; the status
// page of a handle; Reader::CurrentGeneration, which the server polls.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/query_text.h"
#include "snapsink/utilities/serve.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

std::string Line(uint64_t seq, const std::string& ts, const std::string& key) {
  return EventLine().Seq(seq).Ts(ts).Metric("orders").Key(key).Value(1).Line();
}

class ServeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
    ASSERT_STATUS_OK(api::Sink::Create(root_, api::InitOptions{}));
  }
  api::RunOptions RunFinal() {
    api::RunOptions run;
    run.ingest.files = {in_};
    run.final = true;
    return run;
  }
  api::ServeOptions AnyPort() {
    api::ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.threads = 2;
    return o;
  }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(ServeApiTest, StartServesQueriesAndStopsFromAnotherThread) {
  WriteFile(in_, Line(0, "2026-10-21T10:00:00Z", "eu"));
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Run(RunFinal()));
  }
  auto server = api::Server::Start(root_, AnyPort());
  ASSERT_STATUS_OK(server);
  ASSERT_GT((*server)->port(), 0);
  httplib::Client c("127.0.0.1", (*server)->port());
  auto r = c.Get("/v1/query?window=2026-10-21T10:00:00Z&metric=orders&key=eu");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Snapsink-Generation"), "1");
  EXPECT_NE(r->body.find("\"key\":\"eu\",\"count\":1"), std::string::npos) << r->body;
  std::thread stopper([&] { (*server)->Stop(); });
  EXPECT_STATUS_OK((*server)->Wait());
  stopper.join();
}

// An embedded server reads a window as `snapsink query` does (one parser,
// api::ParseQuery): its start in either form, a time inside it, or
// milliseconds; a bad one is a 400 naming the parameter and the forms.
TEST_F(ServeApiTest, AWindowIsReadAsTheCliReadsIt) {
  WriteFile(in_, Line(0, "2026-10-21T10:00:00Z", "eu"));
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Run(RunFinal()));
  }
  auto server = api::Server::Start(root_, AnyPort());
  ASSERT_STATUS_OK(server);
  httplib::Client c("127.0.0.1", (*server)->port());
  for (const char* w : {"2026-10-21T10:00:00Z", "20261021T100000Z", "2026-10-21T10:30:00Z",
                        "2026-10-21T12:30:00%2B02:00", "1792577000000"}) {
    for (const char* param : {"window", "from", "to"}) {
      auto r = c.Get(std::string("/v1/query?") + param + "=" + w);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200) << param << "=" << w << ": " << r->body;
      EXPECT_NE(r->body.find("\"window\":\"2026-10-21T10:00:00Z\""), std::string::npos)
          << param << "=" << w << ": " << r->body;
    }
  }
  auto r = c.Get("/v1/query?from=garbage");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "{\"error\":" + api::JsonQuote(std::string("from 'garbage': expected ") + api::kWindowForms) + "}\n");
  (*server)->Stop();
  EXPECT_STATUS_OK((*server)->Wait());
}

// A process that writes serves through its Sink (one LMDB environment) and
// the server follows the generations it publishes.
TEST_F(ServeApiTest, ServesBesideTheWriterThroughItsSink) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  auto server = api::Server::Start(**sink, AnyPort());
  ASSERT_STATUS_OK(server);
  httplib::Client c("127.0.0.1", (*server)->port());
  auto r = c.Get("/v1/query");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Snapsink-Generation"), "0");  // nothing published yet
  for (int g = 1; g <= 2; ++g) {
    AppendFile(in_, Line(g, g == 1 ? "2026-10-21T10:00:00Z" : "2026-10-21T11:00:00Z", "eu"));
    ASSERT_STATUS_OK((*sink)->Run(RunFinal()));
    std::string served;
    for (int i = 0; i < 600 && served != std::to_string(g); ++i) {  // the watcher's switch, polled by count
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      r = c.Get("/v1/query?format=csv");
      ASSERT_TRUE(r);
      served = r->get_header_value("Snapsink-Generation");
    }
    EXPECT_EQ(served, std::to_string(g));
  }
  r = c.Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"current_generation\":2"), std::string::npos) << r->body;
  (*server)->Stop();
  EXPECT_STATUS_OK((*server)->Wait());
}

TEST_F(ServeApiTest, BadOptionsAndNonRootsAreRefused) {
  api::ServeOptions o = AnyPort();
  o.listen = "localhost";
  auto s = api::Server::Start(root_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.status().message().find("localhost"), std::string::npos) << s.status().message();
  o = AnyPort();
  o.max_connections = 0;
  s = api::Server::Start(root_, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "ServeOptions::max_connections 0: must be at least 1");
  s = api::Server::Start(dir_.path(), AnyPort());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsNotFound()) << s.status().message();
}

// What the server polls for a new publish: CURRENT's generation, 0 before
// the first, and a damaged CURRENT is an error naming it, not generation 0.
TEST_F(ServeApiTest, CurrentGenerationIsWhatCurrentNames) {
  auto none = api::Reader::CurrentGeneration(root_);
  ASSERT_STATUS_OK(none);
  EXPECT_EQ(*none, 0u);
  for (uint64_t g = 1; g <= 2; ++g) {
    AppendFile(in_, Line(g, g == 1 ? "2026-10-21T10:00:00Z" : "2026-10-21T11:00:00Z", "eu"));
    {
      auto sink = api::Sink::Open(root_);
      ASSERT_STATUS_OK(sink);
      ASSERT_STATUS_OK((*sink)->Run(RunFinal()));
    }
    auto current = api::Reader::CurrentGeneration(root_);
    ASSERT_STATUS_OK(current);
    EXPECT_EQ(*current, g);
  }
  WriteFile(root_ + "/CURRENT", "two\n");
  auto damaged = api::Reader::CurrentGeneration(root_);
  ASSERT_FALSE(damaged.ok());
  EXPECT_TRUE(damaged.status().IsCorruption()) << damaged.status().message();
  EXPECT_NE(damaged.status().message().find("CURRENT"), std::string::npos) << damaged.status().message();
}

// The status page of a handle, at the current generation or an older one
// (marked as such); a generation that is not there is NotFound.
TEST_F(ServeApiTest, StatusPageOfAHandle) {
  for (uint64_t g = 1; g <= 2; ++g) {
    AppendFile(in_, Line(g, g == 1 ? "2026-10-21T10:00:00Z" : "2026-10-21T11:00:00Z", "eu"));
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Run(RunFinal()));
  }
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  auto current = api::StatusPage(**ro);
  ASSERT_STATUS_OK(current);
  EXPECT_NE(current->find("generation 2 verified"), std::string::npos);
  EXPECT_EQ(current->find("not the current one"), std::string::npos);
  auto older = api::StatusPage(**ro, 1);
  ASSERT_STATUS_OK(older);
  EXPECT_NE(older->find("generation 1 verified"), std::string::npos);
  EXPECT_NE(older->find("not the current one"), std::string::npos);
  auto gone = api::StatusPage(**ro, 9);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status().message();
}

}  // namespace
}  // namespace snapsink::testing
