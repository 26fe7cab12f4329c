#include "publish/backfill.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <xxhash.h>

#include "engine/crash_point.h"

#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/timeutil.h"
#include "engine/window_records_runs.h"
#include "publish/backfill_impact.h"
#include "publish/publisher.h"
#include "publish/views.h"
#include "engine/long_key.h"

namespace snapsink {
namespace {

// How long step 4 waits for a live writer to let go of the root.
constexpr int64_t kLockWaitMs = 60 * 1000;

Result<bool> IsDone(Store* live, uint64_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  std::string_view v;
  Status s = txn->Get(Table::kMeta, meta::BackfillDoneKey(version), &v);
  if (s.IsNotFound()) return false;
  SNAPSINK_RETURN_IF_ERROR(s);
  return true;
}

// V must exceed every version the windows have in live state.
Status CheckVersion(Store* live, const std::set<int64_t>& windows, uint64_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  for (int64_t w : windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    if (ws.last_version >= version) {
      return Status::InvalidArgument("BackfillOptions::version " + std::to_string(version) +
                                     " must exceed the versions of its windows: window " + FormatIso(w) + " is already at v" + std::to_string(ws.last_version));
    }
  }
  return Status::OK();
}

// Step 2: the windows the inputs touch within [first, last], by a parse-only pass.
Status TouchedWindows(const std::vector<std::string>& files, int64_t window_ms, int64_t first, int64_t last,
                      std::set<int64_t>* out) {
  EventParser parser;
  Event ev;
  std::string reason;
  for (const std::string& f : files) {
    std::unique_ptr<LineReader> reader;
    SNAPSINK_RETURN_IF_ERROR(LineReader::Open(f, &reader));
    Line line;
    while (reader->Next(&line)) {
      if (line.overlong || !parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) continue;
      const int64_t w = WindowStart(ev.ts_ms, window_ms);
      if (w >= first && w <= last) out->insert(w);
    }
    SNAPSINK_RETURN_IF_ERROR(reader->status());
  }
  return Status::OK();
}

// Copies every record of table under prefix from `from` to `to`, replacing what `to` had.
Status ReplacePrefix(Txn* from, Txn* to, Table table, const std::string& prefix) {
  SNAPSINK_RETURN_IF_ERROR(to->DeletePrefix(table, prefix));
  Status st;
  SNAPSINK_RETURN_IF_ERROR(from->Scan(table, prefix, [&](std::string_view k, std::string_view v) {
    st = to->Put(table, k, v);
    return st.ok();
  }));
  return st;
}

// In the live transaction that records the generation: the backfilled windows
// become the live base, and backfill V is done.
Status AdoptBackfill(Txn* live, Store* backfill, const std::vector<PendingSnapshot>& pending, uint64_t version,
                     std::vector<std::pair<int64_t, uint64_t>>* superseded) {
  std::unique_ptr<Txn> bf;
  SNAPSINK_RETURN_IF_ERROR(backfill->BeginRead(&bf));
  for (const PendingSnapshot& p : pending) {
    std::string prefix;
    codec::AppendWindowKey(&prefix, p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(CopyWindowAggregates(bf.get(), live, p.window_ms));
    SNAPSINK_RETURN_IF_ERROR(ReplacePrefix(bf.get(), live, Table::kLedger, prefix));
    // A live version staged but not published must not later replace the backfill.
    std::vector<uint64_t> staged;
    SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(live, p.window_ms, /*keep_version=*/0, &staged));
    for (uint64_t ver : staged) superseded->emplace_back(p.window_ms, ver);
    SealRecord published = p.seal;
    published.state = SealState::kPublished;
    SNAPSINK_RETURN_IF_ERROR(live->Put(Table::kSeals, codec::SealKey(p.window_ms, version), codec::Encode(published)));
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(live, p.window_ms, &ws));
    ws.last_version = std::max(ws.last_version, version);
    ws.dirty = false;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(live, p.window_ms, ws));
  }
  // Its sources stay visible (inspect sources, status, metrics) with their
  // counts, ignored included, named "backfill vV: NAME": a name no live
  // source gets by default, and with no position (the archive is read once).
  Status put;
  SNAPSINK_RETURN_IF_ERROR(ScanSources(bf.get(), [&](const std::string& name, const SourceState& st, const SourceIdCounts&) {
    if (!put.ok()) return;
    SourceState kept = st;
    kept.flags = 0;
    kept.dev = kept.ino = kept.tail_hash = 0;
    put = PutRecord(live, Table::kSources, BackfillSourceName(version, name), codec::Encode(kept));
  }));
  SNAPSINK_RETURN_IF_ERROR(put);
  return live->Put(Table::kMeta, meta::BackfillDoneKey(version), "done");
}

// Reads standard input to its end, handing each chunk to sink (if any);
// returns its length and XXH64 (seed 0).
Status DrainStdin(const std::function<Status(std::string_view)>& sink, uint64_t* length, uint64_t* hash) {
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> state(XXH64_createState(), &XXH64_freeState);
  XXH64_reset(state.get(), 0);
  std::string buf(size_t{1} << 20, '\0');
  *length = 0;
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(std::string("read standard input: ") + std::strerror(errno));
    if (n == 0) break;
    const std::string_view chunk(buf.data(), static_cast<size_t>(n));
    XXH64_update(state.get(), chunk.data(), chunk.size());
    *length += chunk.size();
    if (sink) SNAPSINK_RETURN_IF_ERROR(sink(chunk));
  }
  *hash = XXH64_digest(state.get());
  return Status::OK();
}

std::string SpoolMarker(uint64_t length, uint64_t hash) { return fmt::format("{} {:016x}\n", length, hash); }

// Step 1b (backfill.h). REQUIRES: the backfill's lock is held.
Status SpoolStdin(Env* env, const std::string& root, uint64_t version) {
  const std::string spool = filenames::BackfillSpoolFile(root, version);
  const std::string done = filenames::BackfillSpoolDoneFile(root, version);
  uint64_t length = 0, hash = 0;
  if (env->FileExists(done)) {
    std::string marker;
    SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(done, &marker));
    SNAPSINK_RETURN_IF_ERROR(DrainStdin(nullptr, &length, &hash));
    if (marker == SpoolMarker(length, hash)) return Status::OK();
    return Status::InvalidArgument(
        "backfill v" + std::to_string(version) + ": standard input (" + std::to_string(length) +
        " bytes) is not the input an earlier, unfinished run spooled to " + spool +
        "; pipe that same input again, or remove " + filenames::BackfillStateDir(root, version) +
        " to start this backfill over");
  }
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(spool, &f));
  SNAPSINK_RETURN_IF_ERROR(DrainStdin([&](std::string_view chunk) { return f->Append(chunk); }, &length, &hash));
  SNAPSINK_RETURN_IF_ERROR(f->Sync());
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  MaybeCrash("backfill.before_spool_done");
  // Atomic and durable; the directory sync also makes the spool's entry durable.
  SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, done, SpoolMarker(length, hash)));
  MaybeCrash("backfill.after_spool");
  return Status::OK();
}

// The backfill's environment is born whole, as init's is: it is created
// in state.init-tmp/ inside the backfill dir, its first commit (the tables)
// made durable there, and only then is its data.mdb renamed into the
// backfill dir and that dir synced. Created in place, a power cut before
// LMDB's first fsync could leave a data.mdb whose first pages are torn,
// zero-filled or lost: LMDB then refuses it (MDB_INVALID: File is not an
// LMDB file) and every rerun failed on it.
//
// A data.mdb that LMDB calls invalid all the same (left by an older build,
// or made by hand) is recognised as never committed and made again: LMDB
// writes the magic of both meta pages in the file's first write and never
// rewrites it, and a commit fsyncs the file, so a file without a valid
// magic held no commit. Starting over is safe in any case: the backfill's
// state is private (no reader, no live command looks at it), nothing is
// done until the live commit that adopts it, its rejects files are cut
// back to the committed length (none), and a rerun ingests its inputs
// (or the spool, kept beside it) from their start.
Status OpenBackfillStore(Env* env, const std::string& root, uint64_t version, std::unique_ptr<Store>* out) {
  const std::string dir = filenames::BackfillStateDir(root, version);
  const std::string data = filenames::LmdbDataFile(dir);
  if (env->FileExists(data)) {
    Status s = Store::Open(dir, /*create=*/true, out);
    if (s.ok() || !s.IsCorruption() || s.message().find(mdb_strerror(MDB_INVALID)) == std::string::npos) return s;
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(data));
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(filenames::LmdbLockFile(dir)));
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
  }
  const std::string building = filenames::BackfillEnvBuildDir(root, version);
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(building));  // a crashed attempt's
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(building));
  {
    std::unique_ptr<Store> fresh;
    SNAPSINK_RETURN_IF_ERROR(Store::Open(building, /*create=*/true, &fresh));  // tables committed and synced
  }
  SNAPSINK_RETURN_IF_ERROR(env->RenameFile(filenames::LmdbDataFile(building), data));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));  // data.mdb's name
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(building));
  return Store::Open(dir, /*create=*/true, out);
}

Status RemoveBackfillState(Env* env, const std::string& root, uint64_t version) {
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::BackfillStateDir(root, version)));
  return env->SyncDir(filenames::StateDir(root));
}

}  // namespace

// Commit points: the backfill's own LMDB commits (state/backfill-v<V>/,
// invisible to readers and live commands) until step 4; then publishing its
// generation, whose commit point is the switch of CURRENT, and the live
// LMDB commit that adopts it (a rerun finishes a publish that stopped
// between the two; verify notes it). A failure before the switch changes
// nothing a reader sees; the rerun resumes from the backfill's state.
bool IsBackfillSourceName(std::string_view name) {
  if (name.substr(0, std::strlen(kBackfillSourcePrefix)) != kBackfillSourcePrefix) return false;
  size_t i = std::strlen(kBackfillSourcePrefix);
  const size_t digits = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  return i > digits && name.substr(i, 2) == ": ";
}

namespace {

// Step 3: ingests inputs into the backfill's own state bf, adding the
// accounting to *result. Archived input may span more than the retention: a
// backfill retires no producer, and rejects nothing for its own watermark
// (its history may jump); the publish leaves out what is beyond the live
// root's retention.
Status IngestInputs(Root* root, Store* bf, const BackfillOptions& o, const std::vector<std::string>& inputs,
                    int64_t first, int64_t last, BackfillResult* result) {
  const std::string& path = root->path();
  RootConfig config = root->config();
  config.producer_retention_ms = 0;
  config.retain_ms = 0;
  config.max_ahead_ms = 0;
  Ingester ingester(root->env(), bf, config);
  ingester.SetWindowRange(first, last);
  for (size_t i = 0; i < inputs.size(); ++i) {
    IngestOptions io;
    io.path = inputs[i];
    io.source = o.source.empty() ? o.files[i] : o.source;  // "-" for the spool of standard input
    io.commit_every = o.commit_every;
    io.rejects_file = filenames::BackfillRejectsFile(path, o.version, io.source);
    io.input_final = true;  // an archive: a last line without its newline is taken or rejected
    if (o.on_progress) {
      io.on_commit = [&](const SourceState& st, int64_t size) { o.on_progress(st.offset, size, st.lines); };
    }
    SourceState st;
    SNAPSINK_RETURN_IF_ERROR(ingester.Run(io, &st));
    result->lines += st.lines;
    result->applied += st.applied;
    result->duplicates += st.duplicates;
    result->fenced += st.fenced;
    result->rejected += st.rejected;
    result->ignored += st.ignored;
  }
  return Status::OK();
}

// Step 4, under the root's LOCK (held by the caller): seals the backfill's
// windows and publishes them, with those a crashed attempt already sealed,
// in one generation whose live commit adopts the backfill. The version rule
// holds for all of them, checked once here, before anything is sealed.
Status SealAndPublish(Root* root, Store* bf, uint64_t version, BackfillResult* result) {
  Env* env = root->env();
  const std::string& path = root->path();
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(bf, root->config(), /*all=*/true, &windows));
  std::vector<PendingSnapshot> pending;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf, &pending));
  std::set<int64_t> affected(windows.begin(), windows.end());
  for (const PendingSnapshot& p : pending) affected.insert(p.window_ms);
  SNAPSINK_RETURN_IF_ERROR(CheckVersion(root->store(), affected, version));
  SealTarget target{env, path, bf, root->config().window_ms};
  std::vector<SealJob> jobs;
  for (int64_t w : windows) jobs.push_back(SealJob{w, version});
  SNAPSINK_RETURN_IF_ERROR(SealBatch(target, jobs, &result->sealed));
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf, &pending));
  std::vector<std::pair<int64_t, uint64_t>> superseded;
  PublishResult pr;
  // Nothing to publish: V stays unused (SPEC 9: only a publish uses a version up).
  if (!pending.empty()) {
    std::set<int64_t> published;
    for (const PendingSnapshot& p : pending) published.insert(p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(CompareTotals(root->store(), bf, published, &result->impact));
    SNAPSINK_RETURN_IF_ERROR(PublishSnapshots(env, path, root->store(), root->config(), pending, [&](Txn* live) {
      return AdoptBackfill(live, bf, pending, version, &superseded);
    }, &pr));
  }
  for (const auto& [w, ver] : superseded) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(path, w, ver)));
  }
  result->generation = pr.generation;
  result->published_windows = pr.windows;
  return Status::OK();
}

// A backfill found already published (its done record is in live state) may
// have stopped after its commit: finishes that publish and removes the
// backfill's state. REQUIRES: the root's LOCK is held.
Status FinishDone(Root* root, uint64_t version, BackfillResult* result) {
  result->already_done = true;
  SNAPSINK_RETURN_IF_ERROR(FinishPublish(root->env(), root->path(), root->store()));
  return RemoveBackfillState(root->env(), root->path(), version);
}

}  // namespace

Status RunBackfill(Root* root, const BackfillOptions& o, BackfillResult* result) {
  *result = BackfillResult();
  Env* env = root->env();
  const std::string& path = root->path();
  if (o.version == 0) return Status::InvalidArgument("BackfillOptions::version 0: must be at least 1");

  // 1. Already published?
  SNAPSINK_ASSIGN_OR_RETURN(bool done, IsDone(root->store(), o.version));
  if (done) {
    std::unique_ptr<FileLock> lock;
    SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, kLockWaitMs, &lock));
    return FinishDone(root, o.version, result);
  }
  // 2. The version rule, before any work.
  const int64_t first = o.from ? WindowStart(*o.from, root->config().window_ms) : INT64_MIN;
  const int64_t last = o.to ? WindowStart(*o.to, root->config().window_ms) : INT64_MAX;
  if (first > last) return Status::InvalidArgument("BackfillOptions::from is after BackfillOptions::to");
  const size_t stdin_inputs = std::count(o.files.begin(), o.files.end(), "-");
  if (stdin_inputs > 1) return Status::InvalidArgument("- (standard input) can be given once");
  if (!o.source.empty() && o.files.size() != 1) {
    return Status::InvalidArgument(
        "BackfillOptions::source names one input; BackfillOptions::files must hold exactly one");
  }

  // One backfill process per version: its lock is taken before the spool
  // (stdin) or else before step 3.
  const std::string dir = filenames::BackfillStateDir(path, o.version);
  const bool dir_existed = env->FileExists(dir);
  std::unique_ptr<FileLock> bf_lock;
  auto lock_backfill = [&]() -> Status {
    SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, dir));
    Status s = env->LockFile(filenames::BackfillLockFile(path, o.version), &bf_lock);
    if (s.code() == Status::Code::kLocked) {
      return Status::Locked("backfill v" + std::to_string(o.version) + " of " + path + " is running in another process");
    }
    return s;
  };
  std::vector<std::string> inputs = o.files;
  if (stdin_inputs > 0) {
    SNAPSINK_RETURN_IF_ERROR(lock_backfill());
    SNAPSINK_RETURN_IF_ERROR(SpoolStdin(env, path, o.version));
    std::replace(inputs.begin(), inputs.end(), std::string("-"), filenames::BackfillSpoolFile(path, o.version));
  }
  std::set<int64_t> touched;
  SNAPSINK_RETURN_IF_ERROR(TouchedWindows(inputs, root->config().window_ms, first, last, &touched));
  if (Status s = CheckVersion(root->store(), touched, o.version); !s.ok()) {
    // Refused before any work: the spool made for it goes too. A spool of
    // an earlier run stays, with the state that holds offsets into it.
    if (stdin_inputs > 0 && !dir_existed) {
      bf_lock.reset();
      SNAPSINK_RETURN_IF_ERROR(RemoveBackfillState(env, path, o.version));
    }
    return s;
  }

  // 3. Ingest into the backfill's own state.
  if (bf_lock == nullptr) SNAPSINK_RETURN_IF_ERROR(lock_backfill());
  std::unique_ptr<Store> bf;
  SNAPSINK_RETURN_IF_ERROR(OpenBackfillStore(env, path, o.version, &bf));
  SNAPSINK_RETURN_IF_ERROR(IngestInputs(root, bf.get(), o, inputs, first, last, result));

  // 4. Seal and publish in one generation, under the root's lock.
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, kLockWaitMs, &lock));
  SNAPSINK_ASSIGN_OR_RETURN(done, IsDone(root->store(), o.version));
  if (done) {
    bf.reset();
    return FinishDone(root, o.version, result);
  }
  SNAPSINK_RETURN_IF_ERROR(SealAndPublish(root, bf.get(), o.version, result));
  // 5. The backfill's state has served its purpose.
  bf.reset();
  bf_lock.reset();
  return RemoveBackfillState(env, path, o.version);
}

}  // namespace snapsink
