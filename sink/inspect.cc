// The inspect views of ReadOnlySink: typed records of the live state (one
// LMDB read transaction per view) and of what is published on disk.
#include <map>

#include "engine/filenames.h"
#include "engine/state_codec.h"
#include "engine/window_records.h"
#include "engine/watermark.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "publish/publisher.h"
#include "publish/reader.h"
#include "publish/snapshot_manifest.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

namespace {

// Calls fn(key, decoded value) for every record of table t; stops at the
// first record that does not decode.
template <typename T, typename Fn>
Status ScanDecoded(Root* root, Table t, Fn&& fn) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, "", [&](std::string_view k, std::string_view v) {
    T value;
    decode = codec::Decode(v, &value);
    if (!decode.ok()) return false;
    fn(k, value);
    return true;
  }));
  return decode;
}

// Every kept generation manifest, by number, and the current generation.
Status ReadGenerations(Root* root, std::map<uint64_t, GenerationManifest>* out, uint64_t* current) {
  Env* env = root->env();
  CurrentPointer pointer;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root->path(), &pointer));
  *current = pointer.generation;
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(root->path()), &names);
  if (!s.ok() && !s.IsNotFound()) return s;
  for (const std::string& n : names) {
    uint64_t g;
    if (!filenames::ParseGenerationName(n, &g)) continue;
    GenerationManifest m;
    Status read = ReadGenerationManifest(env, root->path(), g, &m);
    if (read.IsNotFound()) continue;  // gc removed it since the listing
    SNAPSINK_RETURN_IF_ERROR(read);
    (*out)[g] = std::move(m);
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<ProducerInfo>> ReadOnlySink::Producers() const {
  std::vector<ProducerInfo> out;
  SNAPSINK_RETURN_IF_ERROR(ScanDecoded<ProducerState>(
      impl_->root.get(), Table::kProducers, [&](std::string_view id, const ProducerState& p) {
        out.push_back({std::string(id), p.epoch, p.next_seq, p.gaps.size()});
      }));
  return out;
}

Result<std::vector<GapInfo>> ReadOnlySink::Gaps() const {
  std::vector<GapInfo> out;
  SNAPSINK_RETURN_IF_ERROR(ScanDecoded<ProducerState>(
      impl_->root.get(), Table::kProducers, [&](std::string_view id, const ProducerState& p) {
        for (const Gap& g : p.gaps) out.push_back({std::string(id), p.epoch, g.lo, g.hi - 1, g.hi - g.lo});
      }));
  return out;
}

Result<std::vector<SourceInfo>> ReadOnlySink::Sources() const {
  std::vector<SourceInfo> out;
  SNAPSINK_RETURN_IF_ERROR(ScanDecoded<SourceState>(
      impl_->root.get(), Table::kSources, [&](std::string_view name, const SourceState& s) {
        out.push_back({std::string(name), s.offset, s.lines, s.applied, s.duplicates, s.fenced, s.rejected, s.ignored});
      }));
  return out;
}

Result<std::vector<WindowInfo>> ReadOnlySink::Windows() const {
  Root* root = impl_->root.get();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  // Ledger totals per window, then the window records, in one transaction.
  std::map<int64_t, Aggregate> totals;
  SNAPSINK_RETURN_IF_ERROR(LedgerTotalsByWindow(txn.get(), &totals));
  Status decode;
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
  std::optional<int64_t> wm;
  if (max_ts) wm = static_cast<int64_t>(*max_ts);
  const RootConfig& c = root->config();
  std::vector<WindowInfo> out;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState w;
    decode = codec::Decode(v, &w);
    if (!decode.ok()) return false;
    const int64_t start = codec::DecodeWindowKey(k);
    const Aggregate& t = totals[start];
    out.push_back({start, static_cast<uint64_t>(w.last_version), w.dirty,
                   WindowClosed(start, c.window_ms, wm, c.lateness_ms), t.events, t.count});
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(decode);
  return out;
}

Result<std::vector<GenerationInfo>> ReadOnlySink::Generations() const {
  std::map<uint64_t, GenerationManifest> generations;
  uint64_t current = 0;
  SNAPSINK_RETURN_IF_ERROR(ReadGenerations(impl_->root.get(), &generations, &current));
  std::vector<GenerationInfo> out;
  for (const auto& [g, m] : generations) out.push_back({g, m.parent, m.windows.size(), g == current});
  return out;
}

Result<std::vector<SnapshotInfo>> ReadOnlySink::Snapshots() const {
  Root* root = impl_->root.get();
  Env* env = root->env();
  std::map<uint64_t, GenerationManifest> generations;
  uint64_t current = 0;
  SNAPSINK_RETURN_IF_ERROR(ReadGenerations(root, &generations, &current));
  // Every published snapshot directory, and which generations use it.
  std::vector<std::string> windows;
  Status s = env->GetChildren(filenames::SnapshotsDir(root->path()), &windows);
  if (!s.ok() && !s.IsNotFound()) return s;
  std::vector<SnapshotInfo> out;
  for (const std::string& wname : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(wname, &w)) continue;
    std::vector<std::string> versions;
    SNAPSINK_RETURN_IF_ERROR(env->GetChildren(filenames::SnapshotWindowDir(root->path(), w), &versions));
    for (const std::string& vname : versions) {
      uint64_t v;
      if (!filenames::ParseVersionDirName(vname, &v)) continue;
      const std::string dir = filenames::SnapshotDir(root->path(), w, v);
      std::string text;
      SnapshotManifest m;
      SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(filenames::Join(dir, filenames::kSnapshotManifestFile), &text));
      SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, dir, &m));
      SnapshotInfo info;
      info.window_ms = w;
      info.version = v;
      info.rows = m.rows;
      info.events = m.events;
      for (const FileEntry& f : m.files) info.bytes += f.bytes;
      for (const auto& [g, gm] : generations) {
        for (const GenerationEntry& e : gm.windows) {
          if (e.window_ms == w && e.version == v) {
            ++info.generations;
            if (g == current) info.current = true;
          }
        }
      }
      out.push_back(info);
    }
  }
  return out;
}

}  // namespace snapsink::api
