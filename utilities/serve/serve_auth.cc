#include "utilities/serve/serve_auth.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace snapsink {

namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

void Sha256(const std::string& s, unsigned char out[32]) {
  unsigned int len = 32;
  EVP_Digest(s.data(), s.size(), out, &len, EVP_sha256(), nullptr);
}

// The OpenSSL error queue as text (and cleared).
std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

// "2026-10-21T10:00:00Z".
std::string Asn1TimeText(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return "an unreadable date";
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

Status TokenSet::Load(const std::string& path, std::shared_ptr<const TokenSet>* out) {
  const std::string what = "ServeOptions::token_file " + path + ": ";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::IOError(what + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(what + "not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::InvalidArgument(what + "group or other users may read or write it (mode " + mode +
                                   "); tokens are secrets: chmod 600 " + path);
  }
  std::ifstream in(path);
  if (!in) return Status::IOError(what + std::strerror(errno));
  auto set = std::make_shared<TokenSet>();
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    Entry e;
    std::string token = line;
    e.name = "line-" + std::to_string(n);
    if (const size_t colon = line.find(':'); colon != std::string::npos) {
      e.name = Trim(line.substr(0, colon));
      token = Trim(line.substr(colon + 1));
      if (e.name.empty()) return Status::InvalidArgument(what + "line " + std::to_string(n) + ": empty name before ':'");
    }
    if (token.empty()) return Status::InvalidArgument(what + "line " + std::to_string(n) + ": empty token");
    for (char c : e.name + token) {
      if (std::isspace(static_cast<unsigned char>(c)) || !std::isprint(static_cast<unsigned char>(c))) {
        return Status::InvalidArgument(what + "line " + std::to_string(n) +
                                       ": names and tokens are printable ASCII without spaces");
      }
    }
    Sha256(token, e.digest);
    set->entries_.push_back(std::move(e));
  }
  if (in.bad()) return Status::IOError(what + "read failed");
  if (set->entries_.empty()) return Status::InvalidArgument(what + "holds no token");
  *out = std::move(set);
  return Status::OK();
}

const std::string* TokenSet::Match(const std::string& presented) const {
  unsigned char d[32];
  Sha256(presented, d);
  const std::string* found = nullptr;
  for (const Entry& e : entries_) {  // every entry, found or not
    if (CRYPTO_memcmp(d, e.digest, sizeof(d)) == 0 && found == nullptr) found = &e.name;
  }
  return found;
}

bool BasicPassword(const std::string& header, std::string* password) {
  const std::string h = Trim(header);
  if (h.size() < 6 || strncasecmp(h.c_str(), "basic ", 6) != 0) return false;
  const std::string b64 = Trim(h.substr(6));
  if (b64.empty() || b64.size() % 4 != 0 || b64.size() > 4096) return false;
  std::string raw(b64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  for (size_t i = b64.size(); i > 0 && b64[i - 1] == '='; --i) --len;  // EVP_DecodeBlock counts padding as bytes
  raw.resize(len);
  const size_t colon = raw.find(':');
  if (colon == std::string::npos) return false;
  *password = raw.substr(colon + 1);
  return !password->empty();
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecoded(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      o += static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      o += s[i] == '+' ? ' ' : s[i];
    }
  }
  return o;
}

}  // namespace

std::string RedactTarget(const std::string& target, const TokenSet* tokens) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return target;
  std::string out = target.substr(0, q + 1);
  size_t b = q + 1;
  while (b <= target.size()) {
    size_t e = target.find('&', b);
    if (e == std::string::npos) e = target.size();
    const std::string param = target.substr(b, e - b);
    const size_t eq = param.find('=');
    std::string name = PercentDecoded(param.substr(0, eq));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string value = eq == std::string::npos ? "" : PercentDecoded(param.substr(eq + 1));
    const bool secret = name.find("token") != std::string::npos || name.find("auth") != std::string::npos ||
                        name.find("password") != std::string::npos || name.find("secret") != std::string::npos ||
                        (tokens != nullptr && !value.empty() && tokens->Match(value) != nullptr);
    out += secret && eq != std::string::npos ? param.substr(0, eq) + "=REDACTED" : param;
    if (e < target.size()) out += '&';
    b = e + 1;
  }
  return out;
}

bool BearerToken(const std::string& header, std::string* token) {
  const std::string h = Trim(header);
  if (h.size() < 7 || strncasecmp(h.c_str(), "bearer ", 7) != 0) return false;
  *token = Trim(h.substr(7));
  return !token->empty();
}

Status TlsCredentials::Load(const std::string& cert_file, const std::string& key_file, TlsCredentials* out) {
  if (cert_file.empty() || key_file.empty()) {
    return Status::InvalidArgument("ServeOptions::tls_cert_file and ServeOptions::tls_key_file go together");
  }
  // As for the token file: a private key others may read is no secret.
  struct stat st;
  if (::stat(key_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::InvalidArgument("ServeOptions::tls_key_file " + key_file +
                                   ": group or other users may read or write it (mode " + mode +
                                   "); a private key is a secret: chmod 600 " + key_file);
  }
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::IOError("TLS: cannot create a context: " + SslErrors());
  // The key first: loaded after the certificate, a key that does not match
  // would fail to load, which would hide why.
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Status::InvalidArgument("ServeOptions::tls_key_file " + key_file + ": cannot load a PEM private key: " + SslErrors());
  }
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
    return Status::InvalidArgument("ServeOptions::tls_cert_file " + cert_file + ": cannot load a PEM certificate: " + SslErrors());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("ServeOptions::tls_key_file " + key_file +
                                   ": does not match the certificate of ServeOptions::tls_cert_file " +
                                   cert_file);
  }
  // A certificate out of its validity period: every client would refuse it.
  if (const X509* leaf = SSL_CTX_get0_certificate(ctx.get()); leaf != nullptr) {
    const ASN1_TIME* not_after = X509_get0_notAfter(leaf);
    const ASN1_TIME* not_before = X509_get0_notBefore(leaf);
    if (X509_cmp_current_time(not_after) <= 0) {
      return Status::InvalidArgument("ServeOptions::tls_cert_file " + cert_file + ": expired on " +
                                     Asn1TimeText(not_after) + ": renew it");
    }
    if (X509_cmp_current_time(not_before) > 0) {
      return Status::InvalidArgument("ServeOptions::tls_cert_file " + cert_file + ": not valid before " +
                                     Asn1TimeText(not_before) + ": check this host's clock or the certificate");
    }
  }
  out->ctx = std::move(ctx);
  return Status::OK();
}

bool TlsCredentials::Apply(SSL* ssl) const {
  X509* cert = SSL_CTX_get0_certificate(ctx.get());
  EVP_PKEY* key = SSL_CTX_get0_privatekey(ctx.get());
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx.get(), &chain);
  return cert != nullptr && key != nullptr && SSL_use_cert_and_key(ssl, cert, key, chain, 1) == 1;
}

bool IsLoopbackHost(const std::string& host) {
  if (strcasecmp(host.c_str(), "localhost") == 0) return true;
  in_addr a4;
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6;
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  return false;
}

std::string AccessLogLine(int64_t unix_us, const std::string& peer_addr, int peer_port, const std::string& token_name,
                          const std::string& method, const std::string& target, int status, size_t bytes,
                          int64_t micros) {
  const time_t secs = static_cast<time_t>(unix_us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[48];
  std::snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_us % 1000000));
  auto escape = [](const std::string& s) {
    std::string o;
    for (unsigned char c : s) {
      if (c > ' ' && c < 0x7f) {
        o += static_cast<char>(c);
      } else {
        char b[4];
        std::snprintf(b, sizeof(b), "%%%02X", c);
        o += b;
      }
    }
    return o.empty() ? std::string("-") : o;
  };
  const bool v6 = peer_addr.find(':') != std::string::npos;
  std::string line = when;
  line += ' ';
  line += (v6 ? "[" + peer_addr + "]" : peer_addr) + ":" + std::to_string(peer_port);
  line += ' ' + (token_name.empty() ? std::string("-") : token_name);
  line += ' ' + escape(method) + ' ' + escape(target) + ' ' + std::to_string(status) + ' ' + std::to_string(bytes) +
          ' ' + std::to_string(micros) + '\n';
  return line;
}

}  // namespace snapsink
