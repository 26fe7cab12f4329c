// inspect producers|gaps|sources|ids|windows|snapshots|generations: a view of
// api::ReadOnlySink, printed by api::ToTable.
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {
namespace {

// Prints view (a Result of a ReadOnlySink view) as a table.
template <typename T>
Status Print(const Result<T>& view, OutputFormat format) {
  SNAPSINK_RETURN_IF_ERROR(view.status());
  PrintTable(api::ToTable(*view), format);
  return Status::OK();
}

}  // namespace

Status CmdInspect(const InspectArgs& a) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
  const OutputFormat format = a.json ? OutputFormat::kJson : OutputFormat::kTable;
  if (a.what == "producers") return Print(sink->Producers(), format);
  if (a.what == "gaps" && a.all) {
    SNAPSINK_ASSIGN_OR_RETURN(auto open, sink->Gaps());
    SNAPSINK_ASSIGN_OR_RETURN(auto accepted, sink->AcceptedGaps());
    PrintTable(api::ToTable(open, accepted), format);
    SNAPSINK_ASSIGN_OR_RETURN(auto sources, sink->AcceptedSourceGaps());
    if (!sources.empty()) {
      if (format == OutputFormat::kTable) std::printf("\n");
      PrintTable(api::ToTable(sources), format);
    }
    return Status::OK();
  }
  if (a.what == "gaps") return Print(sink->Gaps(), format);
  if (a.what == "sources") return Print(sink->Sources(), format);
  if (a.what == "ids") return Print(sink->Ids(), format);
  if (a.what == "windows") return Print(sink->Windows(), format);
  if (a.what == "snapshots") return Print(sink->Snapshots(), format);
  if (a.what == "generations") return Print(sink->Generations(), format);
  return Status::InvalidArgument("inspect: unknown " + a.what);
}

}  // namespace snapsink
