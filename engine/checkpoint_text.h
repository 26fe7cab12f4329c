// The text pieces both kinds of checkpoint share (docs/FORMAT.md): a
// partition's checkpoint in ROOT (sink/checkpoint.cc) and a bucket root's
// state checkpoint (engine/state_checkpoint.cc). Each is a text header of
// "name value" lines, its data, and a trailer holding the XXH64 of every
// byte before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace snapsink {

// The trailer's length: "xxh64 " + 16 lowercase hex digits + "\n".
inline constexpr size_t kChecksumTrailerSize = 23;

// The trailer of a file whose bytes before it hash to xxh64 (XXH64, seed 0).
std::string ChecksumTrailer(uint64_t xxh64);

// Parses the whole of text as an unsigned number in base (10, or 16 for a
// digest): false when text is empty, holds anything but digits (a sign, a
// space) or does not fit in 64 bits.
bool ParseU64(std::string_view text, uint64_t* v, int base = 10);

}  // namespace snapsink
