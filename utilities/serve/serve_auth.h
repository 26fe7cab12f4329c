// Access control of `snapsink serve` beyond loopback: bearer
// tokens from a token file, TLS credentials, the loopback test, and the
// access log line.
//
// Token file: one token a line, optionally "name:token" (split at the first
// ':'); blank lines and lines starting with '#' are ignored; surrounding
// spaces are trimmed. A token without a name is called "line-N" (its line
// number) in the access log. Refused when group or other users may read or
// write it (mode & 077), when it holds no token, or when it cannot be read.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "snapsink/status.h"

namespace snapsink {

class TokenSet {
 public:
  static Status Load(const std::string& path, std::shared_ptr<const TokenSet>* out);
  // The name of the token whose SHA-256 equals that of presented, or null.
  // Compares against every token in constant time (CRYPTO_memcmp).
  const std::string* Match(const std::string& presented) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    unsigned char digest[32];
  };
  std::vector<Entry> entries_;
};

// The token of an Authorization header value "Bearer TOKEN" (scheme case
// insensitive), or false.
bool BearerToken(const std::string& header, std::string* token);

// The password of an Authorization header value "Basic BASE64(user:password)"
// (scheme case insensitive; the user is ignored), or false: a browser's way
// to send a token.
bool BasicPassword(const std::string& header, std::string* password);

// target with the value of every query parameter that may hold a secret
// replaced by REDACTED: a name holding "token", "auth", "password" or
// "secret" (any case), or a value that is one of tokens (may be null).
std::string RedactTarget(const std::string& target, const TokenSet* tokens);

// A certificate chain and key that load and match, validated in a scratch
// SSL_CTX (the handle owns it). Errors name the file.
struct TlsCredentials {
  std::shared_ptr<SSL_CTX> ctx;
  static Status Load(const std::string& cert_file, const std::string& key_file, TlsCredentials* out);
  // Puts this certificate, chain and key on ssl (from a certificate callback).
  bool Apply(SSL* ssl) const;
};

// 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) or "localhost".
bool IsLoopbackHost(const std::string& host);

// One access log line (with '\n'): "TIME PEER TOKEN METHOD TARGET STATUS BYTES MICROS",
// TIME UTC RFC 3339 with microseconds, PEER "addr:port" ("[v6]:port"), TOKEN
// the token's name or "-", TARGET path and query with bytes outside
// printable ASCII (and spaces) percent-escaped.
std::string AccessLogLine(int64_t unix_us, const std::string& peer_addr, int peer_port, const std::string& token_name,
                          const std::string& method, const std::string& target, int status, size_t bytes,
                          int64_t micros);

}  // namespace snapsink
