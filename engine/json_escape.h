// JSON string escaping for the JSON snapsink writes (rejects, query, inspect).
#pragma once

#include <string>
#include <string_view>

namespace snapsink {

// Appends s as the inside of a JSON string (no quotes): '"' and '\\'
// backslash-escaped, control characters (< 0x20) as \u00xx (lowercase hex),
// each byte that is not part of valid UTF-8 as \ufffd (overlong forms,
// surrogates and code points above U+10FFFF are not valid). Valid UTF-8
// passes through unchanged. Manifest bytes depend on this: do not change it.
void AppendJsonEscaped(std::string* dst, std::string_view s);
// "\"...\"": s quoted and escaped.
std::string JsonQuote(std::string_view s);

}  // namespace snapsink
