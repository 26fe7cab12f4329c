// snapsink serve's memory under the heaviest queries, through the binary:
// 8 clients at once each asking for every row of a 200,000-row root (an
// all-matching key-prefix query) get the right bytes while the server's RSS
// (/proc/PID/status VmRSS, sampled while they run) stays under the bound
// docs/SERVE.md states.
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// The RSS of process pid in MiB, from /proc (0 if unreadable).
long RssMiB(pid_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find("VmRSS:");
  return at == std::string::npos ? 0 : std::stol(status.substr(at + 6)) / 1024;
}

class ServeMemoryTest : public ServeFixture {};

// docs/SERVE.md: "8 concurrent all-matching queries over 200,000 rows stay under
// 256 MiB".
TEST_F(ServeMemoryTest, EightConcurrentAllMatchingQueriesStayUnderTheBound) {
  constexpr int kWindows = 100, kKeys = 2000, kClients = 8;
  constexpr long kBoundMiB = 256;
  std::string events;
  for (int w = 0; w < kWindows; ++w) {
    for (int k = 0; k < kKeys; ++k) events += Event(w * kKeys + k, w, "orders", "key-" + std::to_string(k), k);
  }
  AppendFile(input_, events);
  events.clear();
  events.shrink_to_fit();
  RunResult run = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  RunResult q = Snapsink({"query", root_, "--key-prefix", "key-", "--format", "csv"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  ASSERT_EQ(std::count(q.out.begin(), q.out.end(), '\n'), kWindows * kKeys + 1);

  Server server = StartServe(root_, {"--quiet"});
  ASSERT_GT(server.port, 0);
  std::vector<int> status(kClients, -1);
  std::vector<bool> same(kClients, false);
  std::atomic<int> running{kClients};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server.port);
      c.set_read_timeout(120, 0);
      if (auto r = c.Get("/v1/query?key-prefix=key-&format=csv")) {
        status[i] = r->status;
        same[i] = r->body == q.out;
      }
      --running;
    });
  }
  long peak = 0;
  while (running.load() > 0) {  // ends when the clients do (each bounded by its read timeout)
    peak = std::max(peak, RssMiB(server.proc.pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(status[i], 200) << "client " << i;
    EXPECT_TRUE(same[i]) << "client " << i << ": not the bytes of `snapsink query`";
  }
  EXPECT_GT(peak, 0);
#if defined(SNAPSINK_SANITIZED)
  // AddressSanitizer's shadow memory and quarantine (256 MiB by default) are
  // RSS of their own: the answers are checked, the bound is not.
  (void)kBoundMiB;
#else
  EXPECT_LT(peak, kBoundMiB) << "MiB of RSS at the peak";
#endif
  std::printf("peak RSS %ld MiB under %d concurrent queries of %d rows (%zu bytes each)\n", peak, kClients,
              kWindows * kKeys, q.out.size());
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
