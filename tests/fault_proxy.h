// A small TCP proxy for the bucket fault tests: it sits between snapsink
// and the local S3 server, forwards every byte both ways, watches the HTTP
// requests go by (method and path), and can lose the answer to one PUT
// after the server acted on it: the answer is read from the server and
// then, instead of forwarding it, the client's connection is closed (a
// reset after a successful PUT), or a 500 is sent in its place (what RGW
// answers to many losers of an If-Match race); or answer every request of
// one method and path with a status of its choosing (a gateway refusing or
// failing HEADs); or hold the answers of the PUTs of some objects for a
// while (a slow upload) and then forward them.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace snapsink::testing {

class FaultProxy {
 public:
  enum class Fault { kCloseConnection, kAnswer500, kAnswerStatus, kDelay };

  // Listens on 127.0.0.1 (a free port) and forwards to upstream
  // ("http://HOST:PORT").
  explicit FaultProxy(const std::string& upstream);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  bool ok() const { return listen_fd_ >= 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // The answer to the next PUT whose path ends with `suffix` (the first
  // one after this call, once) is lost as `fault` says.
  void LoseAnswerOnce(const std::string& suffix, Fault fault);
  // From now on every request of method (e.g. "HEAD") whose path ends with
  // suffix is answered with HTTP status (after the server answered it).
  void AnswerEvery(const std::string& method, const std::string& suffix, int status);
  // From now on the answer to every PUT whose path ends with suffix is held
  // ms milliseconds after the server gave it, then forwarded.
  void DelayAnswers(const std::string& suffix, int ms);
  // How many answers were lost so far, and the path of the PUT whose
  // answer was lost last ("/BUCKET/KEY").
  int lost() const { return lost_.load(); }
  std::string lost_path();
  // How many PUTs whose path ends with suffix went through.
  int Puts(const std::string& suffix);

 private:
  void AcceptLoop();
  void Serve(int client);
  // Called with the header block of each request from the client; true
  // when its answer is to be lost (*fault set).
  bool Observe(const std::string& method, const std::string& path, Fault* fault);

  std::string host_;
  int upstream_port_ = 0;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> lost_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> fds_;
  std::vector<std::string> puts_;  // the path of every PUT seen
  std::string armed_suffix_;
  Fault armed_fault_ = Fault::kCloseConnection;
  bool armed_ = false;
  std::string every_method_, every_suffix_;
  int every_status_ = 0;
  std::string delay_suffix_;
  int delay_ms_ = 0;
  std::string lost_path_;
};

}  // namespace snapsink::testing
