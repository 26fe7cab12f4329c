// snapsink serve's policy toward what a client or an operator hands it,
// through the binary: TLS 1.2 suites (ECDHE + AEAD only, tried with
// `openssl s_client`), a certificate out of its dates and a private key
// others may read (refused at start), a browser's basic auth for the page,
// and a token in a query string (never in the access log, which is 0600).
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

bool Have(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

// Runs a shell command; its exit status.
int ShellStatus(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// A self-signed certificate for localhost valid from not_before to
// not_after (seconds from now), and its key (mode 0600): path.crt, path.key.
void MakeCert(const std::string& path, long not_before, long not_after) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  ASSERT_NE(key, nullptr);
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), not_before);
  X509_gmtime_adj(X509_getm_notAfter(x), not_after);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  ASSERT_GT(X509_sign(x, key, EVP_sha256()), 0);
  FILE* f = std::fopen((path + ".crt").c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen((path + ".key").c_str(), "w");
  ASSERT_NE(f, nullptr);
  ::chmod((path + ".key").c_str(), 0600);
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
}

class ServePolicyTest : public ServeFixture {
 protected:
  // serve ROOT with TLS files, bounded by `timeout` (a server that starts
  // would serve on): exit status and stderr.
  RunResult ServeTls(const std::string& cert, const std::string& key) {
    const std::string err = dir_ / "tls.err";
    RunResult r;
    r.exit_code = ShellStatus("timeout 30 '" + std::string(SnapsinkBinaryPath()) + "' serve '" + root_ +
                              "' --listen 127.0.0.1:0 --quiet --tls-cert '" + cert + "' --tls-key '" + key +
                              "' >/dev/null 2>'" + err + "'");
    r.err = ReadFile(err);
    return r;
  }
  std::string TokenFile(const std::string& text) {
    const std::string path = dir_ / "tokens";
    WriteFile(path, text);
    ::chmod(path.c_str(), 0600);
    return path;
  }
};

// TLS 1.2 offers only ECDHE key exchange with AEAD ciphers: static RSA
// (AES128-SHA) and CBC-SHA1 with ECDHE (ECDHE-RSA-AES128-SHA) fail the
// handshake; ECDHE-RSA-AES128-GCM-SHA256 and TLS 1.3 succeed.
TEST_F(ServePolicyTest, Tls12OffersOnlyEcdheWithAeadSuites) {
  if (!Have("openssl")) GTEST_SKIP() << "needs the openssl command";
  const std::string cert = dir_ / "server";
  MakeCert(cert, -3600, 86400);
  PublishRound(0);
  // Not StartServe: its probe speaks plain HTTP, which a TLS port never answers.
  Server server;
  server.port = FreePort();
  server.proc = SpawnSnapsink({"serve", root_, "--listen", "127.0.0.1:" + std::to_string(server.port), "--tls-cert",
                               cert + ".crt", "--tls-key", cert + ".key", "--quiet"});
  const std::string connect =
      "openssl s_client -connect 127.0.0.1:" + std::to_string(server.port) + " -servername localhost ";
  int up = 1;
  for (int i = 0; i < 300 && up != 0; ++i) {
    up = ShellStatus("echo | " + connect + "-tls1_3 >/dev/null 2>&1");
    if (up != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(up, 0) << "no TLS 1.3 handshake";
  for (const char* refused :
       {"AES128-SHA", "AES256-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA", "AES128-GCM-SHA256"}) {
    EXPECT_NE(ShellStatus("echo | " + connect + "-tls1_2 -cipher " + refused + " >/dev/null 2>&1"), 0)
        << refused << " was accepted";
  }
  for (const char* accepted : {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"}) {
    EXPECT_EQ(ShellStatus("echo | " + connect + "-tls1_2 -cipher " + accepted + " >/dev/null 2>&1"), 0)
        << accepted << " was refused";
  }
  Stop(server);
}

// --tls-ciphers replaces the TLS 1.2 list (an OpenSSL cipher string): only
// the suites named are offered, TLS 1.3 keeps OpenSSL's default suites; a
// list OpenSSL matches no suite in is refused at start with one line.
TEST_F(ServePolicyTest, TlsCiphersOverridesTheTls12List) {
  if (!Have("openssl")) GTEST_SKIP() << "needs the openssl command";
  const std::string cert = dir_ / "server";
  MakeCert(cert, -3600, 86400);
  PublishRound(0);
  Server server;
  server.port = FreePort();
  server.proc = SpawnSnapsink({"serve", root_, "--listen", "127.0.0.1:" + std::to_string(server.port), "--tls-cert",
                               cert + ".crt", "--tls-key", cert + ".key", "--tls-ciphers",
                               "ECDHE-RSA-AES256-GCM-SHA384", "--quiet"});
  const std::string connect =
      "openssl s_client -connect 127.0.0.1:" + std::to_string(server.port) + " -servername localhost ";
  int up = 1;
  for (int i = 0; i < 300 && up != 0 && server.proc.Running(); ++i) {
    up = ShellStatus("echo | " + connect + "-tls1_3 >/dev/null 2>&1");
    if (up != 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(up, 0) << "no TLS 1.3 handshake";
  EXPECT_EQ(ShellStatus("echo | " + connect + "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384 >/dev/null 2>&1"), 0);
  for (const char* refused : {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"}) {
    EXPECT_NE(ShellStatus("echo | " + connect + "-tls1_2 -cipher " + refused + " >/dev/null 2>&1"), 0)
        << refused << " was accepted";
  }
  Stop(server);

  const std::string err = dir_ / "ciphers.err";
  const int code = ShellStatus("timeout 30 '" + std::string(SnapsinkBinaryPath()) + "' serve '" + root_ +
                               "' --listen 127.0.0.1:0 --quiet --tls-cert '" + cert + ".crt' --tls-key '" + cert +
                               ".key' --tls-ciphers NO-SUCH-SUITE >/dev/null 2>'" + err + "'");
  const std::string text = ReadFile(err);
  EXPECT_EQ(code, 1) << text;
  const std::string first = text.substr(0, text.find('\n') + 1);
  EXPECT_EQ(first.rfind("snapsink: --tls-ciphers NO-SUCH-SUITE: ", 0), 0u) << text;
}

// serve refuses to start, with one line naming the file and what to do, on
// a certificate past its end or before its start, and on a key file that
// group or others may read; the token file was already refused so.
TEST_F(ServePolicyTest, ExpiredCertificateAndReadableKeyAreRefusedAtStart) {
  PublishRound(0);
  const std::string expired = dir_ / "expired";
  MakeCert(expired, -2 * 86400, -86400);
  RunResult r = ServeTls(expired + ".crt", expired + ".key");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // One line (then the CLI's usage hint, as for every bad option).
  const std::string first = r.err.substr(0, r.err.find('\n') + 1);
  EXPECT_EQ(first.rfind("snapsink: --tls-cert " + expired + ".crt: expired on ", 0), 0u) << r.err;
  EXPECT_NE(first.find(": renew it\n"), std::string::npos) << r.err;

  const std::string future = dir_ / "future";
  MakeCert(future, 86400, 2 * 86400);
  r = ServeTls(future + ".crt", future + ".key");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(future + ".crt: not valid before "), std::string::npos) << r.err;

  const std::string good = dir_ / "good";
  MakeCert(good, -3600, 86400);
  ::chmod((good + ".key").c_str(), 0644);
  r = ServeTls(good + ".crt", good + ".key");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(good + ".key: group or other users may read or write it (mode 0644)"), std::string::npos)
      << r.err;
  const std::string line = r.err.substr(0, r.err.find('\n'));
  EXPECT_EQ(line.substr(line.size() - std::min(line.size(), good.size() + 14)), "chmod 600 " + good + ".key") << r.err;
}

// With tokens on, the page asks a browser for credentials (401 with a
// Basic challenge) and opens with basic auth whose password is a token
// (any user name); API endpoints keep their Bearer challenge and also take
// basic auth; a wrong password is 401.
TEST_F(ServePolicyTest, BrowserOpensThePageWithBasicAuth) {
  PublishRound(0);
  Server server = StartServe(root_, {"--token-file", TokenFile("ops:tok-123\n"), "--quiet"});
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Basic realm=\"snapsink\", charset=\"UTF-8\"");
  c.set_basic_auth("anyone", "tok-123");
  r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("<html"), std::string::npos) << r->body.substr(0, 200);
  r = c.Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  c.set_basic_auth("anyone", "tok-12");
  r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  httplib::Client api("127.0.0.1", server.port);
  r = api.Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  Stop(server);
}

// A token a client puts in the query string (access_token=, or any
// parameter holding a token) does not let the request in (a token is read
// from the Authorization header only) and is written REDACTED to the access
// log; the log file is created 0600.
TEST_F(ServePolicyTest, TokenInQueryStringIsRedactedInTheAccessLogCreated0600) {
  PublishRound(0);
  const std::string log = dir_ / "access.log";
  Server server = StartServe(root_, {"--token-file", TokenFile("ops:tok-secret-9\n"), "--access-log", log});
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto r = c.Get("/v1/status?access_token=tok-secret-9");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << "a token in the query string let the request in";  // read from Authorization only
  r = c.Get("/v1/windows?x=tok-secret-9", {{"Authorization", "Bearer tok-secret-9"}});
  ASSERT_TRUE(r);
  r = c.Get("/healthz?api_token=guess");
  ASSERT_TRUE(r);
  Stop(server);
  const std::string text = ReadFile(log);
  EXPECT_EQ(text.find("tok-secret-9"), std::string::npos) << text;
  EXPECT_EQ(text.find("guess"), std::string::npos) << text;
  EXPECT_NE(text.find("/v1/status?access_token=REDACTED "), std::string::npos) << text;
  EXPECT_NE(text.find("/v1/windows?x=REDACTED "), std::string::npos) << text;
  struct stat st;
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace snapsink::testing
