// Tests of snapshot/checked_json, snapshot/snapshot_manifest and
// publish/generation_manifest (top manifests and parts): round trips, fixed bytes, rejection of
// malformed documents, and a byte-flip sweep over each kind.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <fmt/format.h>

#include "snapshot/checked_json.h"
#include "publish/generation_manifest.h"
#include "snapshot/snapshot_manifest.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

TEST(CheckedJsonTest, SealAndOpen) {
  std::string sealed = SealJson(R"({"a":1,"b":"x"})");
  const uint64_t h = XXH64(R"({"a":1,"b":"x")", 14, 0);
  EXPECT_EQ(sealed, fmt::format(R"({{"a":1,"b":"x","checksum":"{:016x}"}})", h) + "\n");
  std::string_view body;
  ASSERT_STATUS_OK(OpenJson(sealed, &body, "t"));
  EXPECT_EQ(body, sealed.substr(0, sealed.size() - 1));

  std::string empty = SealJson("{}");
  EXPECT_EQ(empty, fmt::format(R"({{"checksum":"{:016x}"}})", XXH64("{", 1, 0)) + "\n");
  ASSERT_STATUS_OK(OpenJson(empty, &body, "t"));
}

TEST(CheckedJsonTest, RejectsMissingOrWrongChecksum) {
  std::string_view body;
  std::string sealed = SealJson(R"({"a":1})");
  for (std::string bad : {std::string(R"({"a":1})"), std::string(R"({"a":1})") + "\n", std::string(""),
                          sealed.substr(0, sealed.size() - 1), sealed + "\n", " " + sealed,
                          std::string(R"({"a":2)") + sealed.substr(6)}) {
    Status s = OpenJson(bad, &body, "doc.json");
    EXPECT_TRUE(s.IsCorruption()) << bad;
    EXPECT_NE(s.message().find("doc.json"), std::string::npos);
  }
  // Uppercase hex is not the sealed form.
  std::string upper = sealed;
  for (size_t i = upper.size() - 19; i < upper.size() - 3; i++) upper[i] = static_cast<char>(toupper(upper[i]));
  if (upper != sealed) {
    EXPECT_TRUE(OpenJson(upper, &body, "t").IsCorruption());
  }
}

TEST(CheckedJsonTest, EveryByteFlipIsCaught) {
  for (std::string doc : {SealJson(R"({"k":"v","n":[1,2,3]})"), SealJson("{}")}) {
    for (size_t pos = 0; pos < doc.size(); pos++) {
      for (int mask : {0x01, 0x20, 0x80, 0xff}) {
        std::string bad = doc;
        bad[pos] = static_cast<char>(bad[pos] ^ mask);
        std::string_view body;
        EXPECT_TRUE(OpenJson(bad, &body, "t").IsCorruption()) << pos << " " << mask;
      }
    }
  }
}

TEST(CheckedJsonTest, Escape) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscape(std::string("\n\t\x01\x1f\0", 5)), "\\u000a\\u0009\\u0001\\u001f\\u0000");
  EXPECT_EQ(JsonEscape("\x7f"), "\x7f");
  EXPECT_EQ(JsonEscape("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"), "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(JsonEscape("\xff"), "\\ufffd");
  EXPECT_EQ(JsonEscape("a\xc3"), "a\\ufffd");                  // truncated
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\\ufffd\\ufffd");         // overlong
  EXPECT_EQ(JsonEscape("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // surrogate
  EXPECT_EQ(JsonEscape("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");  // > U+10FFFF
}

TEST(CheckedJsonTest, Hex64) {
  EXPECT_EQ(Hex64(0), "0000000000000000");
  EXPECT_EQ(Hex64(0xdeadbeef01234567ull), "deadbeef01234567");
  uint64_t v;
  EXPECT_TRUE(ParseHex64("ffffffffffffffff", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseHex64("FFFFFFFFFFFFFFFF", &v));
  EXPECT_FALSE(ParseHex64("fffffffffffffff", &v));
  EXPECT_FALSE(ParseHex64("fffffffffffffffg", &v));
}

SnapshotManifest SampleSnapshotManifest() {
  SnapshotManifest m;
  m.window_ms = 1792576800000;
  m.window_size_ms = 3600000;
  m.version = 2;
  m.aggregation_version = 1;
  m.rows = 3;
  m.events = 9;
  m.count = 7;
  m.sum_micros = -1500000;
  m.files = {{"data.snap", 12345, 0xfedcba9876543210ull}};
  return m;
}

TEST(SnapshotManifestTest, RoundTripAndFixedBytes) {
  SnapshotManifest m = SampleSnapshotManifest();
  std::string text = m.Encode();
  EXPECT_EQ(text, m.Encode());
  const std::string body =
      R"({"format":"snapsink.snapshot","format_version":2,"window_ms":1792576800000,)"
      R"("window_size_ms":3600000,"version":2,"aggregation_version":1,"rows":3,"events":9,"count":7,)"
      R"("sum_micros":-1500000,"files":[{"name":"data.snap","bytes":12345,"xxh64":"fedcba9876543210"}]})";
  EXPECT_EQ(text, SealJson(body));
  SnapshotManifest got;
  Status s = SnapshotManifest::Decode(text, "manifest.json", &got);
  ASSERT_STATUS_OK(s);
  EXPECT_EQ(got, m);

  SnapshotManifest empty;
  ASSERT_STATUS_OK(SnapshotManifest::Decode(empty.Encode(), "m", &got));
  EXPECT_EQ(got, empty);

  SnapshotManifest big = m;
  big.rows = UINT64_MAX;
  big.events = INT64_MIN;
  big.sum_micros = INT64_MAX;
  big.version = UINT32_MAX;
  ASSERT_STATUS_OK(SnapshotManifest::Decode(big.Encode(), "m", &got));
  EXPECT_EQ(got, big);
}

TEST(SnapshotManifestTest, EncodeSorts) {
  SnapshotManifest m = SampleSnapshotManifest();
  SnapshotManifest shuffled = m;
  shuffled.files.insert(shuffled.files.begin(), FileEntry{"zz", 1, 2});
  m.files.push_back(FileEntry{"zz", 1, 2});
  EXPECT_EQ(shuffled.Encode(), m.Encode());
}

TEST(SnapshotManifestTest, RejectsMalformed) {
  const std::string good = SampleSnapshotManifest().Encode();
  std::string body(good.substr(0, good.find(",\"checksum\""))) ;
  body += "}";
  auto decode = [](const std::string& b) {
    SnapshotManifest m;
    return SnapshotManifest::Decode(SealJson(b), "m.json", &m);
  };
  ASSERT_STATUS_OK(decode(body));
  auto replace = [&](std::string_view from, std::string_view to) {
    std::string b = body;
    size_t at = b.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return b.replace(at, from.size(), to);
  };
  for (std::string bad : {
           replace("snapsink.snapshot", "snapsink.generation"),
           replace("\"format_version\":2", "\"format_version\":1"),
           replace("\"window_ms\":1792576800000", "\"window_ms\":1.5"),
           replace("\"version\":2", "\"version\":18446744073709551616"),  // versions are 64-bit (docs/CONTRACT.md 10)
           replace("\"rows\":3", "\"rows\":-3"),
           replace("\"count\":7", "\"count\":\"7\""),
           replace("\"name\":\"data.snap\"", "\"name\":\"../data.snap\""),
           replace("\"name\":\"data.snap\"", "\"name\":\"\""),
           replace("\"xxh64\":\"fedcba9876543210\"", "\"xxh64\":\"FEDCBA9876543210\""),
           replace("\"xxh64\":\"fedcba9876543210\"", "\"xxh64\":18364758544493064720"),
           replace(",\"files\":[{\"name\":\"data.snap\",\"bytes\":12345,\"xxh64\":\"fedcba9876543210\"}]", ""),
           replace("\"events\":9,", ""),
           std::string("{}"),
           std::string("{\"format\":}"),
       }) {
    Status s = decode(bad);
    EXPECT_TRUE(s.IsCorruption()) << bad;
    EXPECT_NE(s.message().find("m.json"), std::string::npos) << s.ToString();
  }
}

TEST(SnapshotManifestTest, EveryByteFlipIsCaught) {
  const std::string text = SampleSnapshotManifest().Encode();
  for (size_t pos = 0; pos < text.size(); pos++) {
    for (int mask : {0x01, 0x02, 0x20, 0x80, 0xff}) {
      std::string bad = text;
      bad[pos] = static_cast<char>(bad[pos] ^ mask);
      SnapshotManifest m;
      EXPECT_TRUE(SnapshotManifest::Decode(bad, "m", &m).IsCorruption()) << pos << " " << mask;
    }
  }
  SnapshotManifest m;
  EXPECT_TRUE(SnapshotManifest::Decode(text.substr(0, text.size() - 1), "m", &m).IsCorruption());
  EXPECT_TRUE(SnapshotManifest::Decode("", "m", &m).IsCorruption());
}

GenerationManifest SampleGeneration() {
  GenerationManifest g;
  g.generation = 7;
  g.parent = 6;
  g.rollback_of = 2;
  g.parts = {{1792573200000, 1792576800000, 2, 0x1111111111111111ull},
             {1796259600000, 1796259600000, 1, 0xabcdef0123456789ull}};
  return g;
}

GenerationPart SamplePart() {
  GenerationPart p;
  p.windows = {{1792573200000, 1, 0x1111111111111111ull}, {1792576800000, 4294967296ull, 0xabcdef0123456789ull}};
  return p;
}

// The bytes docs/FORMAT.md section 4 shows, member for member.
TEST(GenerationManifestTest, RoundTripAndFixedBytes) {
  GenerationManifest g = SampleGeneration();
  std::string text = g.Encode();
  EXPECT_EQ(text, SealJson(R"({"format":"snapsink.generation","format_version":4,"generation":7,"parent":6,)"
                           R"("rollback_of":2,"depth":3,)"
                           R"("parts":[[1792573200000,1792576800000,2,"1111111111111111"],)"
                           R"([1796259600000,1796259600000,1,"abcdef0123456789"]]})"));
  GenerationManifest got;
  ASSERT_STATUS_OK(GenerationManifest::Decode(text, "manifests/7", &got));
  EXPECT_EQ(got, g);

  GenerationManifest first;
  first.generation = 1;
  ASSERT_STATUS_OK(GenerationManifest::Decode(first.Encode(), "g", &got));
  EXPECT_EQ(got, first);
}

TEST(GenerationPartTest, RoundTripAndFixedBytes) {
  const std::string text = SamplePart().Encode();
  EXPECT_EQ(text, SealJson(R"({"format":"snapsink.generation_part","format_version":1,"windows":[)"
                           R"([1792573200000,1,"1111111111111111"],[1792576800000,4294967296,"abcdef0123456789"]]})"));
  GenerationPart got;
  ASSERT_STATUS_OK(GenerationPart::Decode(text, "manifests/parts/x", &got));
  EXPECT_EQ(got.windows, SamplePart().windows);
  GenerationPart empty;
  EXPECT_TRUE(GenerationPart::Decode(empty.Encode(), "p", &got).IsCorruption());
  GenerationPart unsorted = SamplePart();
  std::swap(unsorted.windows[0], unsorted.windows[1]);
  EXPECT_TRUE(GenerationPart::Decode(unsorted.Encode(), "p", &got).IsCorruption());
}

GenerationIndexPart SampleIndex() {
  GenerationIndexPart p;
  p.level = 2;
  p.parts = SampleGeneration().parts;
  return p;
}

TEST(GenerationIndexPartTest, RoundTripAndFixedBytes) {
  const std::string text = SampleIndex().Encode();
  EXPECT_EQ(text, SealJson(R"({"format":"snapsink.generation_index","format_version":1,"level":2,"parts":[)"
                           R"([1792573200000,1792576800000,2,"1111111111111111"],)"
                           R"([1796259600000,1796259600000,1,"abcdef0123456789"]]})"));
  GenerationIndexPart got;
  ASSERT_STATUS_OK(GenerationIndexPart::Decode(text, "manifests/parts/x", &got));
  EXPECT_EQ(got.level, 2u);
  EXPECT_EQ(got.parts, SampleIndex().parts);
  GenerationIndexPart bad = SampleIndex();
  bad.parts.clear();
  EXPECT_TRUE(GenerationIndexPart::Decode(bad.Encode(), "p", &got).IsCorruption());
  bad = SampleIndex();
  bad.level = 0;  // a leaf is a generation_part
  EXPECT_TRUE(GenerationIndexPart::Decode(bad.Encode(), "p", &got).IsCorruption());
  bad = SampleIndex();
  std::swap(bad.parts[0], bad.parts[1]);
  EXPECT_TRUE(GenerationIndexPart::Decode(bad.Encode(), "p", &got).IsCorruption());
  GenerationPart leaf;
  EXPECT_TRUE(GenerationPart::Decode(text, "p", &leaf).IsCorruption());
}

// Leaves of 32 window sizes, index parts of 32^2 and 32^3; negative starts
// floor; every window once, in order, under the top level's parts.
TEST(GenerationPartTest, BuildPartTreeBySpan) {
  EXPECT_EQ(PartSpanMs(60000, 0), 32 * 60000);
  EXPECT_EQ(PartSpanMs(60000, 2), 32768 * 60000);
  const int64_t span = PartSpanMs(60000, 0);
  EXPECT_EQ(PartSpanOf(-1, span), -1);
  EXPECT_EQ(PartSpanOf(0, span), 0);
  EXPECT_EQ(PartSpanOf(span - 1, span), 0);
  EXPECT_EQ(PartSpanOf(span, span), 1);
  std::vector<GenerationEntry> windows;
  for (int64_t i = -2; i < 33000; ++i) windows.push_back({i * 60000, 1, static_cast<uint64_t>(i)});
  std::vector<GenerationPartRef> refs;
  std::vector<std::string> bytes;
  BuildPartTree(60000, windows, &refs, &bytes);
  ASSERT_EQ(refs.size(), 3u);  // spans -1, 0 and 1 of 32,768 minutes
  EXPECT_EQ(refs[0].windows, 2u);
  EXPECT_EQ(refs[1].first_ms, 0);
  EXPECT_EQ(refs[1].last_ms, 32767 * 60000);
  EXPECT_EQ(refs[1].windows, 32768u);
  EXPECT_EQ(refs[2].windows, 33000u - 32768u);
  // Leaves: 1 + 1024 + 8 (232 windows); level 1: 1 + 32 + 1; level 2: 3.
  EXPECT_EQ(bytes.size(), 1033u + 34u + 3u);
  GenerationPart leaf;
  ASSERT_STATUS_OK(GenerationPart::Decode(bytes[1], "p", &leaf));
  EXPECT_EQ(leaf.windows.size(), 32u);
  EXPECT_EQ(leaf.windows.front().window_ms, 0);
  GenerationIndexPart top;
  ASSERT_STATUS_OK(GenerationIndexPart::Decode(bytes.back(), "p", &top));
  EXPECT_EQ(top.level, 2u);
  XXH64_hash_t h = XXH64(bytes.back().data(), bytes.back().size(), 0);
  EXPECT_EQ(h, refs[2].xxh64);
  // A full leaf and a full index part are a few KB each: a point read (top,
  // two index parts, a leaf) stays far below 64 KB.
  EXPECT_LT(bytes[1].size(), 2u * 1024);
  GenerationIndexPart full;
  ASSERT_STATUS_OK(GenerationIndexPart::Decode(bytes[1033 + 1], "p", &full));
  EXPECT_EQ(full.parts.size(), 32u);
  EXPECT_LT(bytes[1033 + 1].size(), 2u * 1024);
}

// Format 2 (windows inline) is still read: roots written before parts.
TEST(GenerationManifestTest, ReadsFormat2) {
  GenerationManifest got;
  ASSERT_STATUS_OK(GenerationManifest::Decode(
      SealJson(R"({"format":"snapsink.generation","format_version":2,"generation":7,"parent":6,"rollback_of":2,)"
               R"("windows":[{"window_ms":1792573200000,"version":1,"manifest_xxh64":"1111111111111111"},)"
               R"({"window_ms":1792576800000,"version":4294967296,"manifest_xxh64":"abcdef0123456789"}]})"),
      "manifests/7", &got));
  EXPECT_EQ(got.generation, 7u);
  EXPECT_EQ(got.depth, 0u);
  EXPECT_TRUE(got.parts.empty());
  EXPECT_EQ(got.windows, SamplePart().windows);
}

// Format 3 (parts that are leaves of 1,024 windows, no depth) is still read.
TEST(GenerationManifestTest, ReadsFormat3) {
  GenerationManifest got;
  ASSERT_STATUS_OK(GenerationManifest::Decode(
      SealJson(R"({"format":"snapsink.generation","format_version":3,"generation":7,"parent":6,"rollback_of":2,)"
               R"("parts":[[1792573200000,1792576800000,2,"1111111111111111"],)"
               R"([1796259600000,1796259600000,1,"abcdef0123456789"]]})"),
      "manifests/7", &got));
  EXPECT_EQ(got.depth, 1u);
  EXPECT_EQ(got.parts, SampleGeneration().parts);
}

TEST(GenerationManifestTest, RejectsMalformed) {
  GenerationManifest got;
  GenerationManifest g = SampleGeneration();
  g.parent = 7;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  g = SampleGeneration();
  g.rollback_of = 7;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  g = SampleGeneration();
  g.parts[1].first_ms = g.parts[0].last_ms;  // overlapping parts
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  g = SampleGeneration();
  g.parts[0].windows = 0;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  g = SampleGeneration();
  g.parts[0].last_ms = g.parts[0].first_ms - 1;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  EXPECT_TRUE(GenerationManifest::Decode(SampleSnapshotManifest().Encode(), "g", &got).IsCorruption());
  EXPECT_TRUE(GenerationManifest::Decode(SamplePart().Encode(), "g", &got).IsCorruption());
  g = SampleGeneration();
  g.depth = 0;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  g.depth = kMaxPartDepth + 1;
  EXPECT_TRUE(GenerationManifest::Decode(g.Encode(), "g", &got).IsCorruption());
  Status s = GenerationManifest::Decode(
      SealJson(R"({"format":"snapsink.generation","format_version":3,"generation":2,"parent":1,"rollback_of":0,"parts":[)"
               R"([5,5,1,"1"]]})"),
      "manifests/2", &got);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("manifests/2"), std::string::npos);
  s = GenerationManifest::Decode(
      SealJson(R"({"format":"snapsink.generation","format_version":5,"generation":2,"parent":1,"rollback_of":0,"depth":3,"parts":[]})"),
      "manifests/2", &got);
  EXPECT_TRUE(s.IsCorruption());
}

TEST(GenerationManifestTest, EveryByteFlipIsCaught) {
  for (const std::string& text : {SampleGeneration().Encode(), SamplePart().Encode(), SampleIndex().Encode()}) {
    for (size_t pos = 0; pos < text.size(); pos++) {
      for (int mask : {0x01, 0x02, 0x20, 0x80, 0xff}) {
        std::string bad = text;
        bad[pos] = static_cast<char>(bad[pos] ^ mask);
        GenerationManifest g;
        GenerationPart p;
        GenerationIndexPart x;
        EXPECT_TRUE(GenerationManifest::Decode(bad, "g", &g).IsCorruption()) << pos << " " << mask;
        EXPECT_TRUE(GenerationPart::Decode(bad, "p", &p).IsCorruption()) << pos << " " << mask;
        EXPECT_TRUE(GenerationIndexPart::Decode(bad, "p", &x).IsCorruption()) << pos << " " << mask;
      }
    }
  }
}

}  // namespace
}  // namespace snapsink
