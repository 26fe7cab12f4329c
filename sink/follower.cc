#include "sink/follower.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/writer_lock.h"
#include "sink/sink_impl.h"

namespace snapsink {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The notes' default when the embedder set none.
template <typename Options>
Options WithNoteDefault(Options options) {
  if (!options.on_note) options.on_note = [](const std::string&) {};  // the library never prints
  return options;
}

}  // namespace

FileSource::FileSource(Env* env, FollowOptions options) : env_(env), options_(WithNoteDefault(std::move(options))) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0) {
    // A file's directory, not the file: a rotation replaces the file.
    const uint32_t mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE;
    for (const std::string& in : options_.inputs) {
      ::inotify_add_watch(inotify_fd_, (IsDir(in) ? in : Parent(in)).c_str(), mask);
    }
  }
  if (!options_.on_note) options_.on_note = [](const std::string&) {};  // the library never prints
}

FileSource::~FileSource() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

void FileSource::Wake() {
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0) {
  }
}

std::vector<std::string> FileSource::Sources() {
  std::vector<std::string> out;
  for (const std::string& in : options_.inputs) {
    if (!IsDir(in)) {
      if (env_->FileExists(in)) out.push_back(in);
      continue;
    }
    std::vector<std::string> names;
    if (!env_->GetChildren(in, &names).ok()) continue;
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      if (EndsWith(n, ".ndjson") && n[0] != '.') out.push_back(filenames::Join(in, n));
    }
  }
  return out;
}

Status FileSource::Poll(Root* root, bool final_pass, bool* more) {
  *more = false;
  Ingester ingester(root->env(), root->store(), root->config());
  for (const std::string& path : Sources()) {
    // A writer waits for LOCK: let it in now, read the rest next step.
    if (!final_pass && WritersWaiting(root->env(), root->path())) {
      *more = true;
      break;
    }
    IngestOptions opt;
    opt.path = path;
    opt.source = path;
    opt.commit_every = options_.commit_every;
    opt.stop_on_error = options_.stop_on_error;
    opt.id_from_content = options_.id_from_content;
    opt.rejects_file = filenames::RejectsFile(root->path(), opt.source);
    std::string note;
    opt.on_note = [&note](const std::string& n) { note += n; };
    SourceState st;
    Status s = ingester.Run(opt, &st);
    // A half line waiting for its end is noted on every pass: say it once.
    if (!note.empty() && last_note_[path] != note) options_.on_note(note);
    last_note_[path] = note;
    // A file removed between listing and reading is no error: spool files go.
    if (s.IsNotFound()) continue;
    SNAPSINK_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

void FileSource::Wait(int64_t timeout_ms) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
  const int n = ::poll(fds, inotify_fd_ >= 0 ? 2 : 1, static_cast<int>(std::max<int64_t>(timeout_ms, 1)));
  if (n > 0 && inotify_fd_ >= 0 && (fds[1].revents & POLLIN)) {
    char buf[4096];
    while (::read(inotify_fd_, buf, sizeof(buf)) > 0) {
    }
  }
}

Driver::Driver(api::DriveTarget* target, api::DriveOptions options)
    : target_(target), options_(WithNoteDefault(std::move(options))) {}

void Driver::Stop() {
  stop_ = true;
  target_->Wake();
}

// REQUIRES: the step begun. Polls (the last step until there is no more),
// lets the target seal what that closed, and publishes when pending and
// due (publish_every_ms since the last, a point the target asks for, or the
// last step).
Status Driver::Step(bool last) {
  bool more = false;
  do {
    SNAPSINK_RETURN_IF_ERROR(target_->Poll(last, &more));
  } while (last && more);
  more_to_read_ = more;
  SNAPSINK_RETURN_IF_ERROR(target_->AfterPoll(options_, &pending_publish_));
  const bool due = last || target_->WantsPublish() || NowMs() - last_publish_ms_ >= options_.publish_every_ms;
  if (pending_publish_ && due) {
    SNAPSINK_RETURN_IF_ERROR(target_->Publish(/*all=*/false, options_));
    pending_publish_ = false;
    last_publish_ms_ = NowMs();
  }
  return Status::OK();
}

// A source with an end: one step, the last, polled to its end (a publish
// point whenever the target asks for one: every window sealed under
// final), then its end sealed and published.
Status Driver::RunToEnd() {
  Status s = target_->BeginStep(/*last=*/true, [] { return false; });
  for (bool more = true; s.ok() && more;) {
    s = target_->Poll(/*last=*/true, &more);
    if (s.ok() && target_->WantsPublish()) s = target_->Publish(options_.final, options_);
  }
  if (s.ok()) s = target_->AtEnd(options_);
  target_->EndStep(/*last=*/true);
  return s;
}

Status Driver::Run() {
  if (target_->HasEnd()) return RunToEnd();
  last_publish_ms_ = NowMs() - (target_->FirstPublishAfterEvery() ? 0 : options_.publish_every_ms);
  Status s;
  while (!stop_ && s.ok()) {
    Status l = target_->BeginStep(/*last=*/false, [this] { return stop_.load(); });
    if (l.ok()) s = Step(/*last=*/false);
    target_->EndStep(/*last=*/false);  // other writers may run between steps
    if (l.IsLocked()) break;           // stopped while waiting: the last step follows
    if (s.ok()) s = l;
    if (!s.ok() || stop_) break;
    int64_t timeout = more_to_read_ ? 0 : options_.poll_ms;
    if (pending_publish_) {
      timeout = std::min(timeout, last_publish_ms_ + options_.publish_every_ms - NowMs());
    }
    target_->Wait(timeout);
  }
  // The last step waits for its LOCK as long as it takes (what was sealed
  // is published), and a Sink's Root holds LOCK after Run, as it did
  // before, also after an error.
  Status l = target_->BeginStep(/*last=*/true, [] { return false; });
  if (s.ok()) s = l;
  if (s.ok()) s = Step(/*last=*/true);
  target_->EndStep(/*last=*/true);
  return s;
}

}  // namespace snapsink
