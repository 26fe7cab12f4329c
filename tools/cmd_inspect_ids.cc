// inspect ids, the retention columns of inspect producers and the id-dedup
// counts of inspect sources; gc --producers-idle.
#include <cstdio>
#include <map>

#include "engine/id_dedup.h"
#include "engine/producer_retention.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "tools/commands.h"

namespace snapsink {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }

std::optional<int64_t> MaxEventTs(Txn* txn, Status* s) {
  auto r = Root::GetMetaU64(txn, meta::kMaxEventTs);
  if (!r.ok()) {
    *s = r.status();
    return std::nullopt;
  }
  if (!*r) return std::nullopt;
  return static_cast<int64_t>(**r);
}

}  // namespace

Status InspectIds(Root* root, Txn* txn, std::vector<Record>* out) {
  Status s;
  const std::optional<int64_t> max_ts = MaxEventTs(txn, &s);
  SNAPSINK_RETURN_IF_ERROR(s);
  IdStats st;
  SNAPSINK_RETURN_IF_ERROR(ReadIdStats(txn, max_ts, root->config().lateness_ms, root->config().id_horizon_ms, &st));
  Record r;
  r.Num("ids", U(st.held));
  if (st.oldest) {
    r.Str("oldest", FormatIso(*st.oldest));
  } else {
    r.Num("oldest", "null");
  }
  r.Str("horizon", FormatDuration(root->config().id_horizon_ms));
  if (st.cutoff != INT64_MIN) {
    r.Str("cutoff", FormatIso(st.cutoff));
  } else {
    r.Num("cutoff", "null");
  }
  r.Num("table_bytes", U(st.table_bytes));
  out->push_back(std::move(r));
  return Status::OK();
}

// Adds last_seen and retired to the records of active producers (one per
// producer, in id order) and merges in the retired producers.
Status AddProducerRetention(Txn* txn, std::vector<Record>* records) {
  std::map<std::string, Record> by_id;
  for (Record& r : *records) {
    std::string id = r.fields[0].value;
    ProducerLife life;
    SNAPSINK_RETURN_IF_ERROR(LoadProducerLife(txn, id, &life));
    if (life.last_seen) {
      r.Str("last_seen", FormatIso(*life.last_seen));
    } else {
      r.Num("last_seen", "null");
    }
    r.Bool("retired", false);
    by_id.emplace(std::move(id), std::move(r));
  }
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kRetired, "", [&](std::string_view id, std::string_view v) {
    ProducerTombstone t;
    decode = DecodeTombstone(v, &t);
    if (!decode.ok()) return false;
    Record r;
    r.Str("producer", std::string(id));
    r.Num("epoch", U(t.epoch));
    r.Num("next_seq", "0");
    r.Num("open_gaps", "0");
    r.Str("last_seen", FormatIso(t.last_seen));
    r.Bool("retired", true);
    by_id.insert_or_assign(std::string(id), std::move(r));
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(decode);
  records->clear();
  for (auto& [id, r] : by_id) records->push_back(std::move(r));
  return Status::OK();
}

// Adds duplicates_id, rejected_horizon and rejected_retired to source records.
Status AddSourceIdCounts(Txn* txn, std::vector<Record>* records) {
  for (Record& r : *records) {
    SourceIdCounts c;
    SNAPSINK_RETURN_IF_ERROR(ReadSourceIdCounts(txn, r.fields[0].value, &c));
    r.Num("duplicates_id", U(c.duplicates_id));
    r.Num("rejected_horizon", U(c.rejected_horizon));
    r.Num("rejected_retired", U(c.rejected_retired));
  }
  return Status::OK();
}

Status CmdRetireProducers(const std::string& path, const std::string& idle) {
  int64_t idle_ms = 0;
  if (!ParseDuration(idle, &idle_ms) || idle_ms <= 0) {
    return Status::InvalidArgument("--producers-idle " + idle + ": expected a duration such as 1d, 30d");
  }
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
  Status s;
  const std::optional<int64_t> max_ts = MaxEventTs(txn.get(), &s);
  SNAPSINK_RETURN_IF_ERROR(s);
  std::vector<std::string> retired;
  SNAPSINK_RETURN_IF_ERROR(
      RetireIdleProducers(txn.get(), RetentionCutoff(max_ts, root->config().lateness_ms, idle_ms), &retired));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  for (const std::string& p : retired) std::printf("retired producer %s\n", p.c_str());
  return Status::OK();
}

}  // namespace snapsink
