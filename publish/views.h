// Views of a root as records: what `query` and `inspect` print and what the
// HTTP server returns. Both go through these functions, so the command line
// and the server give the same bytes for the same question.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/status.h"
#include "publish/reader.h"
#include "publish/records.h"
#include "snapsink/reader.h"

namespace snapsink {

class Root;
class Txn;

// A query: every filter is optional.
struct QuerySpec {
  std::optional<int64_t> window;  // a window start (ParseWindowName)
  std::string metric;             // empty: every metric
  std::optional<std::string> key;
};

// Columns of a query's table/csv output.
const std::vector<std::string>& QueryColumns();

// Appends the rows of reader's generation that q selects, sorted by window,
// metric, key, one record each (window, metric, key, count, sum, version,
// generation). A point lookup (metric and key) decompresses one block per
// window. Corruption names the damaged file.
Status QueryRecords(Reader* reader, const QuerySpec& q, std::vector<Record>* out);
// The same through a public Reader (the HTTP server's).
Status QueryRecords(api::Reader* reader, const QuerySpec& q, std::vector<Record>* out);

// inspect generations|snapshots: the published generations, or every
// published snapshot and how many generations use it. Sets *columns.
Status PublishedRecords(Env* env, const std::string& root, const std::string& what, std::vector<Record>* out,
                        std::vector<std::string>* columns);

// inspect windows: each window's version, dirty and closed flags, and its
// ledger totals, read in txn (a read transaction of root's store).
Status WindowRecords(const Root& root, Txn* txn, std::vector<Record>* out, std::vector<std::string>* columns);

}  // namespace snapsink
