// How the writing commands (seal, publish, run, backfill) print what they did.
#pragma once

#include <string>
#include <vector>

#include "snapsink/options.h"

namespace snapsink {

// "sealed WINDOW vV: R rows, E events", one line per window, on stdout.
void PrintSealed(const std::vector<api::SealedWindow>& sealed);

// Why a seal of the closed windows found nothing, on stdout; flag is the
// option that seals open windows too (--all, --final).
// flag: the one that seals open windows too; nullptr when it was given
// and the input stopped before its end.
void PrintNothingToSeal(const api::UnsealedWindows& why, const char* flag);

// "published generation G: N window(s)" on stdout.
void PrintPublished(const api::PublishResult& r);

// What publish (and run) did: PrintPublished, or "nothing to publish".
void PrintPublishResult(const api::PublishResult& r);

// A note of the library (IngestOptions::on_note, FollowOptions::on_note, the
// Kafka consumer's): one line on stderr. The library never prints itself.
void PrintNote(const std::string& note);

// The per-window impact table of backfill (and its --dry-run) on stdout.
void PrintImpact(const std::vector<api::WindowImpact>& impact);

}  // namespace snapsink
