#include "engine/event_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/timeutil.h"

namespace snapsink {
namespace {

constexpr int64_t k20261021T101503 = 1792577703000;

class EventParserTest : public ::testing::Test {
 protected:
  // Parses `line` from a buffer padded the way ingest pads its blocks; the
  // padding holds junk on purpose, since a block holds the next lines there.
  bool Parse(std::string_view line) {
    buf_.assign(line);
    buf_.append("\n{\"producer\":\"junk\"}\n");
    buf_.append(kEventPadding, 'x');
    reason_.clear();
    return parser_.Parse(buf_.data(), line.size(), buf_.size(), &ev_, &reason_);
  }

  // Expects `line` to be rejected with a reason containing `needle`.
  void ExpectReject(std::string_view line, std::string_view needle) {
    EXPECT_FALSE(Parse(line)) << line;
    EXPECT_NE(reason_.find(needle), std::string::npos)
        << "line: " << line << "\nreason: " << reason_ << "\nexpected to contain: " << needle;
  }

  // A valid line with `extra` fields spliced in after the required ones.
  static std::string With(std::string_view extra) {
    std::string s = R"({"producer":"p1","seq":7,"ts":"2026-10-21T10:15:03Z","metric":"m")";
    if (!extra.empty()) {
      s += ",";
      s += extra;
    }
    s += "}";
    return s;
  }

  EventParser parser_;
  Event ev_;
  std::string reason_;
  std::string buf_;
};

// ---- whole-line rules --------------------------------------------------

TEST_F(EventParserTest, MinimalLineGetsDefaults) {
  ASSERT_TRUE(Parse(With(""))) << reason_;
  EXPECT_EQ(ev_.producer, "p1");
  EXPECT_EQ(ev_.epoch, 0u);
  EXPECT_EQ(ev_.seq, 7u);
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
  EXPECT_EQ(ev_.metric, "m");
  EXPECT_EQ(ev_.key, "");
  EXPECT_EQ(ev_.value_micros, 1000000);
  EXPECT_FALSE(ev_.retract);
}

TEST_F(EventParserTest, AllFields) {
  ASSERT_TRUE(Parse(R"({"producer":"gw-1","epoch":3,"seq":42,"ts":"2026-10-21T10:15:03Z",)"
                    R"("metric":"bytes","key":"eu-west","value":-12.5,"op":"retract"})"))
      << reason_;
  EXPECT_EQ(ev_.producer, "gw-1");
  EXPECT_EQ(ev_.epoch, 3u);
  EXPECT_EQ(ev_.seq, 42u);
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
  EXPECT_EQ(ev_.metric, "bytes");
  EXPECT_EQ(ev_.key, "eu-west");
  EXPECT_EQ(ev_.value_micros, -12500000);
  EXPECT_TRUE(ev_.retract);
}

TEST_F(EventParserTest, FieldOrderAndWhitespaceDoNotMatter) {
  ASSERT_TRUE(Parse(" \t{ \"op\" : \"add\" , \"value\" : 2.5 , \"key\":\"k\", \"metric\" : \"m\","
                    " \"ts\" : 1792577703000 , \"seq\" : 1 , \"epoch\" : 2 , \"producer\" : \"p\" } \t"))
      << reason_;
  EXPECT_EQ(ev_.producer, "p");
  EXPECT_EQ(ev_.epoch, 2u);
  EXPECT_EQ(ev_.seq, 1u);
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
  EXPECT_EQ(ev_.key, "k");
  EXPECT_EQ(ev_.value_micros, 2500000);
  EXPECT_FALSE(ev_.retract);
}

TEST_F(EventParserTest, CrlfIsStripped) {
  ASSERT_TRUE(Parse(With(R"("value":3)") + "\r")) << reason_;
  EXPECT_EQ(ev_.value_micros, 3000000);
  ASSERT_TRUE(Parse(With("") + " \r")) << reason_;
}

TEST_F(EventParserTest, EmptyLine) {
  ExpectReject("", "empty line");
  ExpectReject("\r", "empty line");
  ExpectReject("   \t ", "empty line");
  ExpectReject(" \r", "empty line");
}

TEST_F(EventParserTest, NotAnObject) {
  ExpectReject("[1,2]", "line is not a JSON object");
  ExpectReject("3", "line is not a JSON object");
  ExpectReject("\"x\"", "line is not a JSON object");
  ExpectReject("null", "line is not a JSON object");
  ExpectReject("true", "line is not a JSON object");
  ExpectReject("[{\"a\":[]}, -1.5e3, \"s\", null] ", "line is not a JSON object");
  ExpectReject("[1,", "invalid JSON");
  ExpectReject("[1]]", "invalid JSON");
  ExpectReject("1 2", "invalid JSON");
  ExpectReject("\"\\q\"", "invalid JSON");
  ExpectReject("nul", "invalid JSON");
}

TEST_F(EventParserTest, InvalidJson) {
  for (std::string line : {std::string("{"), std::string("not json"), std::string("{\"a\":}"),
                           std::string("{\"a\" 1}"), std::string("{\"a\":1,}"),
                           std::string("{,\"a\":1}"), std::string("{'a':1}"),
                           std::string("{a:1}"), std::string("{\"a\":1"),
                           With("") + " x", With("") + "{}", With("") + "}", With("") + ",",
                           With(R"("x":"unclosed)"), With(R"("x":1 2)")}) {
    ExpectReject(line, "invalid JSON");
  }
}

TEST_F(EventParserTest, UnescapedControlCharacterInString) {
  ExpectReject(With("\"x\":\"a\x01b\""), "invalid JSON");
  ExpectReject(With("\"key\":\"a\tb\""), "invalid JSON");
}

TEST_F(EventParserTest, MissingRequiredFields) {
  ExpectReject(R"({"seq":1,"ts":0,"metric":"m"})", "missing field producer");
  ExpectReject(R"({"producer":"p","ts":0,"metric":"m"})", "missing field seq");
  ExpectReject(R"({"producer":"p","seq":1,"metric":"m"})", "missing field ts");
  ExpectReject(R"({"producer":"p","seq":1,"ts":0})", "missing field metric");
  ExpectReject("{}", "missing field");
}

TEST_F(EventParserTest, DuplicateFields) {
  ExpectReject(With(R"("seq":8)"), "duplicate field seq");
  ExpectReject(With(R"("producer":"p1")"), "duplicate field producer");
  ExpectReject(With(R"("ts":0)"), "duplicate field ts");
  ExpectReject(With(R"("metric":"m")"), "duplicate field metric");
  ExpectReject(With(R"("key":"a","key":"b")"), "duplicate field key");
  ExpectReject(With(R"("value":1,"value":1)"), "duplicate field value");
  ExpectReject(With(R"("op":"add","op":"add")"), "duplicate field op");
  ExpectReject(With(R"("epoch":1,"epoch":1)"), "duplicate field epoch");
  // The same key spelt with an escape is the same key.
  ExpectReject(With(R"("s\u0065q":8)"), "duplicate field seq");
}

TEST_F(EventParserTest, EscapedKeysAreRecognized) {
  ASSERT_TRUE(Parse(R"({"\u0070roducer":"p","se\u0071":5,"ts":0,"metric":"m","k\u0065y":"k"})"))
      << reason_;
  EXPECT_EQ(ev_.producer, "p");
  EXPECT_EQ(ev_.seq, 5u);
  EXPECT_EQ(ev_.key, "k");
  ExpectReject(R"({"producer":"p","seq":5,"ts":0,"metric":"m","\q":1})", "invalid JSON");
}

TEST_F(EventParserTest, UnknownFieldsAreIgnored) {
  ASSERT_TRUE(Parse(With(R"("note":"hi","n":1e400,"f":-0.5,"b":true,"c":false,"z":null,)"
                         R"("obj":{"a":[1,{"b":[]},{}],"seq":99,"producer":""},"arr":[[[]]],)"
                         R"("":"empty key","SEQ":5,"producers":"x","unicode\u00e9":"\ud83d\ude00")")))
      << reason_;
  EXPECT_EQ(ev_.producer, "p1");
  EXPECT_EQ(ev_.seq, 7u);
}

TEST_F(EventParserTest, UnknownFieldsMustStillBeValidJson) {
  for (const char* extra : {R"("x":[1,2})", R"("x":{"a":1])", R"("x":tru)", R"("x":nul)",
                            R"("x":01)", R"("x":1.)", R"("x":-)", R"("x":"\q")",
                            R"("x":"\ud800")", R"("x":{"a" 1})", R"("x":[1,,2])",
                            R"("x":{"\q":1})", R"("x":truex)"}) {
    ExpectReject(With(extra), "invalid JSON");
  }
}

TEST_F(EventParserTest, DeeplyNestedUnknownField) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_TRUE(Parse(With("\"deep\":" + deep))) << reason_;
  const std::string too_deep = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_FALSE(Parse(With("\"deep\":" + too_deep)));
}

// ---- producer / metric / key --------------------------------------------

TEST_F(EventParserTest, ProducerLength) {
  std::string p128(128, 'p');
  ASSERT_TRUE(Parse(R"({"producer":")" + p128 + R"(","seq":1,"ts":0,"metric":"m"})")) << reason_;
  EXPECT_EQ(ev_.producer, p128);
  ExpectReject(R"({"producer":")" + std::string(129, 'p') + R"(","seq":1,"ts":0,"metric":"m"})",
               "field producer: length 129 not in 1..128");
  ExpectReject(R"({"producer":"","seq":1,"ts":0,"metric":"m"})", "field producer: length 0");
}

TEST_F(EventParserTest, LengthsCountUnescapedUtf8Bytes) {
  std::string e64, e65;
  for (int i = 0; i < 64; ++i) e64 += "\\u00e9";  // é: 2 bytes of UTF-8 each
  e65 = e64 + "\\u00e9";
  ASSERT_TRUE(Parse(R"({"producer":")" + e64 + R"(","seq":1,"ts":0,"metric":"m"})")) << reason_;
  EXPECT_EQ(ev_.producer.size(), 128u);
  ExpectReject(R"({"producer":")" + e65 + R"(","seq":1,"ts":0,"metric":"m"})",
               "field producer: length 130");
  // Raw multi-byte characters count in bytes too.
  std::string raw43;
  for (int i = 0; i < 43; ++i) raw43 += "\xe2\x82\xac";  // €: 3 bytes, 129 in all
  ExpectReject(R"({"producer":"p","seq":1,"ts":0,"metric":")" + raw43 + R"("})",
               "field metric: length 129");
}

TEST_F(EventParserTest, ProducerWrongType) {
  for (const char* v : {"1", "null", "true", "[]", "{}", "[\"p\"]"}) {
    ExpectReject(std::string(R"({"producer":)") + v + R"(,"seq":1,"ts":0,"metric":"m"})",
                 "field producer: expected string");
  }
}

TEST_F(EventParserTest, MetricLength) {
  std::string m128(128, 'm');
  ASSERT_TRUE(Parse(R"({"producer":"p","seq":1,"ts":0,"metric":")" + m128 + R"("})")) << reason_;
  EXPECT_EQ(ev_.metric, m128);
  ExpectReject(R"({"producer":"p","seq":1,"ts":0,"metric":")" + std::string(129, 'm') + R"("})",
               "field metric: length 129 not in 1..128");
  ExpectReject(R"({"producer":"p","seq":1,"ts":0,"metric":""})", "field metric: length 0");
}

TEST_F(EventParserTest, MetricWrongType) {
  for (const char* v : {"1", "null", "false", "[]", "{}"}) {
    ExpectReject(std::string(R"({"producer":"p","seq":1,"ts":0,"metric":)") + v + "}",
                 "field metric: expected string");
  }
}

TEST_F(EventParserTest, KeyLength) {
  ASSERT_TRUE(Parse(With(R"("key":"")"))) << reason_;
  EXPECT_EQ(ev_.key, "");
  std::string k256(256, 'k');
  ASSERT_TRUE(Parse(With(R"("key":")" + k256 + "\""))) << reason_;
  EXPECT_EQ(ev_.key, k256);
  ExpectReject(With(R"("key":")" + std::string(257, 'k') + "\""),
               "field key: length 257 not in 0..256");
}

TEST_F(EventParserTest, KeyWrongType) {
  for (const char* v : {"1", "null", "true", "[]", "{}"}) {
    ExpectReject(With(std::string(R"("key":)") + v), "field key: expected string");
  }
}

TEST_F(EventParserTest, StringEscapesAreDecoded) {
  ASSERT_TRUE(Parse(R"({"producer":"a\"b\\c\/d","seq":1,"ts":0,"metric":"\u00e9\ud83d\ude00",)"
                    R"("key":"tab\there\n"})"))
      << reason_;
  EXPECT_EQ(ev_.producer, "a\"b\\c/d");
  EXPECT_EQ(ev_.metric, "\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(ev_.key, "tab\there\n");
}

TEST_F(EventParserTest, InvalidUtf8Bytes) {
  ExpectReject(R"({"producer":"p)" "\xff" R"(","seq":1,"ts":0,"metric":"m"})", "UTF-8");
  ExpectReject(With("\"key\":\"\xc0\xaf\""), "UTF-8");        // overlong
  ExpectReject(With("\"key\":\"\xed\xa0\x80\""), "UTF-8");    // encoded surrogate
  ExpectReject(With("\"key\":\"\xe2\x82\""), "UTF-8");        // truncated
  ExpectReject(With("\"other\":\"\xff\""), "UTF-8");          // unknown fields too
  ASSERT_TRUE(Parse(With("\"key\":\"\xe2\x82\xac\""))) << reason_;
  EXPECT_EQ(ev_.key, "\xe2\x82\xac");
}

TEST_F(EventParserTest, InvalidEscapes) {
  ExpectReject(With(R"("key":"\ud800")"), "field key: invalid UTF-8 or escape");
  ExpectReject(With(R"("key":"\udc00")"), "field key: invalid UTF-8 or escape");
  ExpectReject(With(R"("key":"\ud800\u0041")"), "field key: invalid UTF-8 or escape");
  ExpectReject(With(R"("key":"\x41")"), "field key: invalid UTF-8 or escape");
  ExpectReject(With(R"("key":"\u12")"), "field key: invalid UTF-8 or escape");
  ExpectReject(R"({"producer":"\ud800","seq":1,"ts":0,"metric":"m"})",
               "field producer: invalid UTF-8 or escape");
  ExpectReject(R"({"producer":"p","seq":1,"ts":0,"metric":"\q"})",
               "field metric: invalid UTF-8 or escape");
}

// ---- epoch / seq ---------------------------------------------------------

TEST_F(EventParserTest, EpochRange) {
  ASSERT_TRUE(Parse(With(R"("epoch":0)"))) << reason_;
  EXPECT_EQ(ev_.epoch, 0u);
  ASSERT_TRUE(Parse(With(R"("epoch":4294967295)"))) << reason_;
  EXPECT_EQ(ev_.epoch, 4294967295u);
  ExpectReject(With(R"("epoch":4294967296)"), "field epoch: expected integer 0..2^32-1");
  ExpectReject(With(R"("epoch":-1)"), "field epoch");
  ExpectReject(With(R"("epoch":99999999999999999999999)"), "field epoch");
}

TEST_F(EventParserTest, EpochWrongType) {
  for (const char* v : {"1.0", "1e2", "\"1\"", "null", "true", "[]", "{}", "01"}) {
    ExpectReject(With(std::string(R"("epoch":)") + v), "field epoch");
  }
}

TEST_F(EventParserTest, SeqRange) {
  ASSERT_TRUE(Parse(R"({"producer":"p","seq":0,"ts":0,"metric":"m"})")) << reason_;
  EXPECT_EQ(ev_.seq, 0u);
  ASSERT_TRUE(Parse(R"({"producer":"p","seq":9223372036854775807,"ts":0,"metric":"m"})"))
      << reason_;
  EXPECT_EQ(ev_.seq, 9223372036854775807u);
  ExpectReject(R"({"producer":"p","seq":9223372036854775808,"ts":0,"metric":"m"})",
               "field seq: expected integer 0..2^63-1");
  ExpectReject(R"({"producer":"p","seq":18446744073709551615,"ts":0,"metric":"m"})", "field seq");
  ExpectReject(R"({"producer":"p","seq":18446744073709551616,"ts":0,"metric":"m"})", "field seq");
  ExpectReject(R"({"producer":"p","seq":-1,"ts":0,"metric":"m"})", "field seq");
}

TEST_F(EventParserTest, SeqWrongType) {
  for (const char* v : {"1.5", "1.0", "1e3", "\"7\"", "null", "false", "[7]", "{}"}) {
    ExpectReject(std::string(R"({"producer":"p","seq":)") + v + R"(,"ts":0,"metric":"m"})",
                 "field seq");
  }
}

// ---- ts --------------------------------------------------------------------

std::string TsLine(std::string_view ts) {
  return std::string(R"({"producer":"p","seq":1,"metric":"m","ts":)") + std::string(ts) + "}";
}

TEST_F(EventParserTest, TsRfc3339) {
  ASSERT_TRUE(Parse(TsLine(R"("2026-10-21T10:15:03Z")"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
  ASSERT_TRUE(Parse(TsLine(R"("2026-10-21T12:15:03.5+02:00")"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, k20261021T101503 + 500);
  ASSERT_TRUE(Parse(TsLine(R"("2026-10-21t10:15:03.123456z")"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, k20261021T101503 + 123);
  ASSERT_TRUE(Parse(TsLine(R"("1969-12-31T23:59:59.9999Z")"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, -1);
  // Escapes are decoded before the time is read.
  ASSERT_TRUE(Parse(TsLine(R"("2026-10-21T10:15:03\u005a")"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
}

TEST_F(EventParserTest, TsInvalidRfc3339) {
  for (const char* v : {R"("")", R"("2026-10-21")", R"("2026-02-30T00:00:00Z")",
                        R"("2026-10-21T10:15:03")", R"("1792577703000")", R"("yesterday")"}) {
    ExpectReject(TsLine(v), "field ts: invalid RFC 3339 time");
  }
}

TEST_F(EventParserTest, TsIntegerMilliseconds) {
  ASSERT_TRUE(Parse(TsLine("1792577703000"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, k20261021T101503);
  ASSERT_TRUE(Parse(TsLine("0"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, 0);
  ASSERT_TRUE(Parse(TsLine("-1"))) << reason_;
  EXPECT_EQ(ev_.ts_ms, -1);
  ASSERT_TRUE(Parse(TsLine(std::to_string(kMaxTimestampMs)))) << reason_;
  ASSERT_TRUE(Parse(TsLine(std::to_string(kMinTimestampMs)))) << reason_;
  ExpectReject(TsLine(std::to_string(kMaxTimestampMs + 1)), "field ts: out of range");
  ExpectReject(TsLine(std::to_string(kMinTimestampMs - 1)), "field ts: out of range");
  ExpectReject(TsLine("9223372036854775807"), "field ts: out of range");
  ExpectReject(TsLine("99999999999999999999"), "field ts");
}

TEST_F(EventParserTest, TsWrongType) {
  for (const char* v : {"1.5", "1792577703000.0", "1.7e12", "null", "true", "[]", "{}"}) {
    ExpectReject(TsLine(v), "field ts: expected RFC 3339 string or integer milliseconds");
  }
}

// ---- value -----------------------------------------------------------------

TEST_F(EventParserTest, ValueNumbers) {
  const struct {
    const char* text;
    int64_t micros;
  } kCases[] = {{"-12.5", -12500000},  {"3", 3000000},       {"1e3", 1000000000},
                {"2.5E-3", 2500},      {"0.0000010", 1},     {"0", 0},
                {"-0", 0},             {"0e999", 0},         {"1e-6", 1},
                {"9223372036854.775807", INT64_MAX},         {"-9223372036854.775808", INT64_MIN}};
  for (const auto& c : kCases) {
    ASSERT_TRUE(Parse(With(std::string(R"("value":)") + c.text))) << c.text << ": " << reason_;
    EXPECT_EQ(ev_.value_micros, c.micros) << c.text;
    // Also with whitespace around the token and as the last field.
    ASSERT_TRUE(Parse(std::string(R"({"producer":"p","seq":1,"ts":0,"metric":"m","value": )") +
                      c.text + " }"))
        << c.text << ": " << reason_;
    EXPECT_EQ(ev_.value_micros, c.micros) << c.text;
  }
}

TEST_F(EventParserTest, ValueTooManyDecimals) {
  ExpectReject(With(R"("value":1.0000001)"), "field value: more than 6 decimal places");
  ExpectReject(With(R"("value":1e-7)"), "field value: more than 6 decimal places");
}

TEST_F(EventParserTest, ValueOutOfRange) {
  ExpectReject(With(R"("value":9223372036854.775808)"), "field value: out of range");
  ExpectReject(With(R"("value":1e13)"), "field value: out of range");
  ExpectReject(With(R"("value":-1e400)"), "field value: out of range");
  ExpectReject(With(R"("value":123456789012345678901234567890)"), "field value: out of range");
}

TEST_F(EventParserTest, ValueWrongType) {
  for (const char* v : {"\"1\"", "null", "true", "[1]", "{}"}) {
    ExpectReject(With(std::string(R"("value":)") + v), "field value: expected number");
  }
  for (const char* v : {"01", "1.", "-", "1.2.3", "1e", "-.5"}) {
    ExpectReject(With(std::string(R"("value":)") + v), "field value");
  }
}

// ---- op --------------------------------------------------------------------

TEST_F(EventParserTest, Op) {
  ASSERT_TRUE(Parse(With(R"("op":"add")"))) << reason_;
  EXPECT_FALSE(ev_.retract);
  ASSERT_TRUE(Parse(With(R"("op":"retract")"))) << reason_;
  EXPECT_TRUE(ev_.retract);
  ASSERT_TRUE(Parse(With(R"("op":"r\u0065tract")"))) << reason_;
  EXPECT_TRUE(ev_.retract);
}

TEST_F(EventParserTest, OpInvalid) {
  for (const char* v : {R"("ADD")", R"("")", R"("delete")", R"("add ")", "1", "null", "true",
                        "[]", "{}"}) {
    ExpectReject(With(std::string(R"("op":)") + v), "field op: expected \"add\" or \"retract\"");
  }
}

// ---- buffers and reuse -------------------------------------------------------

TEST_F(EventParserTest, ReusedParserResetsDefaults) {
  ASSERT_TRUE(Parse(With(R"("epoch":5,"key":"k","value":2,"op":"retract")"))) << reason_;
  EXPECT_EQ(ev_.key, "k");
  ASSERT_TRUE(Parse(With(""))) << reason_;
  EXPECT_EQ(ev_.epoch, 0u);
  EXPECT_EQ(ev_.key, "");
  EXPECT_EQ(ev_.value_micros, 1000000);
  EXPECT_FALSE(ev_.retract);
}

TEST_F(EventParserTest, ViewsOutliveLaterFields) {
  // Escaped strings are decoded into the parser's buffer; later fields must
  // not overwrite earlier ones.
  ASSERT_TRUE(Parse(R"({"producer":"pr\u006fducer","metric":"m\u0065tric","key":"k\u0065y",)"
                    R"("x":"\u0078\u0078\u0078\u0078","ts":"2026-10-21T10:15:03\u005a","seq":1})"))
      << reason_;
  EXPECT_EQ(ev_.producer, "producer");
  EXPECT_EQ(ev_.metric, "metric");
  EXPECT_EQ(ev_.key, "key");
}

TEST_F(EventParserTest, LinesInsideOneBlockBuffer) {
  const std::string a = R"({"producer":"a","seq":1,"ts":0,"metric":"m","value":5})";
  const std::string b = R"({"producer":"b","seq":2,"ts":1,"metric":"n"})";
  std::string block = a + "\r\n" + b + "\n" + std::string(kEventPadding, '\0');
  ASSERT_TRUE(parser_.Parse(block.data(), a.size() + 1, block.size(), &ev_, &reason_)) << reason_;
  EXPECT_EQ(ev_.producer, "a");
  EXPECT_EQ(ev_.value_micros, 5000000);
  const size_t off = a.size() + 2;
  ASSERT_TRUE(parser_.Parse(block.data() + off, b.size(), block.size() - off, &ev_, &reason_))
      << reason_;
  EXPECT_EQ(ev_.producer, "b");
  EXPECT_EQ(ev_.ts_ms, 1);
  EXPECT_EQ(ev_.value_micros, 1000000);
}

TEST_F(EventParserTest, UnpaddedInputIsCopied) {
  const std::string line = With(R"("key":"k")");
  ASSERT_TRUE(parser_.Parse(line.data(), line.size(), line.size(), &ev_, &reason_)) << reason_;
  EXPECT_EQ(ev_.key, "k");
  simdjson::padded_string padded(line);
  ASSERT_TRUE(parser_.Parse(padded.data(), padded.size(), padded.size() + simdjson::SIMDJSON_PADDING,
                            &ev_, &reason_))
      << reason_;
  EXPECT_EQ(ev_.key, "k");
}

TEST_F(EventParserTest, LongLinesGrowTheParser) {
  ASSERT_TRUE(Parse(With(""))) << reason_;
  const std::string big(300000, 'b');
  ASSERT_TRUE(Parse(With(R"("blob":")" + big + R"(","key":"after")"))) << reason_;
  EXPECT_EQ(ev_.key, "after");
  ASSERT_TRUE(Parse(With(R"("key":"small")"))) << reason_;
  EXPECT_EQ(ev_.key, "small");
}

TEST_F(EventParserTest, NullReasonIsAllowed) {
  std::string line = "{}" + std::string(kEventPadding, ' ');
  EXPECT_FALSE(parser_.Parse(line.data(), 2, line.size(), &ev_, nullptr));
}

}  // namespace
}  // namespace snapsink
