#include "tests/kafka_mock_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace snapsink::kafkatest {
namespace {

std::atomic<int> g_delivery_failures{0};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err) {
    std::fprintf(stderr, "kafka test producer: delivery failed: %s\n", rd_kafka_err2str(m->err));
    ++g_delivery_failures;
  }
}

void Set(rd_kafka_conf_t* conf, const char* k, const char* v) {
  char err[512];
  if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) throw std::runtime_error(err);
}

}  // namespace

MockCluster::MockCluster(int brokers, const std::vector<std::pair<std::string, std::string>>& producer_config) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Set(conf, "test.mock.num.brokers", std::to_string(brokers).c_str());
  Set(conf, "max.in.flight.requests.per.connection", "1");  // keeps each partition's order under retries
  Set(conf, "linger.ms", "5");
  Set(conf, "log_level", "3");
  for (const auto& [k, v] : producer_config) Set(conf, k.c_str(), v.c_str());
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk_) throw std::runtime_error(err);
  mock_ = rd_kafka_handle_mock_cluster(rk_);
  bootstraps_ = rd_kafka_mock_cluster_bootstraps(mock_);
}

MockCluster::~MockCluster() {
  rd_kafka_flush(rk_, 10000);
  rd_kafka_destroy(rk_);
}

void MockCluster::CreateTopic(const std::string& topic, int partitions) {
  rd_kafka_mock_topic_create(mock_, topic.c_str(), partitions, 3);
}

bool MockCluster::Produce(const std::string& topic, int32_t partition, const std::vector<std::string>& values) {
  const int failed_before = g_delivery_failures.load();
  for (const std::string& v : values) {
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                                RD_KAFKA_V_VALUE(const_cast<char*>(v.data()), v.size()),
                                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk_, 50);
        continue;
      }
      if (e) {
        std::fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
        return false;
      }
      break;
    }
  }
  return rd_kafka_flush(rk_, 30000) == RD_KAFKA_RESP_ERR_NO_ERROR && g_delivery_failures.load() == failed_before;
}

bool MockCluster::ProduceTombstone(const std::string& topic, int32_t partition) {
  const int failed_before = g_delivery_failures.load();
  static const char kKey[] = "k";
  rd_kafka_resp_err_t e = rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                            RD_KAFKA_V_KEY(kKey, 1), RD_KAFKA_V_VALUE(nullptr, 0),
                                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  if (e) {
    std::fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
    return false;
  }
  return rd_kafka_flush(rk_, 30000) == RD_KAFKA_RESP_ERR_NO_ERROR && g_delivery_failures.load() == failed_before;
}

std::vector<int64_t> MockCluster::Committed(const std::string& group, const std::string& topic, int partitions) {
  std::vector<int64_t> out(partitions, -2);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Set(conf, "bootstrap.servers", bootstraps_.c_str());
  Set(conf, "group.id", group.c_str());
  Set(conf, "log_level", "3");
  char err[512];
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!c) return out;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(l, topic.c_str(), p);
  if (rd_kafka_committed(c, l, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < l->cnt; ++i) out[l->elems[i].partition] = l->elems[i].err ? -2 : l->elems[i].offset;
  }
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(c);
  return out;
}

bool MockCluster::Watermarks(const std::string& topic, int32_t partition, int64_t* lo, int64_t* hi) {
  return rd_kafka_query_watermark_offsets(rk_, topic.c_str(), partition, lo, hi, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

Child::Child(const std::string& binary, const std::vector<std::string>& args, const std::vector<std::string>& env,
             const std::string& dir) {
  static std::atomic<int> n{0};
  const std::string stem = dir + "/child" + std::to_string(n++);
  out_path_ = stem + ".out";
  err_path_ = stem + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s{binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "SNAPSINK_CRASH_", 15) != 0 && std::strncmp(*e, "SNAPSINK_PAUSE_", 15) != 0) {
      env_s.emplace_back(*e);
    }
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  if (posix_spawn(&pid_, binary.c_str(), &fa, &attr, argv.data(), envp.data()) != 0) pid_ = -1;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

void Child::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

bool Child::Running() {
  if (pid_ <= 0 || reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

bool Child::Stopped() {
  if (!Running()) return false;
  // /proc/PID/stat: "PID (COMM) STATE ...", COMM may hold spaces and ')'.
  const std::string stat = ReadFile("/proc/" + std::to_string(pid_) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T';
}

std::string Child::Err() const { return ReadFile(err_path_); }

ChildResult Child::Wait(int timeout_s) {
  ChildResult r;
  if (pid_ <= 0) {
    r.err = "spawn failed";
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (Running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
      reaped_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  r.out = ReadFile(out_path_);
  r.err = ReadFile(err_path_);
  return r;
}

ChildResult RunChild(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, const std::string& dir, int timeout_s) {
  Child c(binary, args, env, dir);
  return c.Wait(timeout_s);
}

}  // namespace snapsink::kafkatest
