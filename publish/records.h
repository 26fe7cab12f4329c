// Output records: what query, inspect and the HTTP server print. One
// formatting path, so `snapsink query --format json` and `GET /v1/query`
// give the same bytes. The types and FormatRecords are the public ones
// (include/snapsink/views.h, implemented in records.cc); this header names
// them in the library's namespace.
#pragma once

#include "snapsink/views.h"

namespace snapsink {

using api::EscapeControl;
using api::Field;
using api::FormatRecords;
using api::OutputFormat;
using api::Record;

}  // namespace snapsink
