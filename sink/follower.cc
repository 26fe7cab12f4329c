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
#include "publish/maintenance.h"
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

Driver::Driver(Root* root, StepSource* source, api::DriveOptions options, bool follower_for_life)
    : root_(root), source_(source), options_(WithNoteDefault(std::move(options))), follower_for_life_(follower_for_life) {}

void Driver::Stop() {
  stop_ = true;
  source_->Wake();
}

// REQUIRES: LOCK held (one step).
Status Driver::Pass(bool final_pass) {
  // Another writer may have published or rolled back what this one staged,
  // or staged seals of its own: what is staged now decides.
  // `gc --retain` or `--max-ahead` may have changed them between steps.
  SNAPSINK_RETURN_IF_ERROR(root_->ReloadHistorySettings());
  std::vector<PendingSnapshot> staged;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(root_->store(), &staged));
  pending_publish_ = !staged.empty();
  SNAPSINK_RETURN_IF_ERROR(source_->Poll(root_, final_pass, &more_to_read_));
  if (source_->HasEnd()) return SealAndPublishAtEnd();
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root_->store(), root_->config(), /*all=*/false, &windows));
  if (!windows.empty()) {
    SealTarget t{root_->env(), root_->path(), root_->store(), root_->config().window_ms};
    std::vector<SealedWindow> sealed;
    SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
    if (!sealed.empty()) {
      pending_publish_ = true;
      if (options_.on_sealed) options_.on_sealed(sealed);
    }
  }
  if (pending_publish_ && (final_pass || NowMs() - last_publish_ms_ >= options_.publish_every_ms)) {
    PublishResult r;
    SNAPSINK_RETURN_IF_ERROR(PublishStaged(root_->env(), root_->path(), root_->store(), root_->config(), &r));
    pending_publish_ = false;
    last_publish_ms_ = NowMs();
    if (r.generation != 0 && options_.on_published) options_.on_published(r);
    if (r.generation != 0) CollectGarbageAfterPublish();
  }
  return Status::OK();
}

// REQUIRES: LOCK held, the source polled to its end (or its stop). Seals
// (every window under final, unless a stop ended it), publishes, and says
// both, also when there was nothing: the job's end. No gc: `run` never
// removes a generation (Sink::Gc, `snapsink gc` do).
Status Driver::SealAndPublishAtEnd() {
  const Status ended = source_->Ended();
  if (!ended.ok() && !ended.IsGap() && !ended.IsBadInput()) return ended;
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root_->store(), root_->config(), options_.final && ended.ok(), &windows));
  SealTarget t{root_->env(), root_->path(), root_->store(), root_->config().window_ms};
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
  if (!sealed.empty() && options_.on_sealed) options_.on_sealed(sealed);
  if (sealed.empty() && options_.on_unsealed) {
    api::UnsealedWindows why;
    SNAPSINK_RETURN_IF_ERROR(api::GatherUnsealed(root_, &why));
    options_.on_unsealed(why);
  }
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishStaged(root_->env(), root_->path(), root_->store(), root_->config(), &r));
  pending_publish_ = false;
  if (options_.on_published) options_.on_published(r);
  return ended;
}

// A source with an end: one step, the last. LOCK is root's (a writer's for
// its life, or a follower's step), or taken for the step (a follower's
// Drive), waiting as long as it takes.
Status Driver::RunToEnd() {
  std::unique_ptr<FileLock> step;
  if (follower_for_life_) {
    SNAPSINK_RETURN_IF_ERROR(LockRootForStep(
        root_->env(), root_->path(), [] { return false; },
        [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }, &step));
  }
  return Pass(/*final_pass=*/true);
}

// A failed gc loses nothing (what it left, the next one removes): it is
// said once, and following goes on.
void Driver::CollectGarbageAfterPublish() {
  GcResult gc;
  Status s = CollectGarbage(root_->env(), root_->path(), root_->store(), options_.keep_generations, &gc);
  const std::string note = s.ok() ? std::string() : "gc after publish failed (following goes on): " + s.ToString();
  if (!note.empty() && note != last_gc_note_) options_.on_note(note);
  last_gc_note_ = note;
}

Status Driver::Run() {
  if (source_->HasEnd()) return RunToEnd();
  Env* env = root_->env();
  const std::string& path = root_->path();
  std::unique_ptr<FileLock> life, step;
  if (!follower_for_life_) {
    SNAPSINK_RETURN_IF_ERROR(LockFollower(env, path, &life));
    // From here LOCK is held one step at a time (engine/writer_lock.h).
    step = root_->ReleaseWriterLock();
  }
  auto sleep = [this](int64_t ms) { source_->Wait(ms); };
  last_publish_ms_ = NowMs() - options_.publish_every_ms;
  Status s;
  while (!stop_ && s.ok()) {
    if (step == nullptr) {
      Status l = LockRootForStep(env, path, [this] { return stop_.load(); }, sleep, &step);
      if (l.code() == Status::Code::kLocked) break;  // stopped while waiting: the last step follows
      s = l;
      if (!s.ok()) break;
    }
    s = Pass(/*final_pass=*/false);
    step.reset();  // other writers may run between steps
    if (!s.ok() || stop_) break;
    int64_t timeout = more_to_read_ ? 0 : options_.poll_ms;
    if (pending_publish_) {
      timeout = std::min(timeout, last_publish_ms_ + options_.publish_every_ms - NowMs());
    }
    source_->Wait(timeout);
  }
  // The last step waits for LOCK as long as it takes (what was sealed is
  // published), and the Root holds LOCK after Run, as it did before, also
  // after an error.
  if (step == nullptr) {
    Status l = LockRootForStep(
        env, path, [] { return false; },
        [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }, &step);
    if (s.ok()) s = l;
  }
  if (s.ok()) s = Pass(/*final_pass=*/true);
  if (!follower_for_life_) root_->HoldWriterLock(std::move(step));
  return s;
}

}  // namespace snapsink
