// engine/ingest_key_sort.h: a batch's keys sorted a word at a time come out
// in the order a comparison sort on the strings gives.
#include "engine/ingest_key_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace snapsink::testing {
namespace {

using Keys = std::vector<std::pair<std::string_view, uint32_t>>;

// SortByKey's order against std::sort's, and every index kept with its key.
void ExpectSortedAsByStrings(const std::vector<std::string>& strings) {
  Keys keys, expected;
  for (size_t i = 0; i < strings.size(); ++i) keys.emplace_back(strings[i], static_cast<uint32_t>(i));
  expected = keys;
  std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  SortByKey(&keys);
  ASSERT_EQ(keys.size(), expected.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(keys[i].first, expected[i].first) << "position " << i;
    ASSERT_EQ(keys[i].second, expected[i].second) << "position " << i;
  }
}

// Keys shaped as a batch's: an 8-byte window, a metric, a key; long shared
// prefixes, several windows.
TEST(IngestKeySortTest, BatchShapedKeysSortAsStrings) {
  std::mt19937_64 rng(42);
  std::set<std::string> unique;
  while (unique.size() < 20000) {
    std::string k(7, '\0');
    k.push_back(static_cast<char>(rng() % 3));  // the window's last byte
    k += (rng() % 2 != 0) ? std::string("orders.count") : std::string("orders.revenue");
    k.push_back('\0');
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(rng() % 50000));
    k += "customer-" + std::string(hex, rng() % 17);  // keys of every length, prefixes of each other too
    unique.insert(k);
  }
  std::vector<std::string> strings(unique.begin(), unique.end());
  std::shuffle(strings.begin(), strings.end(), rng);
  ExpectSortedAsByStrings(strings);
}

// Where a word ends the key: a key is a prefix of another, zero bytes
// against a key's end, high bytes (unsigned order), the empty key.
TEST(IngestKeySortTest, PrefixesZeroBytesAndHighBytesSortAsStrings) {
  std::vector<std::string> strings = {"",
                                      std::string(1, '\0'),
                                      std::string(2, '\0'),
                                      std::string(9, '\0'),
                                      "abcdefgh",
                                      "abcdefg",
                                      std::string("abcdefgh") + '\0',
                                      std::string("abcdefg") + '\0',
                                      "abcdefghi",
                                      "abcdefgh\xff",
                                      "abcdefgh\x80z",
                                      "abcdefgh\x7f",
                                      "\xff\xff\xff\xff\xff\xff\xff\xff",
                                      "\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                      "abcdefghabcdefghabcdefgh",
                                      "abcdefghabcdefghabcdefgi",
                                      "abcdefghabcdefghabcdefg"};
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(strings.begin(), strings.end(), rng);
    ExpectSortedAsByStrings(strings);
  }
  ExpectSortedAsByStrings({});
  ExpectSortedAsByStrings({"only"});
}

// Random short keys over a small alphabet with zeros: many ties in every word.
TEST(IngestKeySortTest, RandomKeysOverASmallAlphabetSortAsStrings) {
  std::mt19937_64 rng(3);
  std::set<std::string> unique;
  while (unique.size() < 5000) {
    std::string k(rng() % 30, 'a');
    for (char& c : k) c = "\0ab\xff"[rng() % 4];
    unique.insert(k);
  }
  std::vector<std::string> strings(unique.begin(), unique.end());
  std::shuffle(strings.begin(), strings.end(), rng);
  ExpectSortedAsByStrings(strings);
}

}  // namespace
}  // namespace snapsink::testing
