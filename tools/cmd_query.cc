// query, and inspect snapshots|generations: what readers see.
#include <cstdio>
#include <map>

#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/reader.h"
#include "publish/views.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status CmdQuery(const QueryArgs& a) {
  Env* env = Env::Default();
  if (!env->FileExists(filenames::StateDir(a.root))) {
    return Status::NotFound(a.root + " is not a snapsink root");
  }
  int64_t window = 0;
  if (!a.window.empty()) {
    // The window size is a setting of the root; a time names the window holding it.
    std::unique_ptr<Root> root;
    SNAPSINK_RETURN_IF_ERROR(Root::Open(env, a.root, /*writer=*/false, &root));
    SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--window", a.window, root->config().window_ms, &window));
  }
  std::unique_ptr<Reader> reader;
  Status s = Reader::Open(env, a.root, a.generation, &reader);
  if (s.IsNotFound() && a.generation == 0) {
    std::fprintf(stderr, "snapsink: %s\n", s.message().c_str());
    PrintRecords({}, QueryColumns(), a.format);
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  QuerySpec spec;
  if (!a.window.empty()) spec.window = window;
  spec.metric = a.metric;
  if (a.has_key) spec.key = a.key;
  std::vector<Record> records;
  SNAPSINK_RETURN_IF_ERROR(QueryRecords(reader.get(), spec, &records));
  PrintRecords(records, QueryColumns(), a.format);
  if (records.empty() && (!a.window.empty() || !a.metric.empty() || a.has_key)) {
    std::string filter;
    if (!a.window.empty()) filter += " --window " + a.window;
    if (!a.metric.empty()) filter += " --metric " + a.metric;
    if (a.has_key) filter += " --key " + a.key;
    std::fprintf(stderr, "snapsink: no rows in generation %llu match%s\n",
                 static_cast<unsigned long long>(reader->generation()), filter.c_str());
  }
  return Status::OK();
}

Status InspectPublished(Root* root, const std::string& what, OutputFormat format) {
  std::vector<Record> records;
  std::vector<std::string> columns;
  SNAPSINK_RETURN_IF_ERROR(PublishedRecords(root->env(), root->path(), what, &records, &columns));
  PrintRecords(records, columns, format);
  return Status::OK();
}

}  // namespace snapsink
