#include "engine/coding.h"

namespace snapsink::coding {

// Byte by byte rather than memcpy: defined on any host byte order, and
// compilers turn these loops into one load or store on little-endian hosts.

void EncodeFixed32(char* buf, uint32_t v) {
  for (int i = 0; i < 4; i++) buf[i] = static_cast<char>(v >> (8 * i));
}

void EncodeFixed64(char* buf, uint64_t v) {
  for (int i = 0; i < 8; i++) buf[i] = static_cast<char>(v >> (8 * i));
}

void PutFixed32(std::string* dst, uint32_t v) {
  char b[4];
  EncodeFixed32(b, v);
  dst->append(b, 4);
}

void PutFixed64(std::string* dst, uint64_t v) {
  char b[8];
  EncodeFixed64(b, v);
  dst->append(b, 8);
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

void PutBigEndian(std::string* dst, uint64_t v, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) dst->push_back(static_cast<char>((v >> shift) & 0xff));
}

uint64_t DecodeBigEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

char* EncodeVarint64(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

void PutVarint64(std::string* dst, uint64_t v) {
  char b[kMaxVarint64Bytes];
  dst->append(b, EncodeVarint64(b, v) - b);
}

bool GetVarint64(const char** p, const char* end, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && *p < end; shift += 7) {
    uint64_t byte = static_cast<uint8_t>(*(*p)++);
    if (shift == 63 && byte > 1) return false;
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool GetShortestVarint64(const char** p, const char* end, uint64_t* v) {
  const char* start = *p;
  if (!GetVarint64(p, end, v)) return false;
  char buf[kMaxVarint64Bytes];
  return EncodeVarint64(buf, *v) - buf == *p - start;
}

}  // namespace snapsink::coding
