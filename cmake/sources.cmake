# Every source file of every target, in one place (no globs: a new file is a
# deliberate line here). Paths are relative to the project root.

# The engine: a static library, installed with the public headers.
set(SNAPSINK_LIB_SOURCES
  engine/coding.cc
  engine/crash_point.cc
  engine/decimal.cc
  engine/env_posix.cc
  engine/event_parser.cc
  engine/filenames.cc
  engine/gap_acceptance.cc
  engine/id_dedup.cc
  engine/ingest.cc
  engine/json_escape.cc
  engine/line_reader.cc
  engine/long_key.cc
  engine/producer_retention.cc
  engine/root.cc
  engine/root_files.cc
  engine/sequencer.cc
  engine/state_codec.cc
  engine/store.cc
  engine/timeutil.cc
  engine/window_records.cc
  publish/backfill.cc
  publish/backfill_impact.cc
  publish/checked_json.cc
  publish/current_file.cc
  publish/generation_manifest.cc
  publish/maintenance.cc
  publish/metrics.cc
  publish/publisher.cc
  publish/reader.cc
  publish/rollback.cc
  publish/root_status.cc
  publish/seal.cc
  publish/snapshot_file.cc
  publish/snapshot_manifest.cc
  sink/inspect.cc
  sink/reader.cc
  sink/sink.cc
)

# The public API: installed under include/snapsink/. Standard library only.
set(SNAPSINK_PUBLIC_HEADERS
  include/snapsink/options.h
  include/snapsink/reader.h
  include/snapsink/sink.h
  include/snapsink/status.h
)

# The command-line tool.
set(SNAPSINK_TOOL_SOURCES
  tools/cli_errors.cc
  tools/cmd_backfill.cc
  tools/cmd_gaps.cc
  tools/cmd_ingest.cc
  tools/cmd_inspect.cc
  tools/cmd_inspect_ids.cc
  tools/cmd_metrics.cc
  tools/cmd_ops.cc
  tools/cmd_publish.cc
  tools/cmd_query.cc
  tools/cmd_status.cc
  tools/impact_table.cc
  tools/main.cc
  tools/progress.cc
  tools/table.cc
  tools/version.cc
  tools/window_arg.cc
)

# GoogleTest suite (SNAPSINK_BUILD_TESTS).
set(SNAPSINK_TEST_SOURCES
  tests/api_test.cc
  tests/backfill_stdin_test.cc
  tests/backfill_test.cc
  tests/cli_operator_test.cc
  tests/cli_smoke_test.cc
  tests/coding_test.cc
  tests/corruption_test.cc
  tests/decimal_test.cc
  tests/enospc_test.cc
  tests/event_parser_test.cc
  tests/fault_env.cc
  tests/gap_acceptance_test.cc
  tests/gc_rollback_test.cc
  tests/id_dedup_test.cc
  tests/ingest_cli_test.cc
  tests/ingest_crash_test.cc
  tests/ingest_model_test.cc
  tests/ingest_power_cut_test.cc
  tests/init_atomic_test.cc
  tests/line_reader_test.cc
  tests/manifest_test.cc
  tests/numeric_edges_test.cc
  tests/producer_retention_test.cc
  tests/progress_test.cc
  tests/publish_crash_test.cc
  tests/publish_power_cut_test.cc
  tests/reader_concurrency_test.cc
  tests/readers_beside_writer_test.cc
  tests/rollback_power_cut_test.cc
  tests/rollback_test.cc
  tests/root_files_test.cc
  tests/root_test.cc
  tests/sequencer_test.cc
  tests/snapshot_file_test.cc
  tests/source_identity_test.cc
  tests/state_codec_source_test.cc
  tests/state_codec_test.cc
  tests/storable_test.cc
  tests/store_test.cc
  tests/store_unit_test.cc
  tests/test_util.cc
  tests/timeutil_test.cc
  tests/window_records_test.cc
)

# Benchmark (SNAPSINK_BUILD_BENCH; needs SQLite for its baseline).
set(SNAPSINK_BENCH_SOURCES
  bench/baselines.cc
  bench/bench_main.cc
  bench/bench_util.cc
  bench/id_state_bench.cc
  bench/input_gen.cc
)
