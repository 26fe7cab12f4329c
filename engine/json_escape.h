// JSON string escaping for the JSON snapsink writes (rejects, query, inspect).
#pragma once

#include <string>
#include <string_view>

namespace snapsink {

// Appends s as the inside of a JSON string (no quotes): '"', '\\' and control
// characters escaped; bytes that are not valid UTF-8 become U+FFFD.
void AppendJsonEscaped(std::string* dst, std::string_view s);
// "\"...\"": s quoted and escaped.
std::string JsonQuote(std::string_view s);

}  // namespace snapsink
