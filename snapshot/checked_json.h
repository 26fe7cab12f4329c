// Checked JSON: a JSON object that carries the xxh64 of its own bytes.
//
// A sealed document is one line:
//
//   {"a":1,"b":"x","checksum":"0123456789abcdef"}\n
//
// where the checksum is XXH64 (seed 0) of every byte before the comma that
// precedes "checksum" (for an empty body `{}` there is no comma and the
// hashed bytes are just `{`), in 16 lowercase hex digits. The checksum
// member is always last and the line always ends in exactly one '\n'; every
// other byte is covered by the hash, so any flipped byte is Corruption.
// Manifests (snapshot and generation) and CURRENT-style files use this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

// REQUIRES: body is a JSON object text ending with '}' and without a
// "checksum" member. Returns the sealed document (see above).
std::string SealJson(std::string body);

// Verifies a sealed document. On success *body points into file_text at the
// JSON object, checksum member included (decoders ignore "checksum"), without
// the trailing '\n'. Corruption (naming name_for_errors) if the checksum is
// missing, malformed or does not match.
Status OpenJson(std::string_view file_text, std::string_view* body, const std::string& name_for_errors);

// The contents of a JSON string literal for s, without the quotes: escapes
// '"' and '\\', control characters (< 0x20) as \u00xx (lowercase hex), and
// replaces each byte that is not part of valid UTF-8 with \ufffd. Valid
// UTF-8 (including U+007F) passes through unchanged.
std::string JsonEscape(std::string_view s);

// 16 lowercase hex digits; ParseHex64 accepts exactly that form.
std::string Hex64(uint64_t v);
bool ParseHex64(std::string_view s, uint64_t* v);

}  // namespace snapsink
