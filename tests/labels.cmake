# Labels for the tests of snapsink_tests, read by ctest after the discovered
# test list (CMakeLists.txt adds this file to TEST_INCLUDE_FILES). Each test
# gets one label:
#   crash  it crashes the binary at a crash point (SNAPSINK_CRASH_AT), cuts
#          power under a fault-injecting Env, or fills a disk, then reruns;
#   slow   it takes more than about a second on an idle machine (many runs
#          of the binary, thousands of windows, concurrency);
#   unit   everything else: `ctest --test-dir build -L unit` runs in seconds.
# (kafka_mock_harness's and kafka_scale_test's tests carry `kafka`, set where
# they are discovered.)
# A test is matched by its full name, Suite.Test (with a parameterized
# suite's prefix and the /value suffix that ctest shows), as a regex in a
# bracket argument. A new test is `unit` unless named below:
# if it is slow, add it to SNAPSINK_SLOW_TESTS.

set(SNAPSINK_CRASH_TESTS
  "Crash"             # IngestCrashTest, PublishCrashTest, InitCrash, ...CrashTest
  "PowerCut"          # PowerCutSweep, PowerCutLmdb, PowerCutTest, RollbackPowerCutTest
  [=[^FullDisk\.]=]
  [=[^HalfRenamedSnapshot\.]=]
  [=[^NeverCommittedBackfillEnv\.]=]
)

# Measured: every test that took a second or more in a full `ctest -j2` on
# the shared 2-core machine under load (about 5x an idle run); the rest
# (`unit`, about 270 tests) takes seconds on an idle machine.
set(SNAPSINK_SLOW_TESTS
  [=[^LiveRootTest\.]=]                # a follower process beside each command
  [=[^CliGolden\.]=]                   # 92 runs of the binary
  [=[^Interrupt\.]=]                   # 200,000 lines in batches of 100, twice
  [=[^DDSketchTest\..*Million]=]       # a million values into a sketch, and sorted
  [=[^QuantilesKind\.]=]               # runs of the binary over hundreds to thousands of events
  [=[^QuantilesExactlyOnce\.]=]        # roots by the file path, the write path and a backfill, compared
  [=[^InitKinds\.]=]                   # a dozen runs of the binary each
  [=[^DistinctKind\.]=]                # runs of the binary over hundreds to thousands of events
  [=[^HyperLogLogTest\..*MillionWithin]=] # a million and ten million items hashed
  [=[^MissingCurrent\.]=]              # two publishes, then each command
  [=[^ServeHostileTest\.]=]            # slow clients held for seconds
  [=[^ServePolicyTest\.]=]             # servers and openssl handshakes
  [=[^ServeMemoryTest\.]=]             # a 600,000-row root queried 8 times at once
  [=[^RollupPassesTest\.]=]            # roll-ups read again with budgets down to one row per range
  [=[^ServeFairnessTest\.]=]           # 200 keep-alive clients asking for seconds
  [=[^Readme\.TourRunsAsWritten$]=]    # README's tour: about 30 commands, a server, curl
  [=[^ApiViewsTest\.GenerationsNameWhatARollbackCopied$]=]
  [=[^ApiViewsTest\.SourcesCountDuplicatesByIdAndIdsAreHeld$]=]
  [=[^ApiViewsTest\.StatusAndMetrics$]=]
  [=[^ApiWriteTest\.BackfillDryRunWritesNothing$]=]
  [=[^Backfill\.LiveIngestGoesOnWhileABackfillRuns$]=]
  [=[^Backfill\.LiveLateEventLandsOnTopOfTheCorrection$]=]
  [=[^Backfill\.RepeatedBackfillChangesNothing$]=]
  [=[^Backfill\.SwitchesOnlyTheBackfilledWindowsInOneGeneration$]=]
  [=[^Backfill\.TooLowVersionIsRefusedBeforeAnyWork$]=]
  [=[^BackfillDryRun\.PrintsCurrentAndNewPerWindowAndLeavesTheRootByteIdentical$]=]
  [=[^BackfillStdin\.BackfillFromStdinPublishes$]=]
  [=[^BackfillStdin\.DifferentPipeOnRerunIsRefused$]=]
  [=[^BackfillStdin\.SourceNameNamesTheRejectsFile$]=]
  [=[^BackfillStdin\.VersionIsUsedUpOnlyByAPublish$]=]
  [=[^BucketRootCli\.]=]               # runs of the binary against RGW: 1 to 33 s each
  [=[^BucketRootWriters\.]=]           # runs of the binary against RGW
  [=[^BucketEnvTest\.TwoRacingSwappersOfCurrentPublishEachGenerationOnceAndTheLoserIsNamed$]=]  # 8 rounds of a race against RGW
  [=[^CliErrors\.EachUsageErrorIsOneClearLineNamingWhatIsWrong$]=]
  [=[^CliErrors\.EveryCommandsHelpListsExitCodesAnExampleAndDescribesEveryArgument$]=]
  [=[^CliErrors\.HelpListsTheExitCodesOfTheContract$]=]
  [=[^CliGolden\.EveryCommandPrintsWhatItPrintedBefore$]=]
  [=[^CliSmoke\.RunThenQuery$]=]
  [=[^CommitEvery/ProducerRetentionTest\.ComesBackOnlyAtAHigherEpoch/"1"$]=]
  [=[^Copies/HalfRenamedSnapshot\.RerunSettlesItAndEqualsACleanRun/Damaged  # GetParam\(\) = true$]=]
  [=[^Corruption/ReconcileGateTest\.PublishRefusesStagedNumbersThatDifferFromTheLedger/Count  # GetParam\(\) = count$]=]
  [=[^CorruptionTest\.CurrentNamesAnotherExistingGeneration$]=]
  [=[^CorruptionTest\.CurrentNamesMissingGeneration$]=]
  [=[^CorruptionTest\.CurrentWithGarbage$]=]
  [=[^CorruptionTest\.CurrentWithWrongChecksumRefused$]=]
  [=[^CorruptionTest\.GenerationManifestOfCurrent$]=]
  [=[^CorruptionTest\.GenerationManifestOfOlderGeneration$]=]
  [=[^CorruptionTest\.GenerationPartOfCurrent$]=]
  [=[^CorruptionTest\.GenerationPartOnlyAnOlderGenerationUses$]=]
  [=[^CorruptionTest\.MissingPartOfCurrent$]=]
  [=[^GenerationPartsTest\.]=]            # several runs of the binary each
  [=[^CorruptionTest\.SnapshotDataOfCurrentGeneration$]=]
  [=[^CorruptionTest\.SnapshotDataOnlyAnOlderGenerationUses$]=]
  [=[^CorruptionTest\.SnapshotManifest$]=]
  [=[^CorruptionTest\.TruncatedAndMissingFiles$]=]
  [=[^FollowTest\.FileInBurstsWithHalfLinesAndRotationEqualsOneShotRun$]=]
  [=[^FollowTest\.FollowAndServeInOneProcess$]=]
  [=[^FollowTest\.KillNineLoopThenRestartEqualsCleanRun$]=]
  [=[^FollowTest\.SpoolDirectoryEachFileItsOwnSource$]=]
  [=[^GapAccept\.IngestUnderStopGoesOnPastAnAcceptedGapWhichStillFills$]=]
  [=[^GapSpill\.AHeavilyReorderedStreamIsAppliedExactlyOnce$]=]
  [=[^GapSpill\.DedupStaysExactBeyondTheRecordsGaps$]=]
  [=[^GapSpill\.OneRunOverTheReorderedStreamFinishes$]=]
  [=[^GcRollbackTest\.GcKeepsNewestGenerationsAndWhatTheyUse$]=]
  [=[^GcRollbackTest\.GcKeepsTheSnapshotsARollbackGenerationNames$]=]
  [=[^GcRollbackTest\.PinnedReaderKeepsItsGenerationUntilClosed$]=]
  [=[^GcRollbackTest\.RollbackThenPublishBuildsOnTheRolledBackGeneration$]=]
  [=[^GcRollbackTest\.RollbackToACollectedGenerationFails$]=]
  [=[^GcRollbackTest\.RollbackToAnUnpublishedGenerationIsRefused$]=]
  [=[^Generations\.BackfillVersionAboveU32$]=]
  [=[^Generations\.CliRefusesVersionsAndGenerationsItCannotRepresent$]=]
  [=[^IdDedupModel/IdDedupModelTest\.MatchesModel/1$]=]
  [=[^IdDedupModel/IdDedupModelTest\.MatchesModel/2$]=]
  [=[^IdDedupModel/IdDedupModelTest\.MatchesModel/3$]=]
  [=[^IdFromContentTest\.IdenticalEventsCountOnce$]=]
  [=[^IngestCliTest\.MoreThan1024GapsSpillAndStillFill$]=]
  [=[^IngestCliTest\.OverlongLinesRejectedAndIngestGoesOn$]=]
  [=[^IngestCliTest\.ResumeAfterAppendAppliesOnlyNewLines$]=]
  [=[^IngestCliTest\.StdinIsReadFromItsStartEveryTime$]=]
  [=[^IngestModel/IngestModelTest\.MatchesModel/seed1  # GetParam\(\) = 1$]=]
  [=[^IngestModel/IngestModelTest\.MatchesModel/seed2  # GetParam\(\) = 2$]=]
  [=[^IngestModel/IngestModelTest\.MatchesModel/seed3  # GetParam\(\) = 3$]=]
  [=[^IngestModel/IngestModelTest\.MatchesModel/seed4  # GetParam\(\) = 4$]=]
  [=[^InitAtomic\.HalfMadeRootOfAnOlderInitIsNamedWithWhatToDo$]=]
  [=[^Metrics\.ParsedByAPrometheusParserAndEqualToInspect$]=]
  [=[^Newcomer\.AfterRunFinalEveryWindowIsPublishedAndNoneOpen$]=]
  [=[^Newcomer\.BackfillSourcesAreListedWithTheirCounts$]=]
  [=[^Newcomer\.CmakeInstallPutsTheManPageAndCompletionInPlace$]=]
  [=[^Newcomer\.LicenseChangelogManPageAndCompletionNameEveryCommand$]=]
  [=[^Newcomer\.SmallInconsistencies$]=]
  [=[^NumericEdges\.WindowBeforeYear0000IsRejectedInsteadOfPrintedAndNeverCollected$]=]
  [=[^OlderRootTest\.MissingTablesAreCreatedByTheFirstWriter$]=]
  [=[^ParseAheadTest\.IngestWithParseAheadMatchesOneThread$]=]
  [=[^ProducerRetentionGcTest\.GcRetiresIdleProducers$]=]
  [=[^Progress\.OnlyOnATerminalAndNotWithQuiet$]=]
  [=[^QueryRange\.ARangeOpensOnlyItsWindowsFiles$]=]
  [=[^QueryRange\.EdgesOfRangesAndPrefixes$]=]
  [=[^QueryRange\.HttpGivesTheCliBytesAndItsUsageErrors$]=]
  [=[^QueryRange\.RandomRangesPrefixesAndRollupsMatchTheReference$]=]
  [=[^ReadOnlyRoot\.VerifyInspectAndQueryWorkForAUserWithoutWritePermission$]=]
  [=[^ReadOnlyRoot\.VerifyInspectAndQueryWorkOnAReadOnlyFileSystem$]=]
  [=[^ReaderConcurrency\.ReadersSeeWholeGenerationsDuringPublishes$]=]
  [=[^ReadersBesideWriter\.VerifyAndInspectDuring50PublishesAndGcNeverFail$]=]
  [=[^ReconcileGate\.StagedSnapshotChecksumFailureExits4$]=]
  [=[^Rollback\.FailedRollbackChangesNothing$]=]
  [=[^Rollback\.RollbackDryRunChangesNothing$]=]
  [=[^Rollback\.RollbackPastBackfillRestoresPreBackfillNumbers$]=]
  [=[^Rollback\.RollbackThenBackfill$]=]
  [=[^Rollback\.RollbackThenPublishKeepsRolledBackWindows$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/GenerationZero  # GetParam\(\) = GenerationZero /v1/query\?generation=0$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/Generations  # GetParam\(\) = Generations /v1/generations$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/QueryInstantInsideWindowCsv  # GetParam\(\) = QueryInstantInsideWindowCsv /v1/query\?window=2026-10-21T11:30:00Z&format=csv$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/QueryMetric  # GetParam\(\) = QueryMetric /v1/query\?metric=orders$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/RepeatedParameter  # GetParam\(\) = RepeatedParameter /v1/query\?metric=orders&metric=visits$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/UnknownEndpoint  # GetParam\(\) = UnknownEndpoint /v2/nothing$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/UnknownGeneration  # GetParam\(\) = UnknownGeneration /v1/query\?generation=99$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/WindowOffsetPlusUnescaped  # GetParam\(\) = WindowOffsetPlusUnescaped /v1/query\?window=2026-10-21T13:30:00\+02:00&format=csv$]=]
  [=[^Serve/ServeAnswerTest\.AnswersAsTheCliDoes/Windows  # GetParam\(\) = Windows /v1/windows$]=]
  [=[^ServeLimitsTest\.ClientThatStopsReadingIsDroppedAndItsGenerationCollected$]=]
  [=[^ServeLimitsTest\.ConnectionBeyondTheLimitGets503AndAFreedSlotServesAgain$]=]
  [=[^ServeLimitsTest\.HalfSentRequestIsDroppedAfterTheReadTimeout$]=]
  [=[^ServeLimitsTest\.HealthzReverifiesEachGenerationCurrentSwitchesTo$]=]
  [=[^ServeLimitsTest\.OversizedRequestsGet414400And413NamingTheLimit$]=]
  [=[^ServeTest\.EveryAnswerEqualsQueryAtTheGenerationItNames$]=]
  [=[^ServeTest\.NotModifiedMetricsAndShutdown$]=]
  [=[^ServeTest\.SwitchReleasesTheOldPinForGc$]=]
  [=[^ServeTlsTest\.BadCertificateOrKeyExitsOneNamingTheFile$]=]
  [=[^ServeTlsTest\.CertificateReloadedOnSighup$]=]
  [=[^ServeTlsTest\.CurlTrustsTheCertificateOverTlsOnly$]=]
  [=[^ServeTlsTest\.NonLoopbackNeedsTlsAndTokensOrInsecure$]=]
  [=[^Shapes/NeverCommittedBackfillEnv\.RerunFinishesAndEqualsACleanRun/0$]=]
  [=[^Shapes/NeverCommittedBackfillEnv\.RerunFinishesAndEqualsACleanRun/1$]=]
  [=[^Shapes/NeverCommittedBackfillEnv\.RerunFinishesAndEqualsACleanRun/2$]=]
  [=[^Shapes/NeverCommittedBackfillEnv\.RerunFinishesAndEqualsACleanRun/3$]=]
  [=[^SmallFixes\.ControlCharactersInKeysAreEscapedInTables$]=]
  [=[^SmallFixes\.VerifyWarnsAboutUnknownFilesInTheRoot$]=]
  [=[^SnapshotFileTest\.ByteFlipsOfDefaultBlockFileAreCaught$]=]
  [=[^SnapshotFileTest\.CorruptHashIndexIsCaught$]=]
  [=[^SnapshotFileTest\.DeterministicBytes$]=]
  [=[^SnapshotFileTest\.EveryByteFlipOfSmallMultiBlockFileIsCaught$]=]
  [=[^SnapshotFileTest\.HashIndexFingerprintCollisions$]=]
  [=[^SnapshotFileTest\.HashIndexHitsAndMissesMatchBinarySearch$]=]
  [=[^SnapshotFileTest\.ManyBlocks$]=]
  [=[^SnapshotFileTest\.SampledByteFlipsOfLargeFileAreCaught$]=]
  [=[^SnapshotFileTest\.ScanByMetric$]=]
  [=[^SnapshotFileTest\.TruncatedFile$]=]
  [=[^SourceIdentityTest\.FileRewrittenInPlaceLongerIsReadFromItsStart$]=]
  [=[^SourceIdentityTest\.FileRewrittenInPlaceSameLengthIsReadFromItsStart$]=]
  [=[^SourceIdentityTest\.RotatedFileIsReadFromItsStart$]=]
  [=[^SourceIdentityTest\.TruncatedFileIsReadFromItsStart$]=]
  [=[^SourceIdentityTest\.TwoDifferentStreamsOnStdinAreBothApplied$]=]
  [=[^SourceIdentityTest\.UnterminatedInvalidPrefixIsLeftUnreadUntilFinished$]=]
  [=[^StatsSectionTest\.StagedStatsThatDisagreeWithTheRowsAreRefusedAndDamagedPublishedStatsAreFound$]=]
  [=[^Status\.JsonFieldsMatchInspect$]=]
  [=[^StatusPageSize\.FiveThousandWindowsUnderTwoMegabytes$]=]
  [=[^StatusPageTest\.ARollbackShowsItsSourceGenerationAndTheRolledBackWindows$]=]
  [=[^StatusPageTest\.EveryWindowGenerationGapAndSourceAppearsEscaped$]=]
  [=[^StatusPageTest\.HeadlessChromiumRendersThePageWithoutConsoleError$]=]
  [=[^StatusPageTest\.HeadlessChromiumOpensThePageWithBasicAuth$]=]
  [=[^StatusPageTest\.ServeAnswersTheSamePageAtAGeneration$]=]
  [=[^StatusPageTest\.ThePageNeedsTheTokenLikeEveryEndpoint$]=]
  [=[^Storable\.LongSourceNamesWithRejects$]=]
  [=[^Store\.TheMapGrowsWhenFullAndReadersFollow$]=]
  [=[^TableCache\.FiveThousandWindowsUnderUlimit64$]=]
  [=[^TableCache\.PinnedGenerationStaysCorrectWhenItsFilesAreReopened$]=]
  [=[^VerifyReport\.UnfinishedBackfillPublishIsANoteNotCorruption$]=]
  [=[^WindowSyntax\.EveryFormNamesTheWindowHoldingItAcrossCommands$]=]
  [=[^WindowSyntax\.QuerySaysOnStderrWhenAFilterMatchesNothing$]=]
)

function(snapsink_label_tests tests)
  string(JOIN "|" crash ${SNAPSINK_CRASH_TESTS})
  string(JOIN "|" slow ${SNAPSINK_SLOW_TESTS})
  # Longer tests first (ctest runs a fresh build directory's tests in
  # descending COST; later runs order by the times they measured), so the
  # short ones fill the cores at the end instead of one long test.
  foreach(t IN LISTS tests)
    if(t MATCHES "${crash}")
      set_tests_properties("${t}" PROPERTIES LABELS crash COST 100)
    elseif(t MATCHES "${slow}")
      set_tests_properties("${t}" PROPERTIES LABELS slow COST 50)
    else()
      set_tests_properties("${t}" PROPERTIES LABELS unit)
    endif()
  endforeach()
endfunction()

snapsink_label_tests("${snapsink_tests_TESTS}")

# The bucket tests need the local S3 server: ctest starts it first (the
# fixture Rgw.Start / Rgw.Stop of CMakeLists.txt), once for all of them.
foreach(t IN LISTS snapsink_tests_TESTS)
  if(t MATCHES [=[^([A-Za-z]+/)?(S3ClientTest|BucketEnv[A-Za-z]*|BucketRoot[A-Za-z]*)\.]=])
    set_tests_properties("${t}" PROPERTIES FIXTURES_REQUIRED rgw)
  endif()
  # These kill the shared radosgw and start it again: alone, so that no
  # other bucket test sees it go.
  if(t MATCHES [=[^BucketRootFaults\.(TheGatewayKilled|AGatewayThatStaysAway)]=])
    set_tests_properties("${t}" PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()
