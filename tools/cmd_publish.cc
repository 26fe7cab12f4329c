// seal, publish and run.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/follow.h"
#include "publish/http_server.h"
#include "publish/publisher.h"
#include "publish/root_status.h"
#include "publish/seal.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status IngestInto(Root* root, const IngestArgs& a);  // cmd_ingest.cc

void PrintSealed(const std::vector<SealedWindow>& sealed) {
  for (const SealedWindow& s : sealed) {
    std::printf("sealed %s v%llu: %llu rows, %lld events\n", FormatIso(s.window_ms).c_str(), static_cast<unsigned long long>(s.version),
                static_cast<unsigned long long>(s.rows), static_cast<long long>(s.events));
  }
}

namespace {

// Why a seal found nothing: the open windows with unsealed changes, when
// each closes, the watermark, and the flag that seals them anyway.
Status ExplainNothingToSeal(Root* root, const char* flag) {
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root, &s));
  std::string open;
  size_t n = 0;
  for (const WindowStatus& w : s.windows) {
    if (w.closed || !w.state.dirty) continue;
    if (++n <= 5) {
      open += (open.empty() ? "" : ", ") + FormatIso(w.start_ms) + " (closes at event time " +
              FormatIso(w.closes_at_ms) + ")";
    }
  }
  if (n > 5) open += " and " + std::to_string(n - 5) + " more";
  const std::string wm = s.watermark ? FormatIso(*s.watermark) : "none (no event applied yet)";
  if (n == 0) {
    std::printf("nothing to seal: no window has unsealed changes (watermark %s)\n", wm.c_str());
  } else {
    std::printf("nothing to seal: no closed window has unsealed changes; open: %s; watermark %s; %s seals open "
                "windows too\n", open.c_str(), wm.c_str(), flag);
  }
  return Status::OK();
}

Status SealRoot(Root* root, const std::vector<std::string>& names, bool all, const char* flag) {
  std::vector<int64_t> windows;
  if (names.empty()) {
    SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root->store(), root->config(), all, &windows));
  } else {
    for (const std::string& n : names) {
      int64_t w;
      SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--window", n, root->config().window_ms, &w));
      windows.push_back(w);
    }
  }
  SealTarget t{root->env(), root->path(), root->store(), root->config().window_ms};
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
  PrintSealed(sealed);
  if (sealed.empty()) {
    if (!names.empty()) {
      std::printf("nothing to seal: no unsealed changes in the windows asked for\n");
    } else {
      SNAPSINK_RETURN_IF_ERROR(ExplainNothingToSeal(root, flag));
    }
  }
  return Status::OK();
}

Status PublishRoot(Root* root) {
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishStaged(root->env(), root->path(), root->store(), &r));
  if (r.generation == 0) {
    std::printf("nothing to publish\n");
  } else {
    std::printf("published generation %llu: %zu window(s)\n", static_cast<unsigned long long>(r.generation), r.windows);
  }
  return Status::OK();
}

Status RunFollow(const RunArgs& a) {
  if (a.final) return Status::InvalidArgument("--final and --follow exclude each other");
  if (a.ingest.files.empty() || std::find(a.ingest.files.begin(), a.ingest.files.end(), "-") != a.ingest.files.end()) {
    return Status::InvalidArgument("--follow reads files and directories, not standard input");
  }
  if (!a.ingest.source.empty()) return Status::InvalidArgument("--source does not go with --follow");
  FollowOptions o;
  o.inputs = a.ingest.files;
  o.commit_every = a.ingest.commit_every;
  o.stop_on_error = a.ingest.on_error == "stop";
  o.id_from_content = a.ingest.id_from_content;
  if (!ParseDuration(a.publish_every, &o.publish_every_ms) || o.publish_every_ms < 0) {
    return Status::InvalidArgument("--publish-every " + a.publish_every + ": expected a duration such as 10s");
  }
  if (!ParseDuration(a.poll, &o.poll_ms) || o.poll_ms <= 0) {
    return Status::InvalidArgument("--poll " + a.poll + ": expected a duration such as 1s");
  }
  o.on_sealed = [](const std::vector<SealedWindow>& sealed) {
    PrintSealed(sealed);
    std::fflush(stdout);
  };
  o.on_published = [](const PublishResult& r) {
    std::printf("published generation %llu: %zu window(s)\n", static_cast<unsigned long long>(r.generation), r.windows);
    std::fflush(stdout);
  };
  StopSignals signals;  // before any thread starts
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.ingest.root, /*writer=*/true, &root));
  Follower follower(root.get(), o);
  std::unique_ptr<HttpServer> server;
  std::thread serving;
  Status serve_status;
  if (!a.serve.empty()) {
    api::ServeOptions so;
    so.listen = a.serve;
    UseToolWindowSyntax(&so);
    // One LMDB environment per process: the server reads live state through root.
    SNAPSINK_RETURN_IF_ERROR(HttpServer::Open(root->path(), so, root.get(), &server));
    std::printf("serving %s on http://%s:%d\n", root->path().c_str(),
                a.serve.substr(0, a.serve.rfind(':')).c_str(), server->port());
    std::fflush(stdout);
    serving = std::thread([&] { serve_status = server->Run(); });
  }
  signals.OnSignal([&] {
    follower.Stop();
    if (server) server->Stop();
  });
  Status s = follower.Run();
  if (server) {
    server->Stop();
    serving.join();
  }
  signals.Finish();  // its thread may still be in Stop: join it before those go
  SNAPSINK_RETURN_IF_ERROR(s);
  return serve_status;
}

}  // namespace

// seal: commit point is each window's LMDB seal record (SealWindow).
Status CmdSeal(const SealArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/true, &root));
  return SealRoot(root.get(), a.windows, a.all, "--all");
}

Status CmdPublish(const std::string& path) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  return PublishRoot(root.get());
}

Status CmdRun(const RunArgs& a) {
  if (a.follow) return RunFollow(a);
  if (!a.serve.empty()) return Status::InvalidArgument("--serve goes with --follow");
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.ingest.root, /*writer=*/true, &root));
  IngestArgs ingest = a.ingest;
  ingest.final = a.final;
  SNAPSINK_RETURN_IF_ERROR(IngestInto(root.get(), ingest));
  SNAPSINK_RETURN_IF_ERROR(SealRoot(root.get(), {}, a.final, "--final"));
  return PublishRoot(root.get());
}

}  // namespace snapsink
