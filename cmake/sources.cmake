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
  engine/gap_spill.cc
  engine/id_dedup.cc
  engine/ingest.cc
  engine/ingest_batch.cc
  engine/json_escape.cc
  engine/line_reader.cc
  engine/parse_ahead.cc
  engine/long_key.cc
  engine/producer_retention.cc
  engine/root.cc
  engine/writer_lock.cc
  engine/root_files.cc
  engine/source_gap_acceptance.cc
  engine/sequencer.cc
  engine/state_codec.cc
  engine/store.cc
  engine/timeutil.cc
  engine/watermark.cc
  engine/window_records.cc
  engine/window_records_runs.cc
  engine/window_retention.cc
  publish/backfill.cc
  publish/backfill_impact.cc
  publish/checked_json.cc
  publish/current_codec.cc
  publish/current_file.cc
  publish/follow.cc
  publish/generation_manifest.cc
  publish/generation_parts.cc
  publish/maintenance.cc
  publish/metrics.cc
  publish/old_formats.cc
  publish/partition_merge.cc
  publish/partition_seals.cc
  publish/partition_seals_gc.cc
  publish/publisher.cc
  publish/query_rows.cc
  publish/reader.cc
  publish/rollback.cc
  publish/root_status.cc
  publish/seal.cc
  publish/snapshot_file.cc
  publish/snapshot_manifest.cc
  publish/table_cache.cc
  publish/upgrade.cc
  publish/state_views.cc
  publish/views.cc
  sink/follow.cc
  sink/inspect.cc
  sink/merged.cc
  sink/owners.cc
  sink/parse.cc
  sink/checkpoint.cc
  sink/partition_owners.cc
  sink/reader.cc
  sink/sink.cc
  sink/state_ops.cc
  sink/step.cc
  sink/version.cc
  sink/write_batch.cc
  sink/write_queue.cc
)

# The public API: installed under include/snapsink/. Standard library only.
set(SNAPSINK_PUBLIC_HEADERS
  include/snapsink/merged.h
  include/snapsink/options.h
  include/snapsink/reader.h
  include/snapsink/sink.h
  include/snapsink/status.h
  include/snapsink/version.h
  include/snapsink/views.h
  include/snapsink/write_batch.h
)

# Public headers of utilities/ (their code is built on the public API only):
# installed under include/snapsink/utilities/.
set(SNAPSINK_PUBLIC_UTILITY_HEADERS
  include/snapsink/utilities/parse.h
  include/snapsink/utilities/serve.h
  include/snapsink/utilities/table.h
)

# The public utilities' code, compiled apart from the library's internals
# and then archived into it: utilities/serve/ (the HTTP server and the
# status page: api::Server, api::StatusPage) and utilities/table/ (ToTable,
# FormatTable).
set(SNAPSINK_PUBLIC_UTILITY_SOURCES
  utilities/serve/http_request.cc
  utilities/serve/http_server.cc
  utilities/serve/serve_auth.cc
  utilities/serve/server.cc
  utilities/serve/status_page.cc
  utilities/serve/status_page_html.cc
  utilities/table/table.cc
  utilities/table/view_tables.cc
)

# utilities/: programs' libraries over the public API only.
set(SNAPSINK_KAFKA_SOURCES
  utilities/kafka/kafka_config.cc
  utilities/kafka/kafka_consumer.cc
  utilities/kafka/kafka_run.cc
  utilities/kafka/merged_publish.cc
  utilities/kafka/partition_states.cc
  utilities/kafka/partition_writer.cc
)

# librdkafka mock-cluster tests of `run --kafka` (their own executable).
set(SNAPSINK_KAFKA_TEST_SOURCES
  tests/kafka_mock_harness.cc
  tests/kafka_mock_cluster.cc
  tests/kafka_events.cc
  tests/file_util.cc
)

# Many `run --kafka --state` processes killed and scaled (their own executable).
set(SNAPSINK_KAFKA_SCALE_TEST_SOURCES
  tests/kafka_scale_test.cc
  tests/kafka_mock_cluster.cc
  tests/kafka_events.cc
  tests/file_util.cc
)

# The command-line tool.
set(SNAPSINK_TOOL_SOURCES
  tools/cli_errors.cc
  tools/cmd_backfill.cc
  tools/cmd_gaps.cc
  tools/cmd_gc.cc
  tools/cmd_ingest.cc
  tools/cmd_init.cc
  tools/cmd_inspect.cc
  tools/cmd_metrics.cc
  tools/cmd_publish.cc
  tools/cmd_query.cc
  tools/cmd_rollback.cc
  tools/cmd_run.cc
  tools/cmd_run_kafka.cc
  tools/cmd_seal.cc
  tools/cmd_serve.cc
  tools/cmd_status.cc
  tools/cmd_upgrade.cc
  tools/cmd_verify.cc
  tools/exit_codes.cc
  tools/flag_groups.cc
  tools/ingest_options.cc
  tools/main.cc
  tools/progress.cc
  tools/stop_signals.cc
  tools/table.cc
  tools/version.cc
  tools/window_arg.cc
  tools/write_results.cc
)

# GoogleTest suite (SNAPSINK_BUILD_TESTS).
set(SNAPSINK_TEST_SOURCES
  tests/api_test.cc
  tests/api_views_test.cc
  tests/layers_test.cc
  tests/api_follower_test.cc
  tests/api_write_test.cc
  tests/backfill_stdin_test.cc
  tests/backfill_test.cc
  tests/cli_golden_test.cc
  tests/cli_newcomer_test.cc
  tests/cli_operator_test.cc
  tests/cli_smoke_test.cc
  tests/coding_test.cc
  tests/corruption_test.cc
  tests/crash_recovery_test.cc
  tests/decimal_test.cc
  tests/enospc_test.cc
  tests/event_parser_test.cc
  tests/follow_test.cc
  tests/fault_env.cc
  tests/file_util.cc
  tests/gap_acceptance_test.cc
  tests/gap_spill_test.cc
  tests/gc_rollback_test.cc
  tests/generation_parts_test.cc
  tests/id_dedup_test.cc
  tests/ingest_cli_test.cc
  tests/ingest_crash_test.cc
  tests/ingest_agg_table_test.cc
  tests/ingest_batch_test.cc
  tests/live_root_test.cc
  tests/ingest_model_test.cc
  tests/ingest_power_cut_test.cc
  tests/init_atomic_test.cc
  tests/line_reader_test.cc
  tests/manifest_test.cc
  tests/numeric_edges_test.cc
  tests/option_errors_test.cc
  tests/owner_epoch_test.cc
  tests/checkpoint_test.cc
  tests/partition_seals_test.cc
  tests/partition_upkeep_test.cc
  tests/parse_ahead_test.cc
  tests/producer_retention_test.cc
  tests/progress_test.cc
  tests/publish_crash_test.cc
  tests/power_cut_lmdb_test.cc
  tests/publish_power_cut_test.cc
  tests/query_range_test.cc
  tests/reader_concurrency_test.cc
  tests/readers_beside_writer_test.cc
  tests/rollback_power_cut_test.cc
  tests/retention_test.cc
  tests/watermark_test.cc
  tests/rollback_test.cc
  tests/root_files_test.cc
  tests/root_test.cc
  tests/sequencer_test.cc
  tests/serve_api_test.cc
  tests/serve_limits_test.cc
  tests/serve_tls_test.cc
  tests/serve_test.cc
  tests/status_page_test.cc
  tests/serve_util.cc
  tests/snapshot_file_test.cc
  tests/source_identity_test.cc
  tests/state_codec_source_test.cc
  tests/state_codec_test.cc
  tests/status_test.cc
  tests/storable_test.cc
  tests/store_test.cc
  tests/store_unit_test.cc
  tests/table_cache_test.cc
  tests/upgrade_test.cc
  tests/format_bounds_test.cc
  tests/generation_view.cc
  tests/test_util.cc
  tests/timeutil_test.cc
  tests/verify_messages_test.cc
  tests/window_records_test.cc
  tests/window_records_runs_test.cc
  tests/write_batch_crash_test.cc
  tests/write_batch_test.cc
)

# Benchmark (SNAPSINK_BUILD_BENCH; needs SQLite for its baseline).
set(SNAPSINK_BENCH_SOURCES
  bench/baselines.cc
  bench/bench_main.cc
  bench/bench_util.cc
  bench/checkpoint_bench.cc
  bench/id_state_bench.cc
  bench/input_gen.cc
  bench/parts_bench.cc
  bench/serve_bench.cc
  bench/merged_publish_bench.cc
  bench/write_bench.cc
)
