#include "partitions/partition_seals.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/gap_spill.h"
#include "engine/s3/s3_uri.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_records.h"
#include "snapshot/checked_json.h"
#include "snapshot/json_members.h"

namespace snapsink {
namespace {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr std::string_view kSealFormat = "snapsink.partition_seal";
constexpr std::string_view kProgressFormat = "snapsink.partition_progress";
constexpr std::string_view kProducersFormat = "snapsink.partition_producers";
constexpr uint64_t kRecordFormatVersion = 1;
// partitions/<source>/producers (docs/FORMAT.md section 7).
std::string PartitionProducersFile(const std::string& root, const std::string& source) {
  return filenames::Join(filenames::PartitionDir(root, source), "producers");
}
// The producers of a partition's state (its producer table, by id) with
// the range of seqs their epoch applied, for the merged publish's split
// check. The applied seqs are [0, next_seq) less the open gaps, so the
// first is 0 unless the lowest open gap (spilled ones lie below the
// record's) starts at 0; a producer with nothing applied is left out.
Status ReadStateProducers(Root* state, std::vector<PartitionProducers::Producer>* out) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(state->store()->BeginRead(&txn));
  Status st;
  std::vector<size_t> spilled;  // entries whose lowest open gap is in the spill table
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducers, "", [&](std::string_view k, std::string_view v) {
    ProducerState ps;
    std::optional<ProducerSeen> seen;
    st = codec::DecodeProducer(v, &ps, &seen);
    if (!st.ok() || ps.next_seq == 0) return st.ok();
    const bool from_zero = ps.spilled == 0 && !ps.gaps.empty() && ps.gaps.front().lo == 0;
    if (ps.spilled > 0) spilled.push_back(out->size());
    out->push_back({std::string(k), ps.epoch, from_zero ? ps.gaps.front().hi : 0, ps.next_seq - 1});
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  for (size_t i : spilled) {
    PartitionProducers::Producer& p = (*out)[i];
    std::optional<Gap> lowest;
    SNAPSINK_RETURN_IF_ERROR(LowestSpilledGap(txn.get(), p.id, p.epoch, &lowest));
    if (lowest && lowest->lo == 0) p.first = lowest->hi;
  }
  return Status::OK();
}
// Replaces partitions/<source>/producers with the state's, when they differ:
// a compare-and-swap on the version read here, as progress is (in a bucket
// an object under a fixed name is never created twice, and an owner that
// lost the partition meanwhile loses the swap: Locked).
Status WriteProducersIfChanged(Env* env, const std::string& root, Root* state, const PartitionRound& round) {
  PartitionProducers producers;
  producers.topic = round.topic;
  producers.partition = round.partition;
  SNAPSINK_RETURN_IF_ERROR(ReadStateProducers(state, &producers.producers));
  const std::string file = PartitionProducersFile(root, PartitionSource(round.topic, round.partition));
  const std::string text = producers.Encode();
  std::string in_place, version;
  Status read = env->ReadFileVersioned(file, &in_place, &version);
  if (!read.ok() && !read.IsNotFound()) return read;
  if (read.ok() && in_place == text) return Status::OK();
  if (!read.ok()) version.clear();
  std::string new_version;
  return env->ReplaceFileIfVersion(file, text, version, &new_version);
}
// Meta key of a partition's state: the position of its last recorded round.
constexpr char kRecordedToKey[] = "partition_seals/recorded_to";

std::string HexBytes(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

bool UnhexBytes(std::string_view h, std::string* out) {
  if (h.size() % 2) return false;
  out->clear();
  for (size_t i = 0; i < h.size(); i += 2) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int a = nib(h[i]), b = nib(h[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}

// `topic` (its bytes in hex) and `partition` (0..INT32_MAX) of a seal record or progress.
Status ReadTopicPartition(MemberReader& r, simdjson::dom::object o, std::string* topic, int32_t* partition) {
  std::string hex;
  int64_t p = 0;
  SNAPSINK_RETURN_IF_ERROR(r.String(o, "topic", &hex));
  if (!UnhexBytes(hex, topic)) return r.Bad("topic", "not hex");
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "partition", &p));
  if (p < 0 || p > INT32_MAX) return r.Bad("partition", "out of range");
  *partition = static_cast<int32_t>(p);
  return Status::OK();
}

}  // namespace

std::string PartitionSource(const std::string& topic, int32_t partition) {
  return "kafka:" + topic + "/" + std::to_string(partition);
}

std::string PartitionSealRecord::Encode() const {
  std::string out = fmt::format(
      "{{\"format\":\"{}\",\"format_version\":{},\"topic\":\"{}\",\"partition\":{},\"epoch\":{},\"window_ms\":{},"
      "\"version\":{},\"from\":{},\"to\":{},\"rows\":{},\"data_bytes\":{},\"data_xxh64\":\"{}\",\"ledger\":[",
      kSealFormat, kRecordFormatVersion, HexBytes(topic), partition, epoch, window_ms, version, from, to, rows, data_bytes,
      Hex64(data_xxh64));
  for (size_t i = 0; i < ledger.size(); ++i) {
    const LedgerEntry& e = ledger[i];
    out += fmt::format("{}{{\"metric\":\"{}\",\"events\":{},\"count\":{},\"sum_micros\":{}}}", i ? "," : "",
                       HexBytes(e.metric), e.totals.events, e.totals.count, e.totals.sum_micros);
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status PartitionSealRecord::Decode(std::string_view text, const std::string& name, PartitionSealRecord* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kSealFormat, kRecordFormatVersion, &r, &parser, &o, name));
  PartitionSealRecord s;
  std::string hex;
  SNAPSINK_RETURN_IF_ERROR(ReadTopicPartition(r, o, &s.topic, &s.partition));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "epoch", UINT64_MAX, &s.epoch));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "window_ms", &s.window_ms));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "version", UINT64_MAX, &s.version));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "from", &s.from));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "to", &s.to));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "rows", UINT64_MAX, &s.rows));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "data_bytes", UINT64_MAX, &s.data_bytes));
  SNAPSINK_RETURN_IF_ERROR(r.Hex(o, "data_xxh64", &s.data_xxh64));
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "ledger", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object lo;
    SNAPSINK_RETURN_IF_ERROR(r.Object(e, "ledger[]", &lo));
    LedgerEntry l;
    SNAPSINK_RETURN_IF_ERROR(r.String(lo, "metric", &hex));
    if (!UnhexBytes(hex, &l.metric)) return r.Bad("ledger", "metric not hex");
    SNAPSINK_RETURN_IF_ERROR(r.Int(lo, "events", &l.totals.events));
    SNAPSINK_RETURN_IF_ERROR(r.Int(lo, "count", &l.totals.count));
    SNAPSINK_RETURN_IF_ERROR(r.Int(lo, "sum_micros", &l.totals.sum_micros));
    if (!s.ledger.empty() && !(s.ledger.back().metric < l.metric)) return r.Bad("ledger", "not sorted or not unique");
    s.ledger.push_back(std::move(l));
  }
  if (s.from > s.to) return r.Bad("from", "after to");
  *out = std::move(s);
  return Status::OK();
}

std::string PartitionProgress::Encode() const {
  std::string out = fmt::format(
      "{{\"format\":\"{}\",\"format_version\":{},\"topic\":\"{}\",\"partition\":{},\"epoch\":{},\"position\":{},"
      "\"high_watermark\":{},\"has_event_ts\":{},\"max_event_ts\":{},\"unsealed\":[",
      kProgressFormat, kRecordFormatVersion, HexBytes(topic), partition, epoch, position, high_watermark,
      max_event_ts ? 1 : 0, max_event_ts.value_or(0));
  for (size_t i = 0; i < unsealed.size(); ++i) out += fmt::format("{}{}", i ? "," : "", unsealed[i]);
  out += "],\"seals\":[";
  for (size_t i = 0; i < seals.size(); ++i) {
    const PartitionSealRef& s = seals[i];
    out += fmt::format("{}{{\"window_ms\":{},\"version\":{},\"epoch\":{},\"to\":{}}}", i ? "," : "", s.window_ms,
                       s.version, s.epoch, s.to);
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status PartitionProgress::Decode(std::string_view text, const std::string& name, PartitionProgress* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kProgressFormat, kRecordFormatVersion, &r, &parser, &o, name));
  PartitionProgress p;
  int64_t has_ts = 0, ts = 0;
  SNAPSINK_RETURN_IF_ERROR(ReadTopicPartition(r, o, &p.topic, &p.partition));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "epoch", UINT64_MAX, &p.epoch));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "position", &p.position));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "high_watermark", &p.high_watermark));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "has_event_ts", &has_ts));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "max_event_ts", &ts));
  if (has_ts) p.max_event_ts = ts;
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "unsealed", &arr));
  for (simdjson::dom::element e : arr) {
    int64_t w = 0;
    if (e.get_int64().get(w) != simdjson::SUCCESS) return r.Bad("unsealed", "not an integer");
    p.unsealed.push_back(w);
  }
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "seals", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object so;
    SNAPSINK_RETURN_IF_ERROR(r.Object(e, "seals[]", &so));
    PartitionSealRef s;
    SNAPSINK_RETURN_IF_ERROR(r.Int(so, "window_ms", &s.window_ms));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(so, "version", UINT64_MAX, &s.version));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(so, "epoch", UINT64_MAX, &s.epoch));
    SNAPSINK_RETURN_IF_ERROR(r.Int(so, "to", &s.to));
    if (!p.seals.empty() && !(p.seals.back().window_ms < s.window_ms)) return r.Bad("seals", "not sorted by window");
    p.seals.push_back(s);
  }
  *out = std::move(p);
  return Status::OK();
}

std::string PartitionProducers::Encode() const {
  std::string out = fmt::format("{{\"format\":\"{}\",\"format_version\":{},\"topic\":\"{}\",\"partition\":{},"
                                "\"producers\":[",
                                kProducersFormat, kRecordFormatVersion, HexBytes(topic), partition);
  for (size_t i = 0; i < producers.size(); ++i) {
    const Producer& p = producers[i];
    out += fmt::format("{}{{\"id\":\"{}\",\"epoch\":{},\"first\":{},\"last\":{}}}", i ? "," : "", HexBytes(p.id),
                       p.epoch, p.first, p.last);
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status PartitionProducers::Decode(std::string_view text, const std::string& name, PartitionProducers* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kProducersFormat, kRecordFormatVersion, &r, &parser, &o, name));
  PartitionProducers p;
  SNAPSINK_RETURN_IF_ERROR(ReadTopicPartition(r, o, &p.topic, &p.partition));
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "producers", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object po;
    std::string_view hex;
    Producer producer;
    if (e.get_object().get(po) != simdjson::SUCCESS) return r.Bad("producers", "an entry is not an object");
    if (po["id"].get_string().get(hex) != simdjson::SUCCESS || !UnhexBytes(hex, &producer.id)) {
      return r.Bad("producers", "an id is not a hex string");
    }
    SNAPSINK_RETURN_IF_ERROR(r.Uint32(po, "epoch", &producer.epoch));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(po, "first", UINT64_MAX, &producer.first));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(po, "last", UINT64_MAX, &producer.last));
    if (producer.first > producer.last) return r.Bad("producers", "first is above last");
    if (!p.producers.empty() && !(p.producers.back().id < producer.id)) {
      return r.Bad("producers", "not sorted or not unique");
    }
    p.producers.push_back(std::move(producer));
  }
  *out = std::move(p);
  return Status::OK();
}

Status ReadPartitionProducers(Env* env, const std::string& root, const std::string& source, PartitionProducers* out) {
  const std::string path = PartitionProducersFile(root, source);
  std::string text;
  SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(path, &text));
  return PartitionProducers::Decode(text, path, out);
}

bool PartitionProgress::Past(int64_t w, int64_t window_ms, int64_t lateness_ms) const {
  if (std::binary_search(unsealed.begin(), unsealed.end(), w)) return false;
  return position >= high_watermark || WindowClosed(w, window_ms, max_event_ts, lateness_ms);
}

Status ReadPartitionProgress(Env* env, const std::string& root, const std::string& source, PartitionProgress* out) {
  const std::string path = filenames::PartitionProgressFile(root, source);
  std::string text;
  SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(path, &text));
  return PartitionProgress::Decode(text, path, out);
}

namespace {

// Writes the record of (w, version) into <final>.tmp/ (data, seal.json), synced.
Status WriteRecordTemp(Env* env, const std::string& state_root, const std::string& tmp, const SealRecord& local,
                       PartitionSealRecord* rec) {
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(tmp));
  SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(tmp));
  // The staged snapshot file of the partition's state, byte for byte.
  std::string data;
  SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(
      filenames::Join(filenames::StagingSnapshotDir(state_root, rec->window_ms, rec->version), filenames::kDataFile),
      &data));
  rec->rows = local.rows;
  rec->ledger = local.ledger;
  rec->data_bytes = data.size();
  rec->data_xxh64 = XXH64(data.data(), data.size(), 0);
  for (const auto& [name, bytes] : {std::pair<const char*, std::string>{filenames::kDataFile, std::move(data)},
                                    {filenames::kSealRecordFile, rec->Encode()}}) {
    std::unique_ptr<WritableFile> f;
    SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(filenames::Join(tmp, name), &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(bytes));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    SNAPSINK_RETURN_IF_ERROR(f->Close());
  }
  return env->SyncDir(tmp);
}

Status NewestClaim(Env* env, const std::string& root, const std::string& source, uint64_t* epoch, std::string* who) {
  *epoch = 0;
  const std::string dir = filenames::OwnerDir(root, source);
  std::vector<std::string> children;
  bool exists = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(dir, &exists));
  if (!exists) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(dir, &children));
  std::string newest;
  for (const std::string& c : children) {
    uint64_t e = 0;
    if (filenames::ParseOwnerClaimName(c, &e) && e > *epoch) {
      *epoch = e;
      newest = c;
    }
  }
  if (*epoch > 0) {
    (void)env->ReadFileToString(filenames::Join(dir, newest), who);
    while (!who->empty() && who->back() == '\n') who->pop_back();
  }
  return Status::OK();
}

// What a partition's state holds for a round: each staged seal's ledger
// (locals) and its record, where the last recorded round ended (from), the
// newest event time and the windows with unsealed changes (into next).
Status ReadStagedSeals(Root* state, const PartitionRound& round, std::vector<PartitionSealRecord>* records,
                       std::vector<SealRecord>* locals, PartitionProgress* next, int64_t* from) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(state->store()->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto recorded, Root::GetMetaU64(txn.get(), kRecordedToKey));
  *from = static_cast<int64_t>(recorded.value_or(0));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
  if (max_ts) next->max_event_ts = static_cast<int64_t>(*max_ts);
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState ws;
    st = codec::Decode(v, &ws);
    if (!st.ok()) return false;
    if (ws.dirty) next->unsealed.push_back(codec::DecodeWindowKey(k));
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  std::vector<std::pair<int64_t, uint64_t>> staged;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    SealRecord local;
    st = codec::Decode(v, &local);
    if (!st.ok()) return false;
    int64_t w;
    uint64_t version;
    codec::DecodeSealKey(k, &w, &version);
    if (local.state == SealState::kStaged) {
      staged.emplace_back(w, version);
      locals->push_back(std::move(local));
    }
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  for (const auto& [w, version] : staged) {
    PartitionSealRecord r;
    r.topic = round.topic;
    r.partition = round.partition;
    r.epoch = round.epoch;
    r.window_ms = w;
    r.version = version;
    r.from = *from;
    r.to = round.position;
    records->push_back(std::move(r));
  }
  return Status::OK();
}

}  // namespace

Status RecordPartitionSeals(Env* env, const std::string& root, Root* state, const PartitionRound& round,
                            std::vector<std::pair<int64_t, uint64_t>>* recorded_out) {
  const std::string source = PartitionSource(round.topic, round.partition);
  // 1. What the state holds: each seal's ledger, where the last round ended,
  // the newest event time and the windows with unsealed changes.
  std::vector<PartitionSealRecord> records;
  std::vector<SealRecord> locals;
  PartitionProgress next;
  next.topic = round.topic;
  next.partition = round.partition;
  next.epoch = round.epoch;
  next.position = round.position;
  next.high_watermark = round.high_watermark;
  int64_t from = 0;
  SNAPSINK_RETURN_IF_ERROR(ReadStagedSeals(state, round, &records, &locals, &next, &from));
  std::sort(next.unsealed.begin(), next.unsealed.end());
  if (from > round.position) {
    return Status::InvalidArgument(source + ": the state's position " + std::to_string(round.position) +
                                   " is before its last recorded round's end " + std::to_string(from));
  }

  // 2. The records, each in its temp directory, synced: nothing names them yet.
  const std::string seals_dir = filenames::PartitionSealsDir(root, source);
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, seals_dir));
  for (size_t i = 0; i < records.size(); ++i) {
    const PartitionSealRecord& r = records[i];
    const std::string dir = filenames::PartitionSealDir(root, source, r.window_ms, r.version, r.epoch);
    SNAPSINK_RETURN_IF_ERROR(WriteRecordTemp(env, state->path(), dir + ".tmp", locals[i], &records[i]));
  }

  // 3. Under the partition's claim lock: still the newest owner, offsets
  // that follow the accepted ones; then the records and progress in place.
  std::unique_ptr<FileLock> lock;
  for (int waited = 0;; waited += 5) {
    Status s = env->LockFile(filenames::OwnerLockFile(root, source), &lock);
    if (s.ok()) break;
    if (!s.IsLocked() || waited >= kClaimLockWaitMs) return s.Prefixed(source + ": sealing: ");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  uint64_t newest = 0;
  std::string who;
  SNAPSINK_RETURN_IF_ERROR(NewestClaim(env, root, source, &newest, &who));
  auto refused = [&](const std::string& why) {
    for (const PartitionSealRecord& r : records) {
      (void)env->RemoveTree(filenames::PartitionSealDir(root, source, r.window_ms, r.version, r.epoch) + ".tmp");
    }
    std::string what = records.empty() ? std::string("progress")
                                        : "seal of window " + FormatIso(records[0].window_ms) + " v" +
                                              std::to_string(records[0].version) +
                                              (records.size() > 1 ? " (and " + std::to_string(records.size() - 1) +
                                                                        " more)"
                                                                  : std::string());
    return Status::Locked(source + ": " + what + " from owner epoch " + std::to_string(round.epoch) +
                          " refused: " + why);
  };
  if (newest != round.epoch) {
    return refused("the partition's newest owner is epoch " + std::to_string(newest) + " (" + who + ")");
  }
  // Read with its version: in a bucket the claim lock excludes nobody on
  // another machine, so progress is replaced by a compare-and-swap on what
  // was read here (a zombie that passed the claim check above loses it).
  PartitionProgress prev;
  const std::string progress_path = filenames::PartitionProgressFile(root, source);
  std::string prev_text, prev_version;
  Status ps = env->ReadFileVersioned(progress_path, &prev_text, &prev_version);
  if (ps.ok()) ps = PartitionProgress::Decode(prev_text, progress_path, &prev);
  if (!ps.ok() && !ps.IsNotFound()) return ps;
  const bool have_prev = ps.ok();
  if (!have_prev) prev_version.clear();
  if (have_prev) {
    if (prev.epoch > round.epoch) {
      return refused("progress was recorded by epoch " + std::to_string(prev.epoch));
    }
    // The same owner's rounds tile the offsets; a new owner's state starts
    // at or before where the last accepted round ended (never leaving a hole).
    const bool follows = prev.epoch == round.epoch ? from == prev.position : from <= prev.position;
    if (!follows) {
      return refused("offsets " + std::to_string(from) + ".." + std::to_string(round.position) +
                     " do not follow the accepted ones (which end at " + std::to_string(prev.position) +
                     ", epoch " + std::to_string(prev.epoch) + ")");
    }
  }
  MaybeCrash("partition.seal_record");
  for (const PartitionSealRecord& r : records) {
    const std::string dir = filenames::PartitionSealDir(root, source, r.window_ms, r.version, r.epoch);
    // The same work recorded by a crashed attempt: create-only. (In a bucket
    // a record is whole once its seal.json is there, which is uploaded last;
    // a part of one is uploaded again, the same bytes.)
    bool in_place = false;
    SNAPSINK_RETURN_IF_ERROR(
        env->Exists(IsBucketPath(dir) ? filenames::Join(dir, filenames::kSealRecordFile) : dir, &in_place));
    if (in_place) {
      SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(dir + ".tmp"));
    } else {
      SNAPSINK_RETURN_IF_ERROR(env->RenameFile(dir + ".tmp", dir));
    }
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(seals_dir));
  // Each window's accepted seal: the one read furthest into the partition
  // (every seal holds the window's rows as of its `to`).
  std::map<int64_t, PartitionSealRef> by_window;
  if (have_prev) {
    for (const PartitionSealRef& s : prev.seals) by_window[s.window_ms] = s;
  }
  for (const PartitionSealRecord& r : records) {
    PartitionSealRef ref{r.window_ms, r.version, r.epoch, r.to};
    auto it = by_window.find(r.window_ms);
    if (it == by_window.end() || it->second.to <= r.to) by_window[r.window_ms] = ref;
  }
  for (const auto& [w, s] : by_window) next.seals.push_back(s);
  // The producers list before progress: a merged publish that read this
  // round's progress reads this list or a later one.
  SNAPSINK_RETURN_IF_ERROR(WriteProducersIfChanged(env, root, state, round));
  MaybeCrash("partition.progress");
  std::string new_version;
  Status ws = env->ReplaceFileIfVersion(progress_path, next.Encode(), prev_version, &new_version);
  if (ws.IsLocked()) return refused("another owner replaced progress meanwhile (" + ws.message() + ")");
  SNAPSINK_RETURN_IF_ERROR(ws);
  lock.reset();

  // 4. In the state: the seals are recorded, the next round starts here. A
  // crash before this commit records the same seals again (create-only:
  // they are in place) at the next round.
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(state->store()->BeginWrite(&txn));
  for (const PartitionSealRecord& r : records) {
    SNAPSINK_RETURN_IF_ERROR(SetSealState(txn.get(), r.window_ms, r.version, SealState::kPublished));
  }
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), kRecordedToKey, static_cast<uint64_t>(round.position)));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  for (const PartitionSealRecord& r : records) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(state->path(), r.window_ms, r.version)));
    if (recorded_out) recorded_out->emplace_back(r.window_ms, r.version);
  }
  return Status::OK();
}

}  // namespace snapsink
