// Helpers for tests of `snapsink serve` through the binary (serve_test.cc,
// serve_limits_test.cc): a server on a free loopback port, and a root that
// publishes a generation per round.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {

// A port that was free a moment ago (bind 0, read it back, close).
int FreePort();

// A running `snapsink serve`; killed (SIGKILL) when it goes out of scope
// still running, so that a failed assertion leaves no server behind.
struct Server {
  Server() = default;
  Server(Server&& o) noexcept : proc(o.proc), port(o.port) { o.proc = Spawned(); }
  Server& operator=(Server&& o) noexcept;
  ~Server();

  Spawned proc;
  int port = 0;  // 0: it did not start
};

// `snapsink serve ROOT --listen 127.0.0.1:PORT EXTRA...` on a free port;
// returns once it answers /healthz (at most ~60 s, polled by count).
// Retries with another port if the one picked was taken meanwhile.
Server StartServe(const std::string& root, const std::vector<std::string>& extra = {});

// One event line of producer "p": ts is 2026-10-21T10:00:00Z + window hours
// + seq ms.
std::string Event(int seq, int window, const std::string& metric, const std::string& key, int value);

// A fresh root (window 1h) and an input file beside it.
class ServeFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  // Appends events for round i and publishes them with `run --final`:
  // round i is generation i + 1 and touches windows 10:00 and 11:00 (and
  // 12:00 when i % 3 == 2).
  void PublishRound(int i);
  // SIGTERM; the server exits 0.
  void Stop(Server& s);

  TempDir dir_;
  std::string root_, input_;
};

}  // namespace snapsink::testing
