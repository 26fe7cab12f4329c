#include "tests/file_util.h"

#include <fstream>
#include <sstream>

namespace snapsink::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

void AppendFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f << data;
}

}  // namespace snapsink::testing
