// inspect producers|gaps|sources|windows|snapshots|generations.
#include <map>

#include "engine/decimal.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "publish/views.h"
#include "tools/commands.h"

namespace snapsink {

Status InspectPublished(Root* root, const std::string& what, OutputFormat format);  // cmd_query.cc

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
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSources, "", [&](std::string_view name, std::string_view v) {
    SourceState s;
    decode = codec::Decode(v, &s);
    if (!decode.ok()) return false;
    Record r;
    r.Str("source", std::string(name));
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

}  // namespace

Status CmdInspect(const InspectArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/false, &root));
  const OutputFormat format = a.json ? OutputFormat::kJson : OutputFormat::kTable;
  if (a.what == "snapshots" || a.what == "generations") return InspectPublished(root.get(), a.what, format);
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  std::vector<Record> records;
  std::vector<std::string> columns;
  if (a.what == "producers") {
    SNAPSINK_RETURN_IF_ERROR(InspectProducers(txn.get(), false, &records));
    columns = {"producer", "epoch", "next_seq", "open_gaps"};
  } else if (a.what == "gaps") {
    SNAPSINK_RETURN_IF_ERROR(InspectProducers(txn.get(), true, &records));
    columns = {"producer", "epoch", "from_seq", "to_seq", "missing"};
  } else if (a.what == "sources") {
    SNAPSINK_RETURN_IF_ERROR(InspectSources(txn.get(), &records));
    columns = {"source", "offset", "lines", "applied", "duplicates", "fenced", "rejected"};
  } else if (a.what == "windows") {
    SNAPSINK_RETURN_IF_ERROR(WindowRecords(*root, txn.get(), &records, &columns));
  } else {
    return Status::InvalidArgument("inspect: unknown " + a.what);
  }
  PrintRecords(records, columns, format);
  return Status::OK();
}

}  // namespace snapsink
