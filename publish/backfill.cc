#include "publish/backfill.h"

#include <chrono>
#include <set>
#include <thread>

#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/timeutil.h"
#include "publish/backfill_impact.h"
#include "publish/publisher.h"

namespace snapsink {
namespace {

// How long step 4 waits for a live writer to let go of the root.
constexpr int kLockWaitMs = 60 * 1000;

Status LockRootWaiting(Env* env, const std::string& root, std::unique_ptr<FileLock>* lock) {
  for (int waited = 0;; waited += 100) {
    Status s = LockRoot(env, root, lock);
    if (s.code() != Status::Code::kLocked || waited >= kLockWaitMs) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<bool> IsDone(Store* live, uint32_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  std::string_view v;
  Status s = txn->Get(Table::kMeta, meta::BackfillDoneKey(version), &v);
  if (s.IsNotFound()) return false;
  SNAPSINK_RETURN_IF_ERROR(s);
  return true;
}

// V must exceed every version the windows have in live state.
Status CheckVersion(Store* live, const std::set<int64_t>& windows, uint32_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  for (int64_t w : windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    if (ws.last_version >= version) {
      return Status::InvalidArgument("--version " + std::to_string(version) + " must exceed the versions of its windows: window " +
                                     FormatIso(w) + " is already at v" + std::to_string(ws.last_version));
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
Status AdoptBackfill(Txn* live, Store* backfill, const std::vector<PendingSnapshot>& pending, uint32_t version,
                     std::vector<std::pair<int64_t, uint32_t>>* superseded) {
  std::unique_ptr<Txn> bf;
  SNAPSINK_RETURN_IF_ERROR(backfill->BeginRead(&bf));
  for (const PendingSnapshot& p : pending) {
    std::string prefix;
    codec::AppendWindowKey(&prefix, p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(ReplacePrefix(bf.get(), live, Table::kAggs, prefix));
    SNAPSINK_RETURN_IF_ERROR(ReplacePrefix(bf.get(), live, Table::kLedger, prefix));
    // A live version staged but not published must not later replace the backfill.
    std::vector<uint32_t> staged;
    SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(live, p.window_ms, /*keep_version=*/0, &staged));
    for (uint32_t ver : staged) superseded->emplace_back(p.window_ms, ver);
    SealRecord published = p.seal;
    published.state = SealState::kPublished;
    SNAPSINK_RETURN_IF_ERROR(live->Put(Table::kSeals, codec::SealKey(p.window_ms, version), codec::Encode(published)));
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(live, p.window_ms, &ws));
    ws.last_version = std::max(ws.last_version, version);
    ws.dirty = false;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(live, p.window_ms, ws));
  }
  return live->Put(Table::kMeta, meta::BackfillDoneKey(version), "done");
}

Status RemoveBackfillState(Env* env, const std::string& root, uint32_t version) {
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::BackfillStateDir(root, version)));
  return env->SyncDir(filenames::StateDir(root));
}

}  // namespace

Status RunBackfill(Root* root, const BackfillOptions& o, BackfillResult* result) {
  *result = BackfillResult();
  Env* env = root->env();
  const std::string& path = root->path();
  if (o.version == 0) return Status::InvalidArgument("--version must be at least 1");

  // 1. Already published?
  SNAPSINK_ASSIGN_OR_RETURN(bool done, IsDone(root->store(), o.version));
  if (done) {
    result->already_done = true;
    return RemoveBackfillState(env, path, o.version);
  }
  // 2. The version rule, before any work.
  const int64_t first = o.from ? WindowStart(*o.from, root->config().window_ms) : INT64_MIN;
  const int64_t last = o.to ? WindowStart(*o.to, root->config().window_ms) : INT64_MAX;
  if (first > last) return Status::InvalidArgument("--from is after --to");
  std::set<int64_t> touched;
  SNAPSINK_RETURN_IF_ERROR(TouchedWindows(o.files, root->config().window_ms, first, last, &touched));
  SNAPSINK_RETURN_IF_ERROR(CheckVersion(root->store(), touched, o.version));

  // 3. Ingest into the backfill's own state; one backfill process per version.
  const std::string dir = filenames::BackfillStateDir(path, o.version);
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(dir));
  std::unique_ptr<FileLock> bf_lock;
  Status s = env->LockFile(filenames::BackfillLockFile(path, o.version), &bf_lock);
  if (s.code() == Status::Code::kLocked) {
    return Status::Locked("backfill v" + std::to_string(o.version) + " of " + path + " is running in another process");
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  std::unique_ptr<Store> bf;
  SNAPSINK_RETURN_IF_ERROR(Store::Open(dir, /*create=*/true, &bf));
  {
    Ingester ingester(env, bf.get(), root->config());
    ingester.SetWindowRange(first, last);
    for (const std::string& f : o.files) {
      IngestOptions io;
      io.path = f;
      io.source = f;
      io.commit_every = o.commit_every;
      io.rejects_file = filenames::BackfillRejectsFile(path, o.version, f);
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
  }

  // 4. Seal and publish in one generation, under the root's lock.
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, &lock));
  SNAPSINK_ASSIGN_OR_RETURN(done, IsDone(root->store(), o.version));
  if (done) {
    result->already_done = true;
    bf.reset();
    return RemoveBackfillState(env, path, o.version);
  }
  // What will be published: the windows to seal now and those a crashed
  // attempt already sealed. The version rule holds for all of them, checked
  // once under the lock, before anything is sealed.
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(bf.get(), root->config(), /*all=*/true, &windows));
  std::vector<PendingSnapshot> pending;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf.get(), &pending));
  std::set<int64_t> affected(windows.begin(), windows.end());
  for (const PendingSnapshot& p : pending) affected.insert(p.window_ms);
  SNAPSINK_RETURN_IF_ERROR(CheckVersion(root->store(), affected, o.version));
  SealTarget target{env, path, bf.get(), root->config().window_ms};
  std::vector<SealJob> jobs;
  for (int64_t w : windows) jobs.push_back(SealJob{w, o.version});
  SNAPSINK_RETURN_IF_ERROR(SealBatch(target, jobs, &result->sealed));
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf.get(), &pending));
  std::vector<std::pair<int64_t, uint32_t>> superseded;
  PublishResult pr;
  if (pending.empty()) {
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, meta::BackfillDoneKey(o.version), "done"));
    SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  } else {
    std::set<int64_t> published;
    for (const PendingSnapshot& p : pending) published.insert(p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(CompareTotals(root->store(), bf.get(), published, &result->impact));
    SNAPSINK_RETURN_IF_ERROR(PublishSnapshots(env, path, root->store(), pending, [&](Txn* live) {
      return AdoptBackfill(live, bf.get(), pending, o.version, &superseded);
    }, &pr));
  }
  for (const auto& [w, ver] : superseded) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(path, w, ver)));
  }
  result->generation = pr.generation;
  result->published_windows = pr.windows;
  // 5. The backfill's state has served its purpose.
  bf.reset();
  bf_lock.reset();
  return RemoveBackfillState(env, path, o.version);
}

}  // namespace snapsink
