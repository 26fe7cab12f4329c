// Byte coding of integers, the one place it is done (as LevelDB's util/coding).
//
// Fixed-width values are little-endian whatever the host's byte order, so a
// root or a snapshot file written on one machine reads the same on another.
// Big-endian fixed values are for keys that must sort as integers do.
// Varints are LEB128 (7 bits a byte, low bits first); ZigZag maps signed to
// unsigned so small negative numbers stay short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace snapsink::coding {

inline constexpr size_t kMaxVarint64Bytes = 10;

// Writes v at buf (4 / 8 bytes), little-endian.
void EncodeFixed32(char* buf, uint32_t v);
void EncodeFixed64(char* buf, uint64_t v);
// Appends v, little-endian.
void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
// Reads a little-endian value at p. REQUIRES: 4 / 8 readable bytes.
uint32_t DecodeFixed32(const char* p);
uint64_t DecodeFixed64(const char* p);

// Appends the low `bytes` bytes of v, most significant first (1..8).
void PutBigEndian(std::string* dst, uint64_t v, int bytes);
// Reads `bytes` bytes at p, most significant first (1..8).
uint64_t DecodeBigEndian(const char* p, int bytes);

// Writes v at p (room for kMaxVarint64Bytes); returns the end.
char* EncodeVarint64(char* p, uint64_t v);
void PutVarint64(std::string* dst, uint64_t v);
// Parses a varint at *p (< end) and advances *p; false on truncation or
// more than 64 bits.
bool GetVarint64(const char** p, const char* end, uint64_t* v);
// GetVarint64, and false unless the varint is in its shortest form (for a
// format with one encoding of each value, as the sketches' are).
bool GetShortestVarint64(const char** p, const char* end, uint64_t* v);

inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }

}  // namespace snapsink::coding
