// inspect producers|gaps|sources|windows|snapshots|generations.
#include <map>

#include "engine/decimal.h"
#include "engine/gap_acceptance.h"
#include "engine/long_key.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "publish/views.h"
#include "tools/commands.h"

namespace snapsink {

Status InspectPublished(Root* root, const std::string& what, OutputFormat format);  // cmd_query.cc
// cmd_inspect_ids.cc
Status InspectIds(Root* root, Txn* txn, std::vector<Record>* out);
Status AddProducerRetention(Txn* txn, std::vector<Record>* records);
Status AddSourceIdCounts(Txn* txn, std::vector<Record>* records);

namespace {

std::string U(uint64_t v) { return std::to_string(v); }

Status InspectProducers(Txn* txn, bool gaps, std::vector<Record>* out) {
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducers, "", [&](std::string_view id, std::string_view v) {
    ProducerState p;
    decode = codec::Decode(v, &p);
    if (!decode.ok()) return false;
    if (!gaps) {
      Record r;
      r.Str("producer", std::string(id));
      r.Num("epoch", U(p.epoch));
      r.Num("next_seq", U(p.next_seq));
      r.Num("open_gaps", U(p.gaps.size()));
      out->push_back(std::move(r));
      return true;
    }
    for (const Gap& g : p.gaps) {
      Record r;
      r.Str("producer", std::string(id));
      r.Num("epoch", U(p.epoch));
      r.Num("from_seq", U(g.lo));
      r.Num("to_seq", U(g.hi - 1));
      r.Num("missing", U(g.hi - g.lo));
      out->push_back(std::move(r));
    }
    return true;
  }));
  return decode;
}

Status InspectSources(Txn* txn, std::vector<Record>* out) {
  Status decode;
  std::string name;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSources, "", [&](std::string_view stored, std::string_view value) {
    std::string_view v;
    decode = DecodeRecord(stored, value, &name, &v);  // a long name is kept in the record: engine/long_key.h
    if (!decode.ok()) return false;
    SourceState s;
    decode = codec::Decode(v, &s);
    if (!decode.ok()) return false;
    Record r;
    r.Str("source", name);
    r.Num("offset", U(s.offset));
    r.Num("lines", U(s.lines));
    r.Num("applied", U(s.applied));
    r.Num("duplicates", U(s.duplicates));
    r.Num("fenced", U(s.fenced));
    r.Num("rejected", U(s.rejected));
    r.Num("ignored", U(s.ignored));
    out->push_back(std::move(r));
    return true;
  }));
  return decode;
}

// inspect gaps --all: the open gaps marked state "open", then every
// accepted-gap record (engine/gap_acceptance.h) as state "accepted".
Status AddAcceptedGaps(Txn* txn, std::vector<Record>* out) {
  for (Record& r : *out) {
    r.Str("state", "open");
    r.Str("accepted_at", "");
  }
  std::vector<AcceptedGap> accepted;
  SNAPSINK_RETURN_IF_ERROR(ListAcceptedGaps(txn, &accepted));
  for (const AcceptedGap& g : accepted) {
    Record r;
    r.Str("producer", g.producer);
    r.Str("epoch", g.any_epoch ? "any" : U(g.epoch));
    r.Num("from_seq", U(g.range.lo));
    r.Num("to_seq", U(g.range.hi - 1));
    r.Str("missing", "");
    r.Str("state", "accepted");
    r.Str("accepted_at", FormatIso(g.accepted_at_ms));
    out->push_back(std::move(r));
  }
  return Status::OK();
}

}  // namespace

Status CmdInspect(const InspectArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::OpenReadOnly(Env::Default(), a.root, &root));
  const OutputFormat format = a.json ? OutputFormat::kJson : OutputFormat::kTable;
  if (a.what == "snapshots" || a.what == "generations") return InspectPublished(root.get(), a.what, format);
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  std::vector<Record> records;
  std::vector<std::string> columns;
  if (a.what == "producers") {
    SNAPSINK_RETURN_IF_ERROR(InspectProducers(txn.get(), false, &records));
    SNAPSINK_RETURN_IF_ERROR(AddProducerRetention(txn.get(), &records));
    columns = {"producer", "epoch", "next_seq", "open_gaps", "last_seen", "retired"};
  } else if (a.what == "gaps") {
    SNAPSINK_RETURN_IF_ERROR(InspectProducers(txn.get(), true, &records));
    columns = {"producer", "epoch", "from_seq", "to_seq", "missing"};
    if (a.all) {
      SNAPSINK_RETURN_IF_ERROR(AddAcceptedGaps(txn.get(), &records));
      columns = {"producer", "epoch", "from_seq", "to_seq", "missing", "state", "accepted_at"};
    }
  } else if (a.what == "sources") {
    SNAPSINK_RETURN_IF_ERROR(InspectSources(txn.get(), &records));
    SNAPSINK_RETURN_IF_ERROR(AddSourceIdCounts(txn.get(), &records));  // in --json only
    columns = {"source", "offset", "lines", "applied", "duplicates", "fenced", "rejected", "ignored"};
  } else if (a.what == "ids") {
    SNAPSINK_RETURN_IF_ERROR(InspectIds(root.get(), txn.get(), &records));
    columns = {"ids", "oldest", "horizon", "cutoff", "table_bytes"};
  } else if (a.what == "windows") {
    SNAPSINK_RETURN_IF_ERROR(WindowRecords(*root, txn.get(), &records, &columns));
  } else {
    return Status::InvalidArgument("inspect: unknown " + a.what);
  }
  PrintRecords(records, columns, format);
  return Status::OK();
}

}  // namespace snapsink
