// snapsink serve beyond loopback, through the binary: TLS with a
// certificate made here by `openssl` and checked by `curl`, bearer tokens
// and their reload on SIGHUP, the refusal of a non-loopback address without
// TLS and tokens, token file permissions, the access log. Servers listen on
// 127.0.0.1 only, except the --insecure one (0.0.0.0, asked on 127.0.0.1).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

bool Have(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

// Runs a shell command; its stdout, and its exit status in *code.
std::string Shell(const std::string& cmd, int* code = nullptr) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  if (code) *code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return out;
}

class ServeTlsTest : public ServeFixture {
 protected:
  void SetUp() override {
    ServeFixture::SetUp();
    if (!Have("openssl") || !Have("curl")) GTEST_SKIP() << "needs the openssl and curl commands (install-deps.sh)";
  }

  // A self-signed certificate for localhost and 127.0.0.1: dir/NAME.crt, dir/NAME.key.
  void MakeCert(const std::string& name) {
    int code = -1;
    const std::string out = Shell("openssl req -x509 -newkey rsa:2048 -days 2 -nodes -subj /CN=localhost "
                                  "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                                      (dir_ / name) + ".key -out " + (dir_ / name) + ".crt 2>&1",
                                  &code);
    ASSERT_EQ(code, 0) << out;
  }

  std::string TokenFile(const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ / "tokens";
    WriteFile(path, text);
    ::chmod(path.c_str(), mode);
    return path;
  }

  // serve on 127.0.0.1 with extra flags; ready once a TLS (or plain) /healthz answers.
  Server Start(const std::vector<std::string>& extra, bool tls) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      Server s;
      s.port = FreePort();
      std::vector<std::string> args = {"serve", root_, "--listen", "127.0.0.1:" + std::to_string(s.port)};
      args.insert(args.end(), extra.begin(), extra.end());
      s.proc = SpawnSnapsink(args, {}, dir_ / "serve.out", dir_ / "serve.err");
      for (int i = 0; i < 600 && s.proc.Running(); ++i) {
        if (tls) {
          httplib::SSLClient c("127.0.0.1", s.port);
          c.enable_server_certificate_verification(false);
          if (auto r = c.Get("/healthz"); r) return s;
        } else {
          httplib::Client c("127.0.0.1", s.port);
          if (auto r = c.Get("/healthz"); r) return s;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (s.proc.Running()) {
        ::kill(s.proc.pid, SIGKILL);
        s.proc.Wait();
      }
    }
    ADD_FAILURE() << "serve did not start: " << ReadFile(dir_ / "serve.err");
    return {};
  }

  // curl's HTTP status ("000" when no answer) for url with extra curl flags.
  std::string Curl(const std::string& flags, const std::string& url) {
    return Shell("curl -s -o /dev/null -w '%{http_code}' --max-time 60 " + flags + " '" + url + "'");
  }
};

TEST_F(ServeTlsTest, CurlTrustsTheCertificateOverTlsOnly) {
  MakeCert("server");
  MakeCert("other");
  PublishRound(0);
  Server s = Start({"--tls-cert", dir_ / "server.crt", "--tls-key", dir_ / "server.key", "--token-file",
                    TokenFile("ops:tok-123\n")},
                   true);
  ASSERT_GT(s.port, 0);
  const std::string https = "https://127.0.0.1:" + std::to_string(s.port);
  EXPECT_EQ(Curl("--cacert " + (dir_ / "server.crt") + " -H 'Authorization: Bearer tok-123'", https + "/v1/status"),
            "200");
  EXPECT_EQ(Curl("--cacert " + (dir_ / "server.crt"), https + "/healthz"), "200");
  // Also by name: the certificate is for localhost.
  EXPECT_EQ(Curl("--cacert " + (dir_ / "server.crt") + " --resolve localhost:" + std::to_string(s.port) +
                     ":127.0.0.1",
                 "https://localhost:" + std::to_string(s.port) + "/healthz"),
            "200");
  EXPECT_EQ(Curl("--cacert " + (dir_ / "server.crt"), https + "/v1/status"), "401");
  // Plain HTTP to the TLS port, and a CA that did not sign it: no answer.
  EXPECT_EQ(Curl("", "http://127.0.0.1:" + std::to_string(s.port) + "/healthz"), "000");
  EXPECT_EQ(Curl("--cacert " + (dir_ / "other.crt"), https + "/healthz"), "000");
  // TLS 1.1 and older are refused.
  EXPECT_EQ(Curl("-k --tlsv1.0 --tls-max 1.1", https + "/healthz"), "000");
  EXPECT_TRUE(s.proc.Running());
  Stop(s);
}

// docs/SERVE.md's recipe for serving over a network, steps 0 to 2 as written (it
// wrote into /etc/snapsink, which it never made, and left the user's shell
// with umask 077), run under a home of its own; then served as step 3 does.
TEST_F(ServeTlsTest, ReadmeRecipeRunsAsWritten) {
  const std::string readme = ReadFile(std::string(SNAPSINK_SOURCE_DIR) + "/docs/SERVE.md");
  const size_t from = readme.find("# 0. Where the files go");
  const size_t to = readme.find("# 3. Serve.", from);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string home = dir_ / "home";
  ASSERT_EQ(::mkdir(home.c_str(), 0700), 0);
  WriteFile(dir_ / "recipe.sh", "umask 022\n" + readme.substr(from, to - from) + "umask\n");
  int code = -1;
  const std::string out = Shell("HOME=" + home + " sh -e " + (dir_ / "recipe.sh") + " 2>/dev/null", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out, "0022\n");  // the shell's own umask, untouched
  const std::string d = home + "/.config/snapsink";
  for (const char* secret : {"key.pem", "tokens"}) {
    struct stat st;
    ASSERT_EQ(::stat((d + "/" + secret).c_str(), &st), 0) << secret;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << secret;
  }
  PublishRound(0);
  Server s = Start({"--tls-cert", d + "/cert.pem", "--tls-key", d + "/key.pem", "--token-file", d + "/tokens"}, true);
  ASSERT_GT(s.port, 0);
  Stop(s);
}

TEST_F(ServeTlsTest, CertificateReloadedOnSighup) {
  MakeCert("first");
  MakeCert("second");
  const std::string cert = dir_ / "live.crt", key = dir_ / "live.key";
  auto install = [&](const std::string& name) {
    WriteFile(cert, ReadFile(dir_ / name + ".crt"));
    WriteFile(key, ReadFile(dir_ / name + ".key"));
    ::chmod(key.c_str(), 0600);  // a key others may read is refused
  };
  install("first");
  Server s = Start({"--tls-cert", cert, "--tls-key", key, "--token-file", TokenFile("t:tok-1\n")}, true);
  ASSERT_GT(s.port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(s.port) + "/healthz";
  const std::string first = "--cacert " + (dir_ / "first.crt"), second = "--cacert " + (dir_ / "second.crt");
  EXPECT_EQ(Curl(first, url), "503");  // nothing published: an answer all the same
  install("second");
  ::kill(s.proc.pid, SIGHUP);
  std::string code;
  for (int i = 0; i < 600 && code != "503"; ++i) {
    code = Curl(second, url);
    if (code != "503") std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(code, "503");
  EXPECT_EQ(Curl(first, url), "000");
  // A key that does not match: the reload fails, the second pair stays.
  WriteFile(key, ReadFile(dir_ / "first.key"));
  ::chmod(key.c_str(), 0600);
  ::kill(s.proc.pid, SIGHUP);
  for (int i = 0; i < 600 && ReadFile(dir_ / "serve.err").find("reload failed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string err = ReadFile(dir_ / "serve.err");
  EXPECT_NE(err.find("reload failed"), std::string::npos) << err;
  EXPECT_NE(err.find(key + ": does not match"), std::string::npos) << err;
  EXPECT_EQ(Curl(second, url), "503");
  EXPECT_TRUE(s.proc.Running());
  Stop(s);
}

TEST_F(ServeTlsTest, BadCertificateOrKeyExitsOneNamingTheFile) {
  MakeCert("a");
  MakeCert("b");
  RunResult r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--tls-cert", dir_ / "a.crt", "--tls-key",
                          dir_ / "b.key"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir_ / "b.key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not match"), std::string::npos) << r.err;
  WriteFile(dir_ / "junk.crt", "not a certificate\n");
  r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--tls-cert", dir_ / "junk.crt", "--tls-key",
                dir_ / "a.key"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir_ / "junk.crt"), std::string::npos) << r.err;
  r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--tls-cert", dir_ / "a.crt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tls-key"), std::string::npos) << r.err;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_F(ServeTlsTest, TokensAndTheirReloadOnSighup) {
  PublishRound(0);
  const std::string log = dir_ / "access.log";
  const std::string tokens = TokenFile("# readers\n\nalice:Alpha-Token-1\nBravo-Token-2\n");
  // A long keep-alive timeout: the connection must not idle out on a slow machine.
  Server s = Start({"--token-file", tokens, "--access-log", log, "--keep-alive-timeout", "600s"}, false);
  ASSERT_GT(s.port, 0);
  httplib::Client c("127.0.0.1", s.port);
  auto get = [&](const std::string& path, const std::string& token) {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    auto r = c.Get(path, h);
    return r ? r->status : -1;
  };
  auto none = c.Get("/v1/query?format=csv");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(get("/v1/query?format=csv", "wrong"), 401);
  EXPECT_EQ(get("/v1/query?format=csv", "Alpha-Token-2"), 401);  // one character changed
  EXPECT_EQ(get("/v1/query?format=csv", "Alpha-Token-"), 401);   // a prefix
  EXPECT_EQ(get("/v1/query?format=csv", "Alpha-Token-1"), 200);
  EXPECT_EQ(get("/v1/status", "Bravo-Token-2"), 200);
  EXPECT_EQ(get("/no/such", ""), 401);  // before 404: nothing to learn without a token
  EXPECT_EQ(get("/healthz", ""), 200);

  // A keep-alive connection across the reload.
  httplib::Client ka("127.0.0.1", s.port);
  ka.set_keep_alive(true);
  auto ka_get = [&](const std::string& token) {
    auto r = ka.Get("/v1/generations", {{"Authorization", "Bearer " + token}});
    return r ? r->status : -1;
  };
  EXPECT_EQ(ka_get("Alpha-Token-1"), 200);
  WriteFile(tokens, "carol:Charlie-Token-3\n");  // keeps mode 0600
  ::kill(s.proc.pid, SIGHUP);
  int status = 0;
  for (int i = 0; i < 600 && status != 200; ++i) {  // the reload is asynchronous
    status = get("/v1/status", "Charlie-Token-3");
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(ka_get("Alpha-Token-1"), 401);
  EXPECT_EQ(ka_get("Charlie-Token-3"), 200);
  EXPECT_EQ(get("/v1/status", "Bravo-Token-2"), 401);
  ASSERT_TRUE(s.proc.Running());

  // A reload that fails (group-readable now) keeps the tokens in use.
  ::chmod(tokens.c_str(), 0640);
  ::kill(s.proc.pid, SIGHUP);
  for (int i = 0; i < 600 && ReadFile(dir_ / "serve.err").find("reload failed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(ReadFile(dir_ / "serve.err").find("reload failed"), std::string::npos);
  EXPECT_EQ(ka_get("Charlie-Token-3"), 200);
  ka.stop();  // the server's stop waits for open connections
  Stop(s);

  const std::string text = ReadFile(log);
  for (const char* secret : {"Alpha-Token", "Bravo-Token", "Charlie-Token"}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in the access log:\n" << text;
  }
  const std::regex line(
      R"((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) 127\.0\.0\.1:(\d+) (\S+) (GET) (\S+) (\d{3}) (\d+) (\d+))");
  std::vector<std::string> keep_alive_ports;
  std::vector<std::string> seen;
  for (const std::string& l : Lines(text)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    seen.push_back(m[3].str() + " " + m[5].str() + " " + m[6].str());
    if (m[5] == "/v1/generations") keep_alive_ports.push_back(m[2]);
  }
  auto has = [&](const std::string& what) { return std::find(seen.begin(), seen.end(), what) != seen.end(); };
  EXPECT_TRUE(has("- /v1/query?format=csv 401"));
  EXPECT_TRUE(has("alice /v1/query?format=csv 200"));
  EXPECT_TRUE(has("line-4 /v1/status 200"));  // a token without a name: its line
  EXPECT_TRUE(has("- /healthz 200"));
  EXPECT_TRUE(has("carol /v1/generations 200"));
  ASSERT_EQ(keep_alive_ports.size(), 4u);
  for (const std::string& p : keep_alive_ports) EXPECT_EQ(p, keep_alive_ports[0]) << "the connection was not kept";
}

TEST_F(ServeTlsTest, TokenFileReadableByOthersIsRefused) {
  const std::string tokens = TokenFile("t:secret-1\n", 0644);
  RunResult r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--token-file", tokens});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(tokens), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mode 0644"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("secret-1"), std::string::npos) << r.err;
  ::chmod(tokens.c_str(), 0600);
  WriteFile(tokens, "# nothing\n\n");
  r = Snapsink({"serve", root_, "--listen", "127.0.0.1:0", "--token-file", tokens});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("holds no token"), std::string::npos) << r.err;
}

TEST_F(ServeTlsTest, NonLoopbackNeedsTlsAndTokensOrInsecure) {
  // Refused before binding.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--token-file", TokenFile("t:x-1\n")}}) {
    std::vector<std::string> args = {"serve", root_, "--listen", "0.0.0.0:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 1);
    for (const char* flag : {"--tls-cert", "--tls-key", "--token-file", "--insecure"}) {
      EXPECT_NE(r.err.find(flag), std::string::npos) << flag << ": " << r.err;
    }
  }
  // Loopback needs neither.
  for (const char* host : {"127.0.0.2", "localhost", "[::1]"}) {
    Server s;
    const std::string out = dir_ / (std::string(host) + ".out"), err_file = dir_ / (std::string(host) + ".err");
    s.proc = SpawnSnapsink({"serve", root_, "--listen", std::string(host) + ":0"}, {}, out, err_file);
    for (int i = 0; i < 600 && s.proc.Running() && ReadFile(out).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const std::string err = ReadFile(err_file);
    EXPECT_TRUE(s.proc.Running() || err.find("cannot bind") != std::string::npos) << host << ": " << err;  // no ::1 here
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
    if (s.proc.Running()) Stop(s);
  }
  // --insecure: serves (asked on 127.0.0.1) and warns.
  PublishRound(0);
  Server s;
  s.proc = SpawnSnapsink({"serve", root_, "--listen", "0.0.0.0:0", "--insecure"}, {}, dir_ / "out", dir_ / "err");
  std::smatch m;
  const std::regex serving(R"(serving .* on http://0\.0\.0\.0:(\d+))");
  std::string out;
  for (int i = 0; i < 600 && s.proc.Running() && !std::regex_search(out, m, serving); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    out = ReadFile(dir_ / "out");
  }
  ASSERT_TRUE(std::regex_search(out, m, serving)) << out << ReadFile(dir_ / "err");
  const int port = std::stoi(m[1]);
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  Stop(s);
  const std::string err = ReadFile(dir_ / "err");
  EXPECT_NE(err.find("warning: --insecure"), std::string::npos) << err;
  EXPECT_NE(err.find("without TLS"), std::string::npos) << err;
  EXPECT_NE(err.find(" - GET /v1/status 200 "), std::string::npos) << err;  // the access log, on stderr
}

TEST_F(ServeTlsTest, QuietHasNoAccessLog) {
  PublishRound(0);
  Server s = Start({"--quiet"}, false);
  ASSERT_GT(s.port, 0);
  httplib::Client c("127.0.0.1", s.port);
  ASSERT_TRUE(c.Get("/v1/status"));
  Stop(s);
  EXPECT_EQ(ReadFile(dir_ / "serve.err").find("/v1/status"), std::string::npos) << ReadFile(dir_ / "serve.err");
}

}  // namespace
}  // namespace snapsink::testing
