// The library never prints: an embedder that sets no callback sees nothing
// on its stderr, and the same note reaches the callback when one is set.
// Each case runs a call that has a note to give (a half-written last line
// left unread, a server serving beyond this host) once with no callback,
// with the process's stderr pointed at a file, and once with one.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/utilities/serve.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

// While alive, fd 2 is a file; Text() is what was written to it.
class StderrCapture {
 public:
  explicit StderrCapture(const std::string& path) : path_(path) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { Restore(); }
  std::string Text() {
    Restore();
    std::ifstream f(path_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::string path_;
  int saved_ = -1;
};

class LibraryQuietTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
    api::InitOptions o;
    o.window_size_ms = 60 * 60 * 1000;
    ASSERT_STATUS_OK(api::Sink::Create(root_, o));
    // A whole event, then half of one without its newline: ingest leaves it
    // unread and says so.
    std::ofstream(in_) << EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("m").Key("k").Value("1").Line()
                       << "{\"producer\":\"p\",\"seq\":1,";
  }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(LibraryQuietTest, IngestWithoutOnNotePrintsNothing) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::IngestOptions o;
  o.files = {in_};
  api::IngestResult r;
  StderrCapture err(dir_ / "stderr");
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  EXPECT_EQ(err.Text(), "");
  std::vector<std::string> notes;
  o.on_note = [&](const std::string& n) { notes.push_back(n); };
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("last line has no newline"), std::string::npos) << notes[0];
}

TEST_F(LibraryQuietTest, FollowWithoutOnNotePrintsNothing) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::FollowOptions o;
  o.inputs = {in_};
  {
    StderrCapture err(dir_ / "stderr");
    api::FollowStop stop;
    stop.Stop();  // one pass
    ASSERT_STATUS_OK((*sink)->Follow(o, &stop));
    EXPECT_EQ(err.Text(), "");
  }
  std::vector<std::string> notes;
  o.on_note = [&](const std::string& n) { notes.push_back(n); };
  // The follower says a note once while it holds: a new Follow says it again.
  api::FollowStop stop;
  stop.Stop();
  ASSERT_STATUS_OK((*sink)->Follow(o, &stop));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("last line has no newline"), std::string::npos) << notes[0];
}

TEST_F(LibraryQuietTest, ServerBeyondThisHostWithoutOnNotePrintsNothing) {
  api::ServeOptions o;
  o.listen = "0.0.0.0:0";
  o.insecure = true;
  {
    StderrCapture err(dir_ / "stderr");
    auto server = api::Server::Start(root_, o);
    ASSERT_STATUS_OK(server);
    (*server)->Stop();
    server->reset();
    EXPECT_EQ(err.Text(), "");
  }
  std::vector<std::string> notes;
  o.on_note = [&](const std::string& n) { notes.push_back(n); };
  auto server = api::Server::Start(root_, o);
  ASSERT_STATUS_OK(server);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("warning: ServeOptions::insecure: serving on 0.0.0.0:0 beyond this host", 0), 0u)
      << notes[0];
}

}  // namespace
}  // namespace snapsink::testing
