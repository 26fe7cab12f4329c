// Whole-file reads and writes for tests: shared by the suite (test_util.h)
// and the Kafka harness, which links nothing of snapsink.
#pragma once

#include <string>

namespace snapsink::testing {

// The file's bytes; "" when it cannot be read.
std::string ReadFile(const std::string& path);
// Replaces the file's contents with data (creating it).
void WriteFile(const std::string& path, const std::string& data);
// Adds data at the file's end (creating it).
void AppendFile(const std::string& path, const std::string& data);

}  // namespace snapsink::testing
