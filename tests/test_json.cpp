// io/json: values, the writer, the parser, and every parse error.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "io/json.hpp"

using namespace attn;

TEST_CASE("json: scalars parse to the right type and value") {
    CHECK(parse_json("null").is_null());
    CHECK(parse_json("true").as_bool() == true);
    CHECK(parse_json(" \t\r\nfalse \n").as_bool() == false);
    CHECK(parse_json("0").as_int() == 0);
    CHECK(parse_json("-12").as_int() == -12);
    CHECK(parse_json("1.5").as_double() == 1.5);
    CHECK(parse_json("-2.5e-3").as_double() == -2.5e-3);
    CHECK(parse_json("1E2").as_double() == 100);
    CHECK(parse_json("\"hi\"").as_string() == "hi");

    // Integer literals are kept exactly, beyond the 2^53 of a double.
    const Json big = parse_json("9007199254740993");
    CHECK(big.is_integer());
    CHECK(big.as_int() == 9007199254740993LL);
    CHECK(parse_json("9223372036854775807").as_int() == std::numeric_limits<int64_t>::max());
    CHECK(parse_json("-9223372036854775808").as_int() == std::numeric_limits<int64_t>::min());
    const Json too_big = parse_json("9223372036854775808");  // 2^63: only a double
    CHECK(!too_big.is_integer());
    CHECK(too_big.as_double() == 9223372036854775808.0);
    CHECK_THROWS_WITH(too_big.as_int(), doctest::Contains("expected an integer"));

    // Fractions and exponents are doubles; as_int takes them only when integral.
    CHECK(!parse_json("3.0").is_integer());
    CHECK(parse_json("3.0").as_int() == 3);
    CHECK(parse_json("1e3").as_int() == 1000);
    CHECK_THROWS_WITH(parse_json("2.5").as_int(), "json: expected an integer, got the number 2.5");
    // -0 keeps its sign as a double, and is written back as it was read (as the
    // integer 0 it became "0": the fuzzer's round trip found it).
    CHECK(std::signbit(parse_json("-0").as_double()));
    CHECK(!parse_json("-0").is_integer());
    CHECK(parse_json("-0").dump() == "-0");
    CHECK(parse_json(parse_json("[-0,0,-0.0]").dump()).dump() == parse_json("[-0,0,-0.0]").dump());
}

TEST_CASE("json: strings and escapes") {
    CHECK(parse_json(R"("\"\\\/\b\f\n\r\t")").as_string() == "\"\\/\b\f\n\r\t");
    CHECK(parse_json(R"("caf\u00e9")").as_string() == "caf\xc3\xa9");
    CHECK(parse_json(R"("\u20AC")").as_string() == "\xe2\x82\xac");                // €
    CHECK(parse_json(R"("\ud83d\ude00")").as_string() == "\xf0\x9f\x98\x80");     // 😀 from a surrogate pair
    CHECK(parse_json(R"("\u0000")").as_string() == std::string(1, '\0'));
    CHECK(parse_json("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"").as_string() == "caf\xc3\xa9 \xf0\x9f\x98\x80");

    // The writer escapes what it must and passes UTF-8 through.
    CHECK(Json("a\"b\\c\n\x01").dump() == R"("a\"b\\c\n\u0001")");
    CHECK(Json("\xc3\xa9").dump() == "\"\xc3\xa9\"");
    CHECK(Json(std::string(1, '\0')).dump() == R"("\u0000")");
}

TEST_CASE("json: objects keep insertion order; round trips are exact") {
    const std::string text = R"({"zeta":1,"alpha":[true,false,null,"x",{"k":[]}],"mid":{},"n":-0.125,"e":1e+300})";
    const Json j = parse_json(text);
    REQUIRE(j.is_object());
    CHECK(j.as_object()[0].first == "zeta");
    CHECK(j.as_object()[1].first == "alpha");
    CHECK(j["alpha"].size() == 5);
    CHECK(j["alpha"][4]["k"].is_array());
    CHECK(j.dump() == text);
    CHECK(parse_json(j.dump()) == j);

    // Doubles are written in their shortest exact form.
    for (double d : {0.1, 1.0 / 3, 1e-300, 123456.789, -2.5e17, 5e-324}) {
        const Json back = parse_json(Json(d).dump());
        CHECK(back.as_double() == d);
    }
    CHECK(Json(0.1).dump() == "0.1");
    CHECK(Json(3).dump() == "3");
    CHECK(Json(uint64_t(18446744073709551615ULL)).is_integer() == false);  // beyond int64: a double
    // JSON has no NaN or infinity: they are written as null.
    CHECK(Json(std::nan("")).dump() == "null");
    CHECK(Json(-INFINITY).dump() == "null");
}

TEST_CASE("json: building values") {
    Json m;
    m.set("epoch", 3).set("loss", 1.25).set("name", "run").set("ok", true);
    CHECK(m.dump() == R"({"epoch":3,"loss":1.25,"name":"run","ok":true})");
    m.set("epoch", 4);  // replaces in place
    CHECK(m.dump() == R"({"epoch":4,"loss":1.25,"name":"run","ok":true})");
    CHECK(m.contains("loss"));
    CHECK(m.find("missing") == nullptr);

    Json a;
    a.push_back(1).push_back("two").push_back(Json::array({Json(3)}));
    CHECK(a.dump() == R"([1,"two",[3]])");

    CHECK(Json::object({{"a", 1}, {"b", 2}}).dump() == R"({"a":1,"b":2})");
    CHECK_THROWS_WITH(Json::object({{"a", 1}, {"a", 2}}), "Json::object: duplicate key \"a\"");
}

TEST_CASE("json: access errors name the types") {
    const Json j = parse_json(R"({"a":[1,2]})");
    CHECK_THROWS_WITH(j.as_string(), "json: expected a string, got object");
    CHECK_THROWS_WITH(j["a"].as_object(), "json: expected an object, got array");
    CHECK_THROWS_WITH(j["b"], "json: no member \"b\"");
    CHECK_THROWS_WITH(j["a"][2], "json: index 2 is out of range for an array of 2");
    CHECK_THROWS_WITH(Json(1).as_bool(), "json: expected a boolean, got number");
    CHECK_THROWS_WITH(Json().as_double(), "json: expected a number, got null");
    CHECK_THROWS_WITH(Json(1).push_back(2), "json: expected an array, got number");
}

TEST_CASE("json: every parse error names its byte offset and what was expected") {
    struct Case {
        std::string text;
        size_t offset;
        const char* message;
    };
    const Case cases[] = {
        {"", 0, "expected a JSON value, got the end of the input"},
        {"   ", 3, "expected a JSON value, got the end of the input"},
        {"nul", 0, "expected 'null', got 'n'"},
        {"tru", 0, "expected 'true'"},
        {"NaN", 0, "expected a JSON value, got 'N'"},
        {"'a'", 0, "expected a JSON value, got '''"},
        {"// c\n1", 0, "expected a JSON value, got '/'"},
        {"\x01", 0, "expected a JSON value, got byte 0x01"},
        {"1 2", 2, "expected the end of the input after the JSON value"},
        {"[", 1, "expected a JSON value, got the end of the input"},
        {"[1,]", 3, "expected a JSON value, got ']'"},
        {"[1 2]", 3, "expected ',' or ']' after an array element, got '2'"},
        {"{\"a\" 1}", 5, "expected ':' after an object key, got '1'"},
        {"{\"a\":1,}", 7, "expected a string key, got '}'"},
        {"{a:1}", 1, "expected a string key, got 'a'"},
        {"{\"a\":1 \"b\":2}", 7, "expected ',' or '}' after an object member, got '\"'"},
        {"{\"a\":1,\"a\":2}", 7, "duplicate key \"a\""},
        {"01", 1, "leading zeros are not allowed in numbers"},
        {"-", 1, "expected a digit, got the end of the input"},
        {"-a", 1, "expected a digit, got 'a'"},
        {"1.", 2, "expected a digit after the decimal point"},
        {"1.e5", 2, "expected a digit after the decimal point, got 'e'"},
        {"1e", 2, "expected a digit in the exponent"},
        {"1e+", 3, "expected a digit in the exponent"},
        {"1e400", 0, "number 1e400 is out of the range of a double"},
        {"\"abc", 0, "unterminated string"},
        {"\"a\nb\"", 2, "raw control character in a string"},
        {"\"\\x\"", 2, "expected an escape character"},
        {"\"\\u12G4\"", 5, "expected a hexadecimal digit in a \\u escape, got 'G'"},
        {"\"\\u12", 5, "expected a hexadecimal digit in a \\u escape, got the end of the input"},
        {"\"\\ud800\"", 1, "high surrogate not followed by a \\u low surrogate"},
        {"\"\\ud800\\u0041\"", 1, "high surrogate not followed by a low surrogate"},
        {"\"\\udc00\"", 1, "lone low surrogate"},
        {"\"\xff\"", 1, "invalid UTF-8 byte in a string"},
        {"\"\xc0\x80\"", 1, "invalid UTF-8 byte in a string"},  // overlong encoding of NUL
        {"\"\xc3\"", 1, "invalid UTF-8 continuation byte"},
        {"\"\xe2\x82", 1, "truncated UTF-8 character"},
        {"\"\xed\xa0\x80\"", 1, "invalid UTF-8 character"},  // an encoded surrogate
        {"\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8 character"},  // beyond U+10FFFF
        {"\"\xe0\x80\x80\"", 1, "invalid UTF-8 character"},      // overlong 3-byte
    };
    for (const Case& c : cases) {
        CAPTURE(c.text);
        bool threw = false;
        try {
            parse_json(c.text);
        } catch (const JsonParseError& e) {
            threw = true;
            CHECK(e.offset() == c.offset);
            const std::string what = e.what();
            CHECK(what.rfind("json: at byte " + std::to_string(c.offset) + ": ", 0) == 0);
            CHECK_MESSAGE(what.find(c.message) != std::string::npos, what);
        }
        CHECK(threw);
    }
}

TEST_CASE("json: nesting is limited instead of overflowing the stack") {
    CHECK(parse_json(std::string(500, '[') + std::string(500, ']')).is_array());
    const std::string deep = std::string(100000, '[');
    CHECK_THROWS_WITH_AS(parse_json(deep), doctest::Contains("nesting deeper than 512 levels"), JsonParseError);
}
