#include "engine/state_checkpoint.h"

#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "engine/checkpoint_text.h"
#include "engine/crash_point.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/s3/s3_uri.h"
#include "engine/state_records.h"

namespace snapsink {

namespace {

constexpr std::string_view kStateCheckpointMagic1 = "snapsink state checkpoint 1\n";  // LMDB's copy, read only
constexpr std::string_view kStateCheckpointMagic2 = "snapsink state checkpoint 2\n";  // records uncompressed, read only
constexpr std::string_view kStateCheckpointMagic = "snapsink state checkpoint 3\n";
// The records go in zstd frames of whole records, each at most kFrame
// bytes before compression (or one record longer than that), at level 1:
// the checkpoint is PUT on the publish's path; on the 1M-row window's
// state level 1 made 19.2 MB of 72 MB and level 3 20.6 MB for more CPU
// (bench/RESULTS.md). Frames bound the memory of a restore's
// decompression; the same records give the same bytes.
constexpr int kZstdLevel = 1;
constexpr size_t kFrame = size_t{1} << 20;
// Frames are compressed by this many threads at once (the base of the 1M-row
// window's state: 72 MB of records, about 70 frames).
constexpr size_t kCompressThreads = 2;
// A restore reads a checkpoint object this many bytes at a time (ranged
// GETs in a bucket), so that it holds a frame and a piece, never the object.
constexpr size_t kRead = size_t{1} << 20;
constexpr size_t kHeadRead = 4096;  // a header is about 150 bytes
// A chain is at most a base and this many deltas, and its deltas' bytes at
// most half its base's; past either the next checkpoint is a new base.
// SNAPSINK_STATE_CHECKPOINT_DELTAS (tests) sets the count and drops the
// bytes rule.
constexpr uint64_t kMaxDeltas = 32;

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Reads "name value\n" lines, the names in order, into values (hex for
// `state`); false when they are not exactly those.
bool ParseFields(std::string_view text, const std::vector<std::string_view>& names, std::vector<uint64_t>* values) {
  values->clear();
  for (std::string_view name : names) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos || text.substr(0, name.size() + 1) != std::string(name) + " ") return false;
    uint64_t v = 0;
    if (!ParseU64(text.substr(name.size() + 1, nl - name.size() - 1), &v, name == "state" ? 16 : 10)) return false;
    values->push_back(v);
    text.remove_prefix(nl + 1);
  }
  return text.empty();
}

// One checkpoint object: its header, read first; its data and trailer are
// read in pieces as its records are applied (LinkReader).
struct Link {
  bool lmdb_copy = false;   // format 1: data is LMDB's data.mdb
  bool compressed = false;  // format 3: data is zstd frames of records
  uint64_t generation = 0, base = 0, parent = 0, records = 0, digest = 0;
  uint64_t raw = 0;             // the records' bytes before compression
  uint64_t start = 0, size = 0;  // where its data starts, its data's bytes
  std::string path;
  std::unique_ptr<RandomAccessFile> file;
};

std::string Header(const Link& l, size_t data_bytes) {
  return std::string(kStateCheckpointMagic) + "generation " + std::to_string(l.generation) + "\nbase " +
         std::to_string(l.base) + "\nparent " + std::to_string(l.parent) + "\nrecords " + std::to_string(l.records) +
         "\nstate " + Hex(l.digest) + "\nraw " + std::to_string(l.raw) + "\ndata " + std::to_string(data_bytes) +
         "\n\n";
}

// Decodes l's header from head, the first bytes of its object of `bytes` bytes.
Status DecodeHead(const std::string& path, uint64_t generation, std::string_view head, uint64_t bytes, Link* l) {
  auto bad = [&](const std::string& why) { return Status::Corruption(path + ": not a state checkpoint: " + why); };
  l->lmdb_copy = head.substr(0, kStateCheckpointMagic1.size()) == kStateCheckpointMagic1;
  l->compressed = head.substr(0, kStateCheckpointMagic.size()) == kStateCheckpointMagic;
  if (!l->lmdb_copy && !l->compressed && head.substr(0, kStateCheckpointMagic2.size()) != kStateCheckpointMagic2) {
    return bad("no 'snapsink state checkpoint 3' line");
  }
  const size_t end = head.find("\n\n", kStateCheckpointMagic.size() - 1);
  if (end == std::string::npos) return bad("its header does not end");
  const std::string_view fields = head.substr(kStateCheckpointMagic.size(), end + 1 - kStateCheckpointMagic.size());
  std::vector<uint64_t> v;
  if (l->lmdb_copy) {
    if (!ParseFields(fields, {"generation", "data"}, &v)) return bad("its header fields are not generation, data");
    v = {v[0], v[0], 0, 0, 0, v[1]};
  } else if (!l->compressed && !ParseFields(fields, {"generation", "base", "parent", "records", "state", "data"}, &v)) {
    return bad("its header fields are not generation, base, parent, records, state, data");
  } else if (!l->compressed) {
    v.push_back(v.back());  // raw: the data itself
  } else if (!ParseFields(fields, {"generation", "base", "parent", "records", "state", "raw", "data"}, &v)) {
    return bad("its header fields are not generation, base, parent, records, state, raw, data");
  }
  l->generation = v[0], l->base = v[1], l->parent = v[2], l->records = v[3], l->digest = v[4], l->raw = v[5];
  if (l->generation != generation) return bad("it names generation " + std::to_string(l->generation));
  if ((l->parent == 0) != (l->base == generation) || (l->parent != 0 && l->parent >= generation) ||
      l->base > generation) {
    return bad("its base " + std::to_string(l->base) + " and parent " + std::to_string(l->parent) + " do not hold");
  }
  l->start = end + 2;
  l->size = v.back();
  if (l->size > bytes || bytes - l->size != l->start + kChecksumTrailerSize) {
    return Status::Corruption(path + ": " + std::to_string(bytes) + " bytes, its header says " +
                              std::to_string(l->start + l->size + kChecksumTrailerSize));
  }
  return Status::OK();
}

// Reads a checkpoint object from its first byte, at most kRead bytes at a
// time, and checks its trailer against the XXH64 of what came before.
class LinkReader {
 public:
  explicit LinkReader(const Link& l) : l_(l), hash_(XXH64_createState()) { XXH64_reset(hash_, 0); }
  ~LinkReader() { XXH64_freeState(hash_); }
  LinkReader(const LinkReader&) = delete;
  LinkReader& operator=(const LinkReader&) = delete;

  // Whether data bytes are left to read.
  bool more() const { return at_ < l_.start + l_.size; }
  // Appends the data's next bytes (at most kRead) to *out; the header's
  // bytes are read and hashed first.
  Status Next(std::string* out) {
    if (at_ < l_.start) SNAPSINK_RETURN_IF_ERROR(Read(l_.start - at_, &chunk_));
    if (!more()) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(Read(std::min<uint64_t>(kRead, l_.start + l_.size - at_), &chunk_));
    out->append(chunk_);
    return Status::OK();
  }
  // Reads what is left of the data and the trailer: Corruption naming the
  // object when its checksum does not hold (checked before anything else is
  // said of the records it read, so a damaged object is named as such).
  Status Finish() {
    while (more() || at_ < l_.start) {
      SNAPSINK_RETURN_IF_ERROR(Next(&chunk_));
      chunk_.clear();
    }
    std::string trailer;
    SNAPSINK_RETURN_IF_ERROR(l_.file->Read(at_, kChecksumTrailerSize, &trailer));
    if (trailer != ChecksumTrailer(XXH64_digest(hash_))) return Status::Corruption("checksum mismatch");
    return Status::OK();
  }
  // Finish, or when its checksum holds, why the records do not.
  Status Fail(const Status& why) {
    Status s = Finish();
    return s.ok() ? why : s;
  }

 private:
  Status Read(uint64_t n, std::string* out) {
    out->clear();
    if (n == 0) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(l_.file->Read(at_, n, out));
    if (out->size() != n) return Status::Corruption("read short at byte " + std::to_string(at_));
    XXH64_update(hash_, out->data(), out->size());
    at_ += n;
    return Status::OK();
  }

  const Link& l_;
  XXH64_state_t* hash_;
  uint64_t at_ = 0;
  std::string chunk_;
};

// records in zstd frames of whole records (kFrame), each its own string,
// compressed by up to kCompressThreads threads: the same bytes as one
// thread makes. Each thread compresses into one buffer of its own and keeps
// only the frame's bytes (a fresh buffer per frame costs its pages zeroed).
Status Compress(std::string_view records, std::vector<std::string>* frames) {
  std::vector<std::pair<size_t, size_t>> cuts;  // each frame's records: start, length
  size_t longest = 0;
  for (size_t at = 0; at < records.size();) {
    const size_t cut = StateRecordsCut(records.substr(at), kFrame);
    if (cut == 0) return Status::Corruption("record bytes at " + std::to_string(at) + " are cut short");
    cuts.emplace_back(at, cut);
    longest = std::max(longest, cut);
    at += cut;
  }
  frames->assign(cuts.size(), std::string());
  std::vector<Status> failed(kCompressThreads);
  std::atomic<size_t> next{0};
  auto work = [&](size_t worker) {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    if (cctx == nullptr) {
      failed[worker] = Status::IOError("zstd: cannot make a compression context");
      return;
    }
    std::string buf(ZSTD_compressBound(longest), '\0');
    for (size_t i = next++; i < cuts.size(); i = next++) {
      const size_t n = ZSTD_compressCCtx(cctx.get(), buf.data(), buf.size(), records.data() + cuts[i].first,
                                         cuts[i].second, kZstdLevel);
      if (ZSTD_isError(n)) {
        failed[worker] = Status::IOError(std::string("zstd: ") + ZSTD_getErrorName(n));
        return;
      }
      (*frames)[i].assign(buf.data(), n);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(kCompressThreads, cuts.size()); ++t) threads.emplace_back(work, t);
  work(0);
  for (std::thread& t : threads) t.join();
  for (const Status& s : failed) SNAPSINK_RETURN_IF_ERROR(s);
  return Status::OK();
}

// Applies the records of a format 2 link (uncompressed), whole records at a time.
Status ApplyRecords(Txn* txn, const Link& l, LinkReader* in) {
  StateRecordsApplier applier(txn, l.records);
  std::string pending;
  while (in->more()) {
    SNAPSINK_RETURN_IF_ERROR(in->Next(&pending));
    const size_t cut = StateRecordsCut(pending, pending.size());
    if (cut == 0 && in->more()) continue;  // one record longer than what was read yet
    Status s = applier.Apply(std::string_view(pending).substr(0, cut == 0 ? pending.size() : cut));
    if (!s.ok()) return in->Fail(s);
    pending.erase(0, cut == 0 ? pending.size() : cut);
  }
  Status s = pending.empty() ? Status::OK() : applier.Apply(pending);
  if (s.ok()) s = applier.Finish();
  return s.ok() ? in->Finish() : in->Fail(s);
}

// Applies l's records to txn, a zstd frame at a time when they are
// compressed: what is held is one frame and what was read past it, never
// the whole object.
Status ApplyLink(Txn* txn, const Link& l) {
  LinkReader in(l);
  if (!l.compressed) return ApplyRecords(txn, l, &in);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (dctx == nullptr) return Status::IOError("zstd: cannot make a decompression context");
  StateRecordsApplier applier(txn, l.records);
  std::string pending, frame;
  size_t used = 0;      // of pending
  uint64_t taken = 0;   // compressed bytes before pending[used]
  uint64_t raw = 0;
  SNAPSINK_RETURN_IF_ERROR(in.Next(&pending));
  while (used < pending.size() || in.more()) {
    auto bad = [&](const std::string& why) {
      return in.Fail(Status::Corruption("its zstd frame at byte " + std::to_string(taken) + " of its records " + why +
                                        "; the checkpoint is damaged: give the --state DIR that published it"));
    };
    const std::string_view rest = std::string_view(pending).substr(used);
    const size_t n = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    if (ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_srcSize_wrong && in.more()) {
      pending.erase(0, used);  // the frame's bytes read so far, and the next piece
      used = 0;
      SNAPSINK_RETURN_IF_ERROR(in.Next(&pending));
      continue;
    }
    if (ZSTD_isError(n)) return bad(std::string("is not whole (") + ZSTD_getErrorName(n) + ")");
    const unsigned long long size = ZSTD_getFrameContentSize(rest.data(), n);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > l.raw - raw) {
      return bad("names no size within the header's raw " + std::to_string(l.raw));
    }
    frame.resize(size);
    const size_t got = ZSTD_decompressDCtx(dctx.get(), frame.data(), frame.size(), rest.data(), n);
    if (ZSTD_isError(got) || got != size) {
      return bad(std::string("does not decompress (") + (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short") + ")");
    }
    Status s = applier.Apply(frame);
    if (!s.ok()) return in.Fail(s);
    raw += size;
    used += n;
    taken += n;
  }
  Status s = raw == l.raw ? applier.Finish()
                          : Status::Corruption("its records are " + std::to_string(raw) + " bytes, its header says " +
                                               std::to_string(l.raw));
  return s.ok() ? in.Finish() : in.Fail(s);
}

// What the local copy of the state (filenames::StateCheckpointCopyDir) is:
// the state of `generation`'s checkpoint, whose chain is `chain` (its base
// first), with the bytes of its base's records and of its deltas'.
struct CopyNote {
  uint64_t generation = 0, base_bytes = 0, delta_bytes = 0;
  std::vector<uint64_t> chain;
};

std::string EncodeNote(const CopyNote& n) {
  std::string out = "generation " + std::to_string(n.generation) + "\nbase_bytes " + std::to_string(n.base_bytes) +
                    "\ndelta_bytes " + std::to_string(n.delta_bytes) + "\nchain";
  for (uint64_t g : n.chain) out += " " + std::to_string(g);
  return out + "\n";
}

bool DecodeNote(std::string_view text, CopyNote* n) {
  const size_t at = text.find("chain ");
  std::vector<uint64_t> v;
  if (at == std::string_view::npos || text.back() != '\n' ||
      !ParseFields(text.substr(0, at), {"generation", "base_bytes", "delta_bytes"}, &v)) {
    return false;
  }
  n->generation = v[0], n->base_bytes = v[1], n->delta_bytes = v[2];
  std::string_view rest = text.substr(at + 6, text.size() - at - 7);
  n->chain.clear();
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    uint64_t g = 0;
    if (!ParseU64(rest.substr(0, sp), &g) || (!n->chain.empty() && g <= n->chain.back())) return false;
    n->chain.push_back(g);
    rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  }
  return !n->chain.empty() && n->chain.back() == n->generation;
}

// One write transaction of fn on store, redone after the map grew.
Status WriteTxn(Store* store, const std::function<Status(Txn*)>& fn) {
  for (;;) {
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(store->BeginWrite(&txn));
    Status s = fn(txn.get());
    if (s.ok()) s = txn->Commit();
    txn.reset();
    if (s.ok() || !store->map_full()) return s;
    SNAPSINK_RETURN_IF_ERROR(store->GrowAfterMapFull());
  }
}

// The local copy and what it is a copy of; false when there is none whole.
bool OpenCopy(const std::string& dir, std::unique_ptr<Store>* copy, CopyNote* note) {
  if (!Store::Open(dir, /*create=*/false, copy).ok()) return false;
  std::unique_ptr<Txn> txn;
  std::string_view v;
  if (!(*copy)->BeginRead(&txn).ok() || !txn->Get(Table::kMeta, kCheckpointCopyKey, &v).ok()) return false;
  return DecodeNote(v, note);
}

// Makes dir the local copy of store's state, noted as `note`: *copy opened on it.
Status MakeCopy(Env* env, const std::string& dir, Store* store, std::unique_ptr<Store>* copy) {
  copy->reset();
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(dir));
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(dir));
  SNAPSINK_RETURN_IF_ERROR(store->CopyCompact(env->LocalPath(dir)));
  return Store::Open(env->LocalPath(dir), /*create=*/false, copy);
}

Status NoteCopy(Store* copy, const CopyNote& note, std::string_view delta, uint64_t records) {
  return WriteTxn(copy, [&](Txn* txn) {
    if (!delta.empty()) SNAPSINK_RETURN_IF_ERROR(ApplyStateRecords(txn, delta, records));
    return txn->Put(Table::kMeta, kCheckpointCopyKey, EncodeNote(note));
  });
}

uint64_t MaxDeltas(bool* bytes_rule) {
  const char* v = std::getenv("SNAPSINK_STATE_CHECKPOINT_DELTAS");
  uint64_t n = 0;
  *bytes_rule = v == nullptr || !ParseU64(v, &n);
  return *bytes_rule ? kMaxDeltas : n;
}

// Removes the checkpoints of generations below `generation` that `keep` does not name.
Status Prune(Env* env, const std::string& root, uint64_t generation, const std::set<uint64_t>& keep) {
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::StateCheckpointsDir(root), &names);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& n : names) {
    uint64_t g = 0;
    if (n.size() != 20 || !ParseU64(n, &g) || g >= generation || keep.count(g) != 0) continue;
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(StateCheckpointFile(root, g)));
  }
  return Status::OK();
}

// The checkpoint of `generation` and its parents down to their base, base first.
Status ReadChain(Env* env, const std::string& root, uint64_t generation, std::vector<Link>* chain, bool* found) {
  *found = false;
  for (uint64_t g = generation; g != 0;) {
    const std::string path = StateCheckpointFile(root, g);
    Link l;
    l.path = path;
    Status s = env->NewRandomAccessFile(path, &l.file);
    if (s.IsNotFound() && g == generation) return Status::OK();
    if (s.IsNotFound()) {
      return Status::Corruption(path + " is missing: " + StateCheckpointFile(root, chain->back().generation) +
                                " is a delta on it, so the state of generation " + std::to_string(generation) +
                                " cannot be restored; give the --state DIR that published it");
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    std::string head;
    const uint64_t bytes = l.file->Size();
    SNAPSINK_RETURN_IF_ERROR(l.file->Read(0, std::min<uint64_t>(bytes, kHeadRead), &head));
    SNAPSINK_RETURN_IF_ERROR(DecodeHead(path, g, head, bytes, &l));
    if (!chain->empty() && l.base != chain->back().base) {
      return Status::Corruption(path + ": its base is " + std::to_string(l.base) + ", its delta " +
                                StateCheckpointFile(root, chain->back().generation) + " names " +
                                std::to_string(chain->back().base));
    }
    g = l.parent;
    chain->push_back(std::move(l));
  }
  std::reverse(chain->begin(), chain->end());
  *found = true;
  return Status::OK();
}

// Builds the state of chain's last link in dir, and the local copy of it.
Status BuildFromChain(Env* env, const std::string& root, const std::string& dir, const std::vector<Link>& chain) {
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
  const Link& last = chain.back();
  const std::string path = StateCheckpointFile(root, last.generation);
  CopyNote note;
  note.generation = last.generation;
  {
    std::unique_ptr<Store> store;
    SNAPSINK_RETURN_IF_ERROR(Store::Open(env->LocalPath(dir), /*create=*/true, &store));
    for (const Link& l : chain) {
      SNAPSINK_RETURN_IF_ERROR(WriteTxn(store.get(), [&](Txn* txn) {
        return ApplyLink(txn, l).Prefixed(StateCheckpointFile(root, l.generation) + ": ");
      }));
      (l.parent == 0 ? note.base_bytes : note.delta_bytes) += l.raw;
      note.chain.push_back(l.generation);
    }
    std::unique_ptr<Txn> read;
    uint64_t digest = 0;
    SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&read));
    SNAPSINK_RETURN_IF_ERROR(StateDigest(read.get(), &digest));
    read.reset();
    if (digest != last.digest) {
      return Status::Corruption(path + ": the state its chain of " + std::to_string(chain.size()) +
                                " checkpoints makes is not the one it names (state " + Hex(digest) + ", not " +
                                Hex(last.digest) + ")");
    }
    std::unique_ptr<Store> copy;
    const std::string copy_dir = filenames::StateCheckpointCopyDir(root);
    SNAPSINK_RETURN_IF_ERROR(MakeCopy(env, copy_dir, store.get(), &copy));
    SNAPSINK_RETURN_IF_ERROR(NoteCopy(copy.get(), note, {}, 0));
  }
  return env->SyncDir(dir);
}

}  // namespace

std::string StateCheckpointFile(const std::string& root, uint64_t generation) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(generation));
  return filenames::Join(filenames::StateCheckpointsDir(root), buf);
}

Status WriteStateCheckpoint(Env* env, const std::string& root, Store* live, uint64_t generation) {
  auto* bucket = IsBucketPath(root) ? dynamic_cast<BucketRootEnv*>(env) : nullptr;
  if (bucket == nullptr || generation == 0 || !bucket->has_state_dir() || bucket->shared_publishing()) {
    return Status::OK();
  }
  const std::string path = StateCheckpointFile(root, generation);
  bool there = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(path, &there));
  if (there) return Status::OK();
  const std::string copy_dir = filenames::StateCheckpointCopyDir(root);
  std::unique_ptr<Store> copy;
  CopyNote prev;
  bool have = env->FileExists(copy_dir) && OpenCopy(env->LocalPath(copy_dir), &copy, &prev) &&
              prev.generation < generation;
  if (have) SNAPSINK_RETURN_IF_ERROR(env->Exists(StateCheckpointFile(root, prev.generation), &have));
  StateRecords records;
  bool bytes_rule = true;
  const uint64_t max_deltas = MaxDeltas(&bytes_rule);
  bool base = !have || prev.chain.size() > max_deltas;
  if (!base) {
    std::unique_ptr<Txn> from, to;
    SNAPSINK_RETURN_IF_ERROR(copy->BeginRead(&from));
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&to));
    SNAPSINK_RETURN_IF_ERROR(EncodeStateDelta(from.get(), to.get(), &records).Prefixed(path + ": "));
    base = bytes_rule && 2 * (prev.delta_bytes + records.data.size()) > prev.base_bytes;
  }
  if (base) {
    SNAPSINK_RETURN_IF_ERROR(MakeCopy(env, copy_dir, live, &copy).Prefixed(path + ": "));
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(copy->BeginRead(&txn));
    SNAPSINK_RETURN_IF_ERROR(EncodeStateBase(txn.get(), &records).Prefixed(path + ": "));
  }
  Link l;
  l.generation = generation;
  l.base = base ? generation : prev.chain.front();
  l.parent = base ? 0 : prev.generation;
  l.records = records.records;
  l.digest = records.digest;
  l.raw = records.data.size();
  std::vector<std::string> frames;
  SNAPSINK_RETURN_IF_ERROR(Compress(records.data, &frames).Prefixed(path + ": "));
  size_t data_bytes = 0;
  for (const std::string& f : frames) data_bytes += f.size();
  std::string bytes = Header(l, data_bytes);
  bytes.reserve(bytes.size() + data_bytes + kChecksumTrailerSize);
  for (std::string& f : frames) {
    bytes += f;
    std::string().swap(f);
  }
  bytes += ChecksumTrailer(XXH64(bytes.data(), bytes.size(), 0));
  MaybeCrash("publish.state_checkpoint");
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(path, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append(bytes));
  bytes.clear();
  Status s = f->Close();
  // Another writer's checkpoint of this generation: one is enough, and the
  // local copy stays the state of the one before.
  if (s.IsLocked()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  MaybeCrash("publish.state_checkpoint_copy");
  CopyNote next = base ? CopyNote{generation, records.data.size(), 0, {generation}} : prev;
  if (!base) {
    next.generation = generation;
    next.delta_bytes += records.data.size();
    next.chain.push_back(generation);
  }
  SNAPSINK_RETURN_IF_ERROR(
      NoteCopy(copy.get(), next, base ? std::string_view() : records.data, records.records).Prefixed(path + ": "));
  // Kept: the chain of this checkpoint and of the one before it (a
  // restorer that read CURRENT just before the swap still finds its own);
  // when the one before is not known, everything until the next publish.
  if (!have) return Status::OK();
  std::set<uint64_t> keep(next.chain.begin(), next.chain.end());
  keep.insert(prev.chain.begin(), prev.chain.end());
  return Prune(env, root, generation, keep);
}

Status RestoreStateCheckpoint(Env* env, const std::string& root, uint64_t generation, bool* restored) {
  *restored = false;
  std::vector<Link> chain;
  bool found = false;
  SNAPSINK_RETURN_IF_ERROR(ReadChain(env, root, generation, &chain, &found));
  if (!found) return Status::OK();
  if (chain.front().lmdb_copy && chain.size() > 1) {  // only a base can be format 1
    return Status::Corruption(StateCheckpointFile(root, chain[1].generation) + ": a delta on a format 1 checkpoint");
  }
  SNAPSINK_RETURN_IF_ERROR(Root::InitWithState(env, root, [&](const std::string& dir) {
    if (chain.front().lmdb_copy) {
      SNAPSINK_RETURN_IF_ERROR(env->CreateDir(dir));
      std::unique_ptr<WritableFile> out;
      SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(filenames::LmdbDataFile(dir), &out));
      LinkReader in(chain.front());
      for (std::string piece; in.more(); piece.clear()) {
        SNAPSINK_RETURN_IF_ERROR(in.Next(&piece).Prefixed(chain.front().path + ": "));
        SNAPSINK_RETURN_IF_ERROR(out->Append(piece));
      }
      SNAPSINK_RETURN_IF_ERROR(in.Finish().Prefixed(chain.front().path + ": "));
      SNAPSINK_RETURN_IF_ERROR(out->Sync());
      SNAPSINK_RETURN_IF_ERROR(out->Close());
      SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
    } else {
      SNAPSINK_RETURN_IF_ERROR(BuildFromChain(env, root, dir, chain));
    }
    MaybeCrash("state.restore");
    return Status::OK();
  }));
  *restored = true;
  return Status::OK();
}

}  // namespace snapsink
