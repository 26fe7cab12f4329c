// Checkpoints of a shared source's state in ROOT (docs/FORMAT.md,
// "Checkpoint file"; docs/SCALE-OUT.md). The owner of a partition copies
// its state (LMDB's compacted consistent copy, mdb_env_copy2) to its own
// disk, reads the source's epoch and position from that copy (so the name
// always matches the contents), and streams it into ROOT behind a text
// header and ahead of an XXH64 trailer: temp file, fsync, rename, fsync of
// the directory. A checkpoint is never rewritten, only pruned (create-only:
// a put-if-absent on object storage). A restore verifies the whole file
// before it makes a root of it through Root::InitWithState (init's own
// commit point).
#include <xxhash.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "engine/checkpoint_text.h"
#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/long_key.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "sink/partition_owners.h"
#include "sink/sink_impl.h"

namespace snapsink::api {
namespace {

constexpr std::string_view kMagic = "snapsink checkpoint 1\n";
constexpr size_t kChunk = size_t{1} << 20;
constexpr size_t kMaxHeader = 64 << 10;

struct Header {
  std::string source;
  uint64_t epoch = 0;
  std::string position;
  uint64_t data_bytes = 0;
};

std::string EncodeHeader(const Header& h) {
  return std::string(kMagic) + "source " + h.source + "\nepoch " + std::to_string(h.epoch) + "\nposition " +
         h.position + "\ndata " + std::to_string(h.data_bytes) + "\n\n";
}

// The header at the start of `head`; *size gets its length.
Status DecodeHeader(std::string_view head, const std::string& path, Header* h, size_t* size) {
  auto bad = [&](const std::string& why) { return Status::Corruption(path + ": not a checkpoint: " + why); };
  if (head.substr(0, kMagic.size()) != kMagic) return bad("no 'snapsink checkpoint 1' line");
  const size_t end = head.find("\n\n", kMagic.size() - 1);
  if (end == std::string_view::npos) return bad("header does not end");
  *size = end + 2;
  std::string_view rest = head.substr(kMagic.size(), end + 1 - kMagic.size());
  auto field = [&](std::string_view name, std::string* out) {
    if (rest.substr(0, name.size() + 1) != std::string(name) + " ") return false;
    const size_t nl = rest.find('\n');
    *out = std::string(rest.substr(name.size() + 1, nl - name.size() - 1));
    rest.remove_prefix(nl + 1);
    return true;
  };
  std::string epoch, data;
  if (!field("source", &h->source) || !field("epoch", &epoch) || !field("position", &h->position) ||
      !field("data", &data) || !rest.empty()) {
    return bad("header fields are not source, epoch, position, data");
  }
  if (!ParseU64(epoch, &h->epoch) || !ParseU64(data, &h->data_bytes)) return bad("epoch or data is not a number");
  return Status::OK();
}

struct Hasher {
  Hasher() { XXH64_reset(state, 0); }
  ~Hasher() { XXH64_freeState(state); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void Update(std::string_view d) { XXH64_update(state, d.data(), d.size()); }
  uint64_t Digest() const { return XXH64_digest(state); }
  XXH64_state_t* state = XXH64_createState();
};

// The epoch and position of `source` in the environment copied into dir.
Status ReadCopy(const std::string& dir, const std::string& source, uint64_t* epoch, std::string* position) {
  std::unique_ptr<Store> store;
  SNAPSINK_RETURN_IF_ERROR(Store::OpenReadOnly(dir, &store));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
  std::string_view v;
  Status s = snapsink::GetRecord(txn.get(), snapsink::Table::kSources, source, &v);
  if (s.IsNotFound()) return Status::InvalidArgument(source + ": the state has no such source to checkpoint");
  SNAPSINK_RETURN_IF_ERROR(s);
  SourceState st;
  SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &st));
  if (!st.owner_epoch || !st.position) {
    return Status::InvalidArgument(source + ": a checkpoint needs an owner epoch and a position");
  }
  *epoch = *st.owner_epoch;
  *position = *st.position;
  return Status::OK();
}

// Reads and verifies the whole checkpoint at path; calls sink(data chunk)
// for its LMDB data when given (only after the checksum holds: a second pass).
Status VerifyCheckpoint(Env* env, const std::string& path, Header* h,
                        const std::function<Status(std::string_view)>& sink) {
  std::unique_ptr<RandomAccessFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &f));
  std::string head;
  SNAPSINK_RETURN_IF_ERROR(f->Read(0, std::min<uint64_t>(f->Size(), kMaxHeader), &head));
  size_t header_size = 0;
  SNAPSINK_RETURN_IF_ERROR(DecodeHeader(head, path, h, &header_size));
  if (f->Size() != header_size + h->data_bytes + kChecksumTrailerSize) {
    return Status::Corruption(path + ": checkpoint is " + std::to_string(f->Size()) + " bytes, its header says " +
                              std::to_string(header_size + h->data_bytes + kChecksumTrailerSize));
  }
  Hasher hash;
  hash.Update(std::string_view(head).substr(0, header_size));
  std::string chunk;
  const uint64_t end = header_size + h->data_bytes;
  for (uint64_t at = header_size; at < end; at += chunk.size()) {
    SNAPSINK_RETURN_IF_ERROR(f->Read(at, std::min<uint64_t>(kChunk, end - at), &chunk));
    if (chunk.empty()) return Status::Corruption(path + ": checkpoint ends early");
    hash.Update(chunk);
  }
  std::string trailer;
  SNAPSINK_RETURN_IF_ERROR(f->Read(end, kChecksumTrailerSize, &trailer));
  if (trailer != ChecksumTrailer(hash.Digest())) return Status::Corruption(path + ": checkpoint checksum mismatch");
  if (!sink) return Status::OK();
  for (uint64_t at = header_size; at < end; at += chunk.size()) {
    SNAPSINK_RETURN_IF_ERROR(f->Read(at, std::min<uint64_t>(kChunk, end - at), &chunk));
    SNAPSINK_RETURN_IF_ERROR(sink(chunk));
  }
  return Status::OK();
}

}  // namespace

Result<CheckpointInfo> WriteCheckpoint(ReadOnlySink& handle, const Sink& state, const std::string& source,
                                       size_t keep) {
  Env* env = SinkAccess::Get(&handle)->root->env();
  const std::string& root = SinkAccess::Get(&handle)->root->path();
  const Root* local = SinkAccess::Get(static_cast<const ReadOnlySink&>(state))->root.get();
  const std::string copy = filenames::CheckpointCopyDir(local->path());
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(copy));  // a crashed checkpoint's
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(copy));
  Header h;
  Status s = local->store()->CopyCompact(copy);
  if (s.ok()) s = ReadCopy(copy, source, &h.epoch, &h.position);
  const std::string data = filenames::LmdbDataFile(copy);
  if (s.ok()) s = env->GetFileSize(data, &h.data_bytes);
  CheckpointInfo info;
  if (s.ok() && (source.find('\n') != std::string::npos || h.position.find('\n') != std::string::npos ||
                 !ParseU64(h.position, &info.offset))) {
    s = Status::InvalidArgument(source + ": a checkpoint needs a decimal position, not '" + h.position + "'");
  }
  if (s.ok()) {  // a fenced owner writes nothing
    auto newest = NewestOwner(handle, source);
    if (!newest.ok()) s = newest.status();
    else if (newest->epoch != h.epoch) {
      s = Status::Locked(source + ": not writing a checkpoint at owner epoch " + std::to_string(h.epoch) +
                         ": epoch " + std::to_string(newest->epoch) + " (" + newest->who + ") owns it now");
    }
  }
  h.source = source;
  info.source = source;
  info.epoch = h.epoch;
  info.position = h.position;
  info.path = filenames::CheckpointFile(root, source, h.epoch, info.offset);
  const std::string dir = filenames::CheckpointDir(root, source);
  const std::string tmp = info.path + ".tmp";
  if (s.ok()) s = env->CreateDirs(dir);
  std::unique_ptr<WritableFile> out;
  if (s.ok()) s = env->NewWritableFile(tmp, &out);
  if (s.ok()) {
    Hasher hash;
    const std::string header = EncodeHeader(h);
    hash.Update(header);
    s = out->Append(header);
    std::unique_ptr<RandomAccessFile> in;
    if (s.ok()) s = env->NewRandomAccessFile(data, &in);
    std::string chunk;
    for (uint64_t at = 0; s.ok() && at < h.data_bytes; at += chunk.size()) {
      s = in->Read(at, std::min<uint64_t>(kChunk, h.data_bytes - at), &chunk);
      if (s.ok() && chunk.empty()) s = Status::IOError(data + ": shorter than its size");
      if (s.ok()) hash.Update(chunk);
      if (s.ok()) s = out->Append(chunk);
    }
    if (s.ok()) s = out->Append(ChecksumTrailer(hash.Digest()));
    if (s.ok()) s = out->Sync();
    if (s.ok()) s = out->Close();
    info.bytes = header.size() + h.data_bytes + kChecksumTrailerSize;
  }
  (void)env->RemoveTree(copy);
  if (s.ok()) MaybeCrash("checkpoint.before_rename");
  if (s.ok()) s = env->RenameFile(tmp, info.path);
  if (s.ok()) s = env->SyncDir(dir);
  if (!s.ok()) {
    (void)env->RemoveFile(tmp);
    return s.Prefixed(source + ": checkpoint: ");
  }
  // Prune: the `keep` newest stay (a damaged newest one leaves an older to
  // restore), and a crashed write's temp file of an older name goes.
  SNAPSINK_ASSIGN_OR_RETURN(auto all, Checkpoints(handle, source));
  for (size_t i = std::max<size_t>(keep, 1); i < all.size(); ++i) SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(all[i].path));
  std::vector<std::string> names;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(dir, &names));
  for (const std::string& n : names) {
    uint64_t e = 0, o = 0;
    if (n.size() > 4 && n.substr(n.size() - 4) == ".tmp" &&
        filenames::ParseCheckpointName(std::string_view(n).substr(0, n.size() - 4), &e, &o) &&
        std::make_pair(e, o) < std::make_pair(info.epoch, info.offset)) {
      SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(filenames::Join(dir, n)));
    }
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
  return info;
}

Result<std::vector<CheckpointInfo>> Checkpoints(const ReadOnlySink& root, const std::string& source) {
  return CheckpointsIn(SinkAccess::Get(root)->root.get(), source);
}

Result<std::vector<CheckpointInfo>> CheckpointsIn(Root* root, const std::string& source) {
  Env* env = root->env();
  const std::string dir = filenames::CheckpointDir(root->path(), source);
  std::vector<CheckpointInfo> out;
  std::vector<std::string> names;
  Status s = env->GetChildren(dir, &names);
  if (s.IsNotFound()) return out;
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& n : names) {
    CheckpointInfo c;
    if (!filenames::ParseCheckpointName(n, &c.epoch, &c.offset)) continue;  // *.tmp
    c.source = source;
    c.position = std::to_string(c.offset);
    c.path = filenames::Join(dir, n);
    if (!env->GetFileSize(c.path, &c.bytes).ok()) continue;  // pruned meanwhile
    out.push_back(std::move(c));
  }
  std::reverse(out.begin(), out.end());  // names sort as (epoch, offset)
  return out;
}

Result<CheckpointInfo> RestoreCheckpoint(const ReadOnlySink& root, const std::string& source, const std::string& dest,
                                         uint64_t min_epoch, std::vector<std::string>* warnings) {
  Env* env = SinkAccess::Get(root)->root->env();
  SNAPSINK_ASSIGN_OR_RETURN(auto all, Checkpoints(root, source));
  for (const CheckpointInfo& c : all) {
    if (c.epoch < min_epoch) break;  // never an older epoch's over a newer state
    Header h;
    Status s = VerifyCheckpoint(env, c.path, &h, nullptr);
    if (s.ok() && (h.source != source || h.epoch != c.epoch || h.position != c.position)) {
      s = Status::Corruption(c.path + ": its header (source " + h.source + ", epoch " + std::to_string(h.epoch) +
                             ", position " + h.position + ") does not match its name");
    }
    if (!s.ok()) {
      if (warnings) warnings->push_back("warning: " + s.message() + "; trying an older checkpoint");
      continue;
    }
    s = Root::InitWithState(env, dest, [&](const std::string& dir) {
      SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
      const std::string data = filenames::LmdbDataFile(dir);
      std::unique_ptr<WritableFile> out;
      SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(data, &out));
      // Read twice: checked whole first, then copied (checkpoints are never rewritten).
      SNAPSINK_RETURN_IF_ERROR(VerifyCheckpoint(env, c.path, &h, [&](std::string_view d) { return out->Append(d); }));
      SNAPSINK_RETURN_IF_ERROR(out->Sync());
      SNAPSINK_RETURN_IF_ERROR(out->Close());
      SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
      MaybeCrash("checkpoint.restore");
      return Status::OK();
    });
    if (!s.ok()) return s.Prefixed(source + ": restoring " + c.path + ": ");
    return c;
  }
  return Status::NotFound(source + ": no checkpoint to restore");
}

}  // namespace snapsink::api
