#include "publish/upgrade.h"

#include <xxhash.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "publish/generation_parts.h"
#include "publish/maintenance.h"
#include "publish/old_formats.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"

namespace snapsink {

namespace {

// Sizes that tell the 32-bit records of formats 1 and 2 from format 3's.
constexpr size_t kOldWindowValueSize = 4 + 1;  // u32 last_version, u8 dirty
constexpr size_t kOldSealKeySize = 8 + 4;      // window, u32 version (big-endian)

uint64_t Hash(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

std::string Relative(const std::string& root, const std::string& path) {
  return path.compare(0, root.size() + 1, root + "/") == 0 ? path.substr(root.size() + 1) : path;
}

// Every snapshot directory under dir (snapshots/ or staging/), by window and version.
Status ListSnapshotDirs(Env* env, const std::string& dir, std::vector<std::string>* out) {
  std::vector<std::string> windows;
  Status s = env->GetChildren(dir, &windows);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& w : windows) {
    int64_t window_ms;
    if (!filenames::ParseWindowDirName(w, &window_ms)) continue;
    std::vector<std::string> versions;
    SNAPSINK_RETURN_IF_ERROR(env->GetChildren(filenames::Join(dir, w), &versions));
    std::vector<std::pair<uint64_t, std::string>> sorted;
    for (const std::string& v : versions) {
      uint64_t version;
      if (filenames::ParseVersionDirName(v, &version)) sorted.emplace_back(version, v);
    }
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [version, name] : sorted) out->push_back(filenames::Join(filenames::Join(dir, w), name));
  }
  return Status::OK();
}

// Widens the 32-bit window and seal records of one state environment.
// Records already widened (a rerun) are left alone.
Status WidenRecords(Txn* txn, bool write, uint64_t* windows, uint64_t* seals) {
  std::vector<std::pair<std::string, std::string>> old_windows, old_seals;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    if (v.size() == kOldWindowValueSize) old_windows.emplace_back(k, v);
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    if (k.size() == kOldSealKeySize) old_seals.emplace_back(k, v);
    return true;
  }));
  *windows = old_windows.size();
  *seals = old_seals.size();
  if (!write) return Status::OK();
  for (const auto& [k, v] : old_windows) {
    WindowState w;
    w.last_version = codec::GetU32(v.data());
    w.dirty = v[4] != 0;
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kWindows, k, codec::Encode(w)));
  }
  for (const auto& [k, v] : old_seals) {
    const int64_t window_ms = codec::DecodeWindowKey(k);
    uint32_t version = 0;
    for (size_t i = 8; i < kOldSealKeySize; i++) version = (version << 8) | static_cast<uint8_t>(k[i]);
    SealRecord check;
    SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &check));  // the value is the same in every format
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kSeals, k));
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSeals, codec::SealKey(window_ms, version), v));
  }
  return Status::OK();
}

// A snapshot's row sums as its manifest records them (wrapping).
struct ManifestSums {
  uint64_t rows = 0, events = 0, count = 0, sum_micros = 0;  // wrapping, as the manifest's
  void Add(int64_t c, int64_t s, int64_t e) {
    rows++;
    count += static_cast<uint64_t>(c);
    sum_micros += static_cast<uint64_t>(s);
    events += static_cast<uint64_t>(e);
  }
};

class Upgrader {
 public:
  Upgrader(Env* env, std::string root, bool dry_run, UpgradeResult* report)
      : env_(env), root_(std::move(root)), dry_run_(dry_run), report_(report) {}

  Status Run() {
    SNAPSINK_RETURN_IF_ERROR(Root::CheckIsRoot(env_, root_));
    if (!dry_run_) SNAPSINK_RETURN_IF_ERROR(LockRoot(env_, root_, &lock_));
    SNAPSINK_RETURN_IF_ERROR(ReadState());
    report_->format_after = kProducerTimesFormat;
    if (report_->format_before >= kOldestReadableFormat && report_->format_before <= kNewestFormat) {
      // Formats 3 and 4 are read as they are and become 4 with their first
      // delta run, 5 with their first producer record holding its last-seen
      // time (engine/root.h): nothing to convert.
      report_->format_after = report_->format_before;
      report_->nothing_to_do = true;
      return Status::OK();
    }
    if (report_->format_before > kNewestFormat) {
      return Status::InvalidArgument(fmt::format("{} was written by a newer snapsink (format {}); this build "
                                                 "writes format {} and cannot convert it back",
                                                 root_, report_->format_before, kNewestFormat));
    }
    SNAPSINK_RETURN_IF_ERROR(PlanSnapshots());
    SNAPSINK_RETURN_IF_ERROR(PlanGenerations());
    SNAPSINK_RETURN_IF_ERROR(CheckCurrent());
    for (const std::string& dir : snapshot_dirs_) SNAPSINK_RETURN_IF_ERROR(ConvertSnapshot(dir));
    for (uint64_t g : old_generations_) SNAPSINK_RETURN_IF_ERROR(ConvertGeneration(g));
    SNAPSINK_RETURN_IF_ERROR(ConvertCurrent());
    SNAPSINK_RETURN_IF_ERROR(ConvertBackfillStates());
    return ConvertState();
  }

 private:
  void Say(std::string line) { report_->actions.push_back(std::move(line)); }

  Status ReadState() {
    std::unique_ptr<Store> store;
    SNAPSINK_RETURN_IF_ERROR(Store::OpenReadOnly(filenames::StateDir(root_), &store));
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
    SNAPSINK_ASSIGN_OR_RETURN(auto format, Root::GetMetaU64(txn.get(), meta::kFormat));
    if (!format) return Status::Corruption(root_ + ": state has no format version");
    report_->format_before = *format;
    SNAPSINK_ASSIGN_OR_RETURN(auto current, Root::GetMetaU64(txn.get(), meta::kCurrentGeneration));
    recorded_current_ = current.value_or(0);
    SNAPSINK_ASSIGN_OR_RETURN(auto window, Root::GetMetaU64(txn.get(), meta::kWindowMs));
    window_size_ms_ = static_cast<int64_t>(window.value_or(RootConfig().window_ms));
    return Status::OK();
  }

  // Snapshots whose manifest is version 1, published and staged.
  Status PlanSnapshots() {
    std::vector<std::string> dirs;
    SNAPSINK_RETURN_IF_ERROR(ListSnapshotDirs(env_, filenames::SnapshotsDir(root_), &dirs));
    SNAPSINK_RETURN_IF_ERROR(ListSnapshotDirs(env_, filenames::StagingDir(root_), &dirs));
    for (const std::string& dir : dirs) {
      const std::string path = filenames::Join(dir, filenames::kSnapshotManifestFile);
      std::string text;
      Status s = env_->ReadFileToString(path, &text);
      if (s.IsNotFound()) continue;  // a seal that stopped half-way: sealed again later
      SNAPSINK_RETURN_IF_ERROR(s);
      uint64_t version;
      SNAPSINK_RETURN_IF_ERROR(old_format::ManifestVersion(text, path, &version));
      if (version != 1) continue;
      SNAPSINK_RETURN_IF_ERROR(CheckOldSnapshot(dir, text));
      snapshot_dirs_.push_back(dir);
    }
    return Status::OK();
  }

  // Reads every row of an old snapshot and checks it against its manifest,
  // so that damage stops the upgrade before it changes anything.
  Status CheckOldSnapshot(const std::string& dir, std::string_view text) {
    const std::string manifest_path = filenames::Join(dir, filenames::kSnapshotManifestFile);
    const std::string data = filenames::Join(dir, filenames::kDataFile);
    SnapshotManifest m;
    SNAPSINK_RETURN_IF_ERROR(old_format::DecodeSnapshotManifestV1(text, manifest_path, &m));
    if (m.files.size() != 1 || m.files[0].name != filenames::kDataFile) {
      return Status::Corruption(manifest_path + ": a snapshot of format 1 holds one file, data");
    }
    uint32_t data_version;
    SNAPSINK_RETURN_IF_ERROR(old_format::DataFileVersion(env_, data, &data_version));
    if (data_version != 1) return Status::OK();  // converted before a crash; checked as it is read
    ManifestSums t;
    SNAPSINK_RETURN_IF_ERROR(old_format::ScanDataFileV1(env_, data, m.files[0].xxh64, [&](const Row& row) {
      t.Add(row.count, row.sum_micros, row.events);
      return Status::OK();
    }));
    return CheckTotals(dir, m, t);
  }

  Status CheckTotals(const std::string& dir, const SnapshotManifest& m, const ManifestSums& t) {
    if (t.rows != m.rows || static_cast<int64_t>(t.events) != m.events || static_cast<int64_t>(t.count) != m.count ||
        static_cast<int64_t>(t.sum_micros) != m.sum_micros) {
      return Status::Corruption(fmt::format("{}: the rows of {} do not add up to its manifest's totals",
                                            Relative(root_, dir), filenames::kDataFile));
    }
    return Status::OK();
  }

  // Generation manifests of version 1, and their links to the snapshot
  // manifests still of version 1 (checked before any is rewritten).
  Status PlanGenerations() {
    std::vector<uint64_t> generations;
    SNAPSINK_RETURN_IF_ERROR(ListGenerations(env_, root_, &generations));
    for (uint64_t g : generations) {
      const std::string path = filenames::GenerationManifest(root_, g);
      std::string text;
      SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(path, &text));
      uint64_t version;
      SNAPSINK_RETURN_IF_ERROR(old_format::ManifestVersion(text, path, &version));
      if (version != 1) continue;
      GenerationManifest m;
      SNAPSINK_RETURN_IF_ERROR(old_format::DecodeGenerationManifestV1(text, path, &m));
      if (m.generation != g) return Status::Corruption(fmt::format("{}: names generation {}", path, m.generation));
      for (const GenerationEntry& w : m.windows) {
        const std::string snapshot =
            filenames::Join(filenames::SnapshotDir(root_, w.window_ms, w.version), filenames::kSnapshotManifestFile);
        std::string bytes;
        Status s = env_->ReadFileToString(snapshot, &bytes);
        if (s.IsNotFound()) {
          return Status::Corruption(fmt::format("{}: names {}, which is missing", path, Relative(root_, snapshot)));
        }
        SNAPSINK_RETURN_IF_ERROR(s);
        uint64_t snapshot_version;
        SNAPSINK_RETURN_IF_ERROR(old_format::ManifestVersion(bytes, snapshot, &snapshot_version));
        if (snapshot_version == 1 && Hash(bytes) != w.manifest_xxh64) {
          return Status::Corruption(
              fmt::format("{}: {} does not hash to the manifest_xxh64 it records", path, Relative(root_, snapshot)));
        }
      }
      old_generations_.push_back(g);
    }
    return Status::OK();
  }

  // CURRENT must name what the state records as current: an older build
  // that stopped between the two is finished by that build, not guessed at.
  Status CheckCurrent() {
    std::string text;
    Status s = env_->ReadFileToString(filenames::Current(root_), &text);
    if (s.IsNotFound()) {
      if (recorded_current_ != 0) {
        return Status::Corruption(fmt::format("{}: CURRENT is missing, but the state records generation {}",
                                              root_, recorded_current_));
      }
      return Status::OK();
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    uint64_t g = 0;
    CurrentPointer c;
    if (old_format::ParseCurrentV1(text, &g)) {
      current_v1_ = g;
    } else {
      SNAPSINK_RETURN_IF_ERROR(DecodeCurrent(text, filenames::Current(root_), &c));
      g = c.generation;
    }
    if (g != recorded_current_) {
      return Status::InvalidArgument(fmt::format(
          "{}: CURRENT names generation {}, but the state records generation {}: a publish of the older snapsink "
          "stopped half-way; finish it with that build (snapsink publish {}), then upgrade",
          root_, g, recorded_current_, root_));
    }
    return Status::OK();
  }

  Status ConvertSnapshot(const std::string& dir) {
    const std::string manifest_path = filenames::Join(dir, filenames::kSnapshotManifestFile);
    const std::string data = filenames::Join(dir, filenames::kDataFile);
    std::string text;
    SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(manifest_path, &text));
    SnapshotManifest m;
    SNAPSINK_RETURN_IF_ERROR(old_format::DecodeSnapshotManifestV1(text, manifest_path, &m));  // checked by the plan
    uint32_t data_version;
    SNAPSINK_RETURN_IF_ERROR(old_format::DataFileVersion(env_, data, &data_version));
    if (dry_run_) {
      Say(fmt::format("would convert {}: data format {} -> 3, manifest format 1 -> 2", Relative(root_, dir),
                      data_version));
      return Status::OK();
    }
    ManifestSums t;
    SnapshotFileInfo info;
    if (data_version == 1) {
      const std::string tmp = data + ".tmp";
      std::unique_ptr<SnapshotWriter> writer;
      SNAPSINK_RETURN_IF_ERROR(SnapshotWriter::Open(env_, tmp, &writer));
      SNAPSINK_RETURN_IF_ERROR(old_format::ScanDataFileV1(env_, data, m.files[0].xxh64, [&](const Row& row) {
        t.Add(row.count, row.sum_micros, row.events);
        return writer->Add(row);
      }));
      SNAPSINK_RETURN_IF_ERROR(writer->Finish(&info));  // synced
      SNAPSINK_RETURN_IF_ERROR(env_->RenameFile(tmp, data));
      SNAPSINK_RETURN_IF_ERROR(env_->SyncDir(dir));
      MaybeCrash("upgrade.snapshot_data");
    } else {
      // Converted before a crash: the rows come from the new file.
      std::string bytes;
      SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(data, &bytes));
      info.bytes = bytes.size();
      info.xxh64 = Hash(bytes);
      std::unique_ptr<SnapshotReader> reader;
      SNAPSINK_RETURN_IF_ERROR(SnapshotReader::Open(env_, data, &reader));
      std::function<void(const RowView&)> visit = [&](const RowView& r) { t.Add(r.count, r.sum_micros, r.events); };
      SNAPSINK_RETURN_IF_ERROR(reader->VerifyAll(info.xxh64, &visit));
    }
    SNAPSINK_RETURN_IF_ERROR(CheckTotals(dir, m, t));
    m.files[0].bytes = info.bytes;
    m.files[0].xxh64 = info.xxh64;
    SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env_, manifest_path, m.Encode()));
    Say(fmt::format("converted {}: data format {} -> 3, manifest format 1 -> 2", Relative(root_, dir), data_version));
    MaybeCrash("upgrade.snapshot");
    return Status::OK();
  }

  Status ConvertGeneration(uint64_t g) {
    const std::string path = filenames::GenerationManifest(root_, g);
    if (dry_run_) {
      Say(fmt::format("would convert {}: generation manifest format 1 -> 4 (parts)", Relative(root_, path)));
      return Status::OK();
    }
    std::string text;
    SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(path, &text));
    GenerationManifest m;
    SNAPSINK_RETURN_IF_ERROR(old_format::DecodeGenerationManifestV1(text, path, &m));
    for (GenerationEntry& w : m.windows) {
      const std::string snapshot =
          filenames::Join(filenames::SnapshotDir(root_, w.window_ms, w.version), filenames::kSnapshotManifestFile);
      std::string bytes;
      SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(snapshot, &bytes));
      SnapshotManifest check;  // converted by now
      SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(bytes, snapshot, &check));
      w.manifest_xxh64 = Hash(bytes);
    }
    // Parts first (crash point upgrade.part_written), then the top manifest
    // over the old one: a rerun finds the parts there, with the same bytes.
    std::vector<std::string> parts;
    m.depth = kPartDepth;
    BuildPartTree(window_size_ms_, m.windows, &m.parts, &parts);
    SNAPSINK_RETURN_IF_ERROR(WriteParts(env_, root_, parts, "upgrade"));
    SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env_, path, m.Encode()));
    Say(fmt::format("converted {}: generation manifest format 1 -> 4 (parts)", Relative(root_, path)));
    MaybeCrash("upgrade.manifest");
    return Status::OK();
  }

  Status ConvertCurrent() {
    if (!current_v1_) return Status::OK();
    const uint64_t g = *current_v1_;
    if (dry_run_) {
      Say(fmt::format("would rewrite CURRENT: generation {} and the XXH64 of its manifest", g));
      return Status::OK();
    }
    std::string bytes;
    SNAPSINK_RETURN_IF_ERROR(env_->ReadFileToString(filenames::GenerationManifest(root_, g), &bytes));
    current_xxh64_ = Hash(bytes);
    SNAPSINK_RETURN_IF_ERROR(StageCurrent(env_, root_, CurrentPointer{g, current_xxh64_}));
    SNAPSINK_RETURN_IF_ERROR(InstallCurrent(env_, root_));
    Say(fmt::format("rewrote CURRENT: generation {} and the XXH64 of its manifest", g));
    MaybeCrash("upgrade.current");
    return Status::OK();
  }

  Status ConvertBackfillStates() {
    std::vector<std::string> names;
    SNAPSINK_RETURN_IF_ERROR(env_->GetChildren(filenames::StateDir(root_), &names));
    for (const std::string& name : names) {
      uint64_t version;
      if (name.rfind("backfill-", 0) != 0 || !filenames::ParseVersionDirName(name.substr(9), &version)) continue;
      const std::string dir = filenames::BackfillStateDir(root_, version);
      if (!env_->FileExists(filenames::LmdbDataFile(dir))) continue;  // nothing ingested yet
      std::unique_ptr<Store> store;
      SNAPSINK_RETURN_IF_ERROR(dry_run_ ? Store::OpenReadOnly(dir, &store) : Store::Open(dir, false, &store));
      std::unique_ptr<Txn> txn;
      SNAPSINK_RETURN_IF_ERROR(dry_run_ ? store->BeginRead(&txn) : store->BeginWrite(&txn));
      uint64_t windows = 0, seals = 0;
      SNAPSINK_RETURN_IF_ERROR(WidenRecords(txn.get(), !dry_run_, &windows, &seals));
      if (windows == 0 && seals == 0) continue;
      if (!dry_run_) SNAPSINK_RETURN_IF_ERROR(txn->Commit());
      Say(fmt::format("{} state of backfill v{}: {} window records and {} seal records to 64-bit versions",
                      dry_run_ ? "would widen the" : "widened the", version, windows, seals));
      if (!dry_run_) MaybeCrash("upgrade.backfill_state");
    }
    return Status::OK();
  }

  // The commit point: after it the root is of this build's format.
  Status ConvertState() {
    std::unique_ptr<Store> store;
    const std::string dir = filenames::StateDir(root_);
    SNAPSINK_RETURN_IF_ERROR(dry_run_ ? Store::OpenReadOnly(dir, &store) : Store::Open(dir, false, &store));
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(dry_run_ ? store->BeginRead(&txn) : store->BeginWrite(&txn));
    uint64_t windows = 0, seals = 0;
    SNAPSINK_RETURN_IF_ERROR(WidenRecords(txn.get(), !dry_run_, &windows, &seals));
    const std::string what = fmt::format("state: {} window records and {} seal records to 64-bit versions, format {} -> {}",
                                         windows, seals, report_->format_before, kProducerTimesFormat);
    if (dry_run_) {
      Say("would convert the " + what);
      return Status::OK();
    }
    if (recorded_current_ != 0) {
      if (!current_v1_) {  // CURRENT rewritten by a run that crashed after it
        CurrentPointer c;
        SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env_, root_, &c));
        current_xxh64_ = c.manifest_xxh64;
      }
      SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kCurrentManifestXxh64, current_xxh64_));
    }
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kFormat, kProducerTimesFormat));
    SNAPSINK_RETURN_IF_ERROR(txn->Commit());
    Say("converted the " + what);
    return Status::OK();
  }

  Env* const env_;
  const std::string root_;
  const bool dry_run_;
  UpgradeResult* const report_;
  std::unique_ptr<FileLock> lock_;
  uint64_t recorded_current_ = 0;
  int64_t window_size_ms_ = 0;
  std::vector<std::string> snapshot_dirs_;
  std::vector<uint64_t> old_generations_;
  std::optional<uint64_t> current_v1_;
  uint64_t current_xxh64_ = 0;
};

}  // namespace

Status UpgradeRoot(Env* env, const std::string& root, bool dry_run, UpgradeResult* report) {
  *report = UpgradeResult();
  return Upgrader(env, root, dry_run, report).Run();
}

}  // namespace snapsink
