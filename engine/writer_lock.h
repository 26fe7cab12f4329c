// The writer's LOCK, and how writers share it with a running follower
// (SPEC 5, 13).
//
// ROOT/LOCK is an exclusive file lock: one writer at a time. Writers that
// run once (ingest, seal, publish, run, gc, rollback, gaps accept,
// retire-producers, backfill's publish) hold it for their whole work. A follower (`run
// --follow`, sink/follower.h; api::Sink::OpenFollower's Steps) runs for months, so it holds
// LOCK only for one step at a time (one pass over its inputs, the seal, the
// publish and the gc after it) and lets go between steps.
//
// Why short holds and not requests that the follower carries out: every
// maintenance command already is a crash-safe writer of its own, with its
// own output, exit status and crash points; run in its own process under
// LOCK it stays exactly that, and the follower needs to know nothing about
// it. LMDB allows this: any number of processes may open one environment,
// and only one write transaction runs at a time. The follower's state lives
// in LMDB and in files, never only in its memory, so each step starts from
// what the last writer committed, whoever that was.
//
// The follower holds ROOT/LOCK.follower for its life. A writer that finds
// LOCK held and a follower running waits (at most kFollowerStepWaitMs) for
// the step to end instead of failing at once; while it waits it holds
// ROOT/LOCK.queue shared, and the follower does not start a step (and ends
// a step early, between sources) while anyone holds it, so a busy follower
// never starves a waiting writer. A writer that finds LOCK held and no
// follower gets Locked at once, as always.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/env.h"

namespace snapsink {

// How long a writer waits for a running follower to end its step.
inline constexpr int64_t kFollowerStepWaitMs = 60 * 1000;

// Takes the writer lock of the root at path. Locked (naming the holder's
// pid) at once when another writer holds it and no follower runs; beside a
// follower, after waiting up to kFollowerStepWaitMs.
Status LockRoot(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock);

// Takes the writer lock, waiting up to wait_ms for whoever holds it
// (backfill's final step: its ingest ran beside any writer).
Status LockRootWaiting(Env* env, const std::string& path, int64_t wait_ms, std::unique_ptr<FileLock>* lock);

// The follower's lock for its life: Locked when another follower runs.
Status LockFollower(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock);

// True when a writer waits for LOCK (holds LOCK.queue): a follower ends its
// step as soon as it can.
bool WritersWaiting(Env* env, const std::string& path);

// The follower's LOCK for one step: waits without bound while other writers
// hold or wait for it, sleeping through sleep(ms) (which returns early when
// the follower is told to stop). Returns OK with *lock held, or Locked (and
// no lock) when give_up() says so while it waits.
Status LockRootForStep(Env* env, const std::string& path, const std::function<bool()>& give_up,
                       const std::function<void(int64_t ms)>& sleep, std::unique_ptr<FileLock>* lock);

}  // namespace snapsink
