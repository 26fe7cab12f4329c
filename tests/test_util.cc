// This file alone gets the paths as -D flags (CMakeLists.txt).
#define SNAPSINK_TEST_UTIL_PATHS 1
#include "tests/test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <thread>

#include "snapsink/options.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/query_text.h"
#include "snapsink/utilities/table.h"

namespace snapsink::testing {

const char* SnapsinkBinaryPath() { return SNAPSINK_BINARY; }
const char* SourceDirPath() { return SNAPSINK_SOURCE_DIR; }

int64_t Ms(const std::string& time) {
  int64_t ms = 0;
  EXPECT_TRUE(api::ParseTime(time, &ms)) << time;
  return ms;
}
namespace fs = boost::filesystem;

Status RunFinalWithApi(const std::string& root, const std::string& file) {
  auto sink = api::Sink::Open(root);
  if (!sink.ok()) return sink.status();
  api::RunOptions run;
  run.ingest.files = {file};
  run.final = true;
  return (*sink)->Run(run);
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/snapsink-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  boost::system::error_code ec;
  fs::remove_all(path_, ec);
}

FastDir::FastDir() {
  char tmpl[] = "/dev/shm/snapsink-test-XXXXXX";
  if (::access("/dev/shm", W_OK) == 0 && ::mkdtemp(tmpl) != nullptr) {
    path_ = tmpl;
  } else {
    fallback_ = std::make_unique<TempDir>();
    path_ = fallback_->path();
  }
}

FastDir::~FastDir() {
  if (fallback_) return;  // the TempDir removes itself
  boost::system::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {
std::string Drain(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return s;
}
}  // namespace

ExecImage::ExecImage(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  strings_.push_back(SNAPSINK_BINARY);
  for (const std::string& a : args) strings_.push_back(a);
  const size_t argc = strings_.size();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (env.count(entry.substr(0, entry.find('='))) == 0) strings_.push_back(entry);
  }
  for (const auto& [k, v] : env) strings_.push_back(k + "=" + v);
  for (size_t i = 0; i < strings_.size(); ++i) (i < argc ? argv_ : envp_).push_back(strings_[i].data());
  argv_.push_back(nullptr);
  envp_.push_back(nullptr);
}

void ExecImage::Exec() const {
  ::execve(argv_[0], argv_.data(), envp_.data());
  _exit(127);
}

pid_t ExecImage::Spawn(const posix_spawn_file_actions_t* actions) const {
  pid_t pid = -1;
  if (::posix_spawn(&pid, argv_[0], actions, nullptr, argv_.data(), envp_.data()) != 0) return -1;
  return pid;
}

RunResult Snapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                   const std::string& stdin_data) {
  int in[2], out[2], err[2];
  if (::pipe(in) || ::pipe(out) || ::pipe(err)) throw std::runtime_error("pipe failed");
  const ExecImage image(args, env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  const pid_t pid = image.Spawn(&actions);
  posix_spawn_file_actions_destroy(&actions);
  if (pid < 0) throw std::runtime_error("posix_spawn of the snapsink binary failed");
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  RunResult r;
  std::thread writer([&] {
    size_t done = 0;
    while (done < stdin_data.size()) {
      ssize_t n = ::write(in[1], stdin_data.data() + done, stdin_data.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(in[1]);
  });
  std::thread errs([&] { r.err = Drain(err[0]); });
  r.out = Drain(out[0]);
  errs.join();
  writer.join();
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

Spawned SpawnSnapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                      const std::string& out_path, const std::string& err_path) {
  Spawned s;
  const ExecImage image(args, env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.empty() ? "/dev/null" : out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.empty() ? "/dev/null" : err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  s.pid = image.Spawn(&actions);
  posix_spawn_file_actions_destroy(&actions);
  if (s.pid < 0) throw std::runtime_error("posix_spawn of the snapsink binary failed");
  return s;
}

namespace {
int DecodeStatus(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
}  // namespace

bool Spawned::Running() {
  if (exit_code >= 0) return false;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) {
    exit_code = DecodeStatus(status);
    return false;
  }
  return true;
}

int Spawned::Wait() {
  if (exit_code >= 0) return exit_code;
  int status = 0;
  ::waitpid(pid, &status, 0);
  exit_code = DecodeStatus(status);
  return exit_code;
}

std::map<std::string, std::string> TreeContents(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (rel == "state" || rel == "LOCK" || rel == "LOCK.follower" || rel == "LOCK.queue") {
      if (fs::is_directory(it->path())) it.disable_recursion_pending();
      continue;
    }
    if (fs::is_directory(it->path())) {
      out[rel + "/"] = "";
    } else {
      out[rel] = ReadFile(it->path().string());
    }
  }
  return out;
}

std::string TreeDiff(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want) {
  std::string diff;
  for (const auto& [path, bytes] : got) {
    auto it = want.find(path);
    if (it == want.end()) {
      diff += "  extra: " + path + "\n";
    } else if (it->second != bytes) {
      diff += "  differs: " + path + "\n";
    }
  }
  for (const auto& [path, bytes] : want) {
    if (!got.count(path)) diff += "  missing: " + path + "\n";
  }
  return diff;
}

namespace {

// A section's first line: "## what rc=0", or "## what rc=E" (E the Status
// code) when it cannot be read, as the command's exit code said when the
// dump ran `inspect` and `query` as processes (with no output then).
std::string Head(const char* what, const Status& s) {
  return std::string("## ") + what + " rc=" + std::to_string(s.ok() ? 0 : static_cast<int>(s.code())) + "\n";
}

// One view's section: its head and, when it could be read, its JSON lines.
template <typename T>
std::string Section(const char* what, const Result<T>& view) {
  return Head(what, view.status()) + (view.ok() ? api::FormatTable(api::ToTable(*view), api::OutputFormat::kJson) : "");
}

// What `query ROOT --format json` prints: every row of the current
// generation; nothing (and rc=0) when nothing is published yet.
std::string QuerySection(const std::string& root) {
  auto reader = api::Reader::OpenTop(root);
  if (!reader.ok() && reader.status().IsNotFound()) {
    auto sink = api::Sink::OpenReadOnly(root);
    return Head("query", sink.ok() ? (*sink)->GetStatus().status() : sink.status());
  }
  if (!reader.ok()) return Head("query", reader.status());
  api::QuerySpec spec;
  Status s = api::ParseQuery(api::QueryText{}, 0, &spec);
  std::vector<api::QueryRow> rows;
  if (s.ok()) s = (*reader)->Query(spec, &rows);
  if (!s.ok()) return Head("query", s);
  return Head("query", s) + api::FormatTable(api::ToTable(rows, (*reader)->generation(), spec.quantiles),
                                             api::OutputFormat::kJson);
}

}  // namespace

// Read in this process through the public API, not by five processes: the
// crash sweeps call it at every step they check, and starting `inspect` four
// times and `query` once was most of the processes they started. The bytes
// are the ones those commands print (api::FormatTable of the same views).
std::string StateDump(const std::string& root) {
  std::string dump;
  {
    auto sink = api::Sink::OpenReadOnly(root);  // closed before the query opens its own
    if (!sink.ok()) {
      for (const char* what : {"producers", "gaps", "sources", "windows"}) dump += Head(what, sink.status());
    } else {
      const api::ReadOnlySink& s = **sink;
      dump += Section("producers", s.Producers()) + Section("gaps", s.Gaps()) + Section("sources", s.Sources()) +
              Section("windows", s.Windows());
    }
  }
  return WithParentAsDir(root, dump + QuerySection(root));
}

std::string WithParentAsDir(const std::string& root, std::string text) {
  const std::string parent = fs::path(root).parent_path().string();
  for (size_t pos; !parent.empty() && (pos = text.find(parent)) != std::string::npos;) {
    text.replace(pos, parent.size(), "$DIR");
  }
  return text;
}

std::string EventLine::Line() const {
  std::string s = "{\"producer\":\"" + producer_ + "\"";
  if (epoch_) s += ",\"epoch\":" + std::to_string(*epoch_);
  s += ",\"seq\":" + std::to_string(seq_) + ",\"ts\":" + ts_ + ",\"metric\":\"" + metric_ + "\"";
  if (key_) s += ",\"key\":\"" + *key_ + "\"";
  if (value_) s += ",\"value\":" + *value_;
  if (op_) s += ",\"op\":\"" + *op_ + "\"";
  return s + "}\n";
}

}  // namespace snapsink::testing

namespace snapsink::testing {

std::string WithoutIdFields(const std::string& inspect_json) {
  static const std::regex kFields(
      R"(,"last_seen":(null|"[^"]*"),"retired":(true|false)|,"duplicates_id":\d+,"rejected_horizon":\d+,"rejected_retired":\d+)");
  return std::regex_replace(inspect_json, kFields, "");
}

int64_t SourceOffset(const std::string& root, const std::string& source) {
  RunResult r = Snapsink({"inspect", root, "sources", "--json"});
  const std::string tag = "{\"source\":\"" + source + "\",\"offset\":";
  const size_t at = r.out.find(tag);
  if (at == std::string::npos) return -1;
  return std::stoll(r.out.substr(at + tag.size()));
}

uint64_t CurrentGeneration(const std::string& root) {
  const std::string current = root + "/CURRENT";
  if (!std::filesystem::exists(current)) return 0;
  const std::string text = ReadFile(current);
  return text.empty() ? 0 : std::stoull(text);
}

}  // namespace snapsink::testing
