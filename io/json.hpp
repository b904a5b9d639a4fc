// A small, strict JSON value with a parser and a writer (RFC 8259).
//
// The safetensors header and the metrics lines of the trainers are JSON, and
// the project depends on nothing but the standard library, so here is just
// enough JSON: null, true/false, numbers, strings, arrays and objects.
//
//   Json j = parse_json(R"({"dtype":"F32","shape":[2,3]})");
//   j["shape"][1].as_int();          // 3
//   Json m = Json::object();
//   m.set("epoch", 3).set("loss", 1.25);
//   m.dump();                        // {"epoch":3,"loss":1.25}
//
// Choices worth knowing:
//   - Objects keep their members in insertion order (as Python's dict), so a
//     header written and read back looks the same. Duplicate keys are a parse
//     error: RFC 8259 leaves their meaning open, and a checkpoint header with
//     two entries for one tensor must not be silently half-read.
//   - A number is a double; an integer literal that fits in int64 is also kept
//     exactly (2^53 + 1 survives a round trip), see is_integer().
//   - The parser is strict: no comments, trailing commas, leading zeros, NaN,
//     single quotes, raw control characters or invalid UTF-8 in strings. Every
//     error is a JsonParseError that names the byte offset and what was expected.
//   - The writer emits compact JSON; non-finite numbers, which JSON cannot
//     represent, are written as null (as JavaScript's JSON.stringify does).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace attn {

// A parse failure: what() reads "json: at byte 17: expected ':' after an
// object key, got 'x'"; offset() is that byte offset into the text.
class JsonParseError : public std::runtime_error {
public:
    JsonParseError(size_t offset, const std::string& message);
    size_t offset() const { return offset_; }

private:
    size_t offset_;
};

class Json {
public:
    enum class Type { null, boolean, number, string, array, object };
    using Array = std::vector<Json>;
    using Member = std::pair<std::string, Json>;
    using Object = std::vector<Member>;  // insertion order, unique keys

    // ---- construction ----------------------------------------------------
    Json() = default;  // null
    Json(std::nullptr_t) {}
    Json(bool b) : type_(Type::boolean), bool_(b) {}
    Json(double d) : type_(Type::number), number_(d) {}
    Json(float f) : Json(static_cast<double>(f)) {}
    // Any integer type except bool (which has its own constructor above).
    // Unsigned values above INT64_MAX are kept only as an approximate double.
    template <std::integral T>
        requires(!std::same_as<T, bool>)
    Json(T i) : type_(Type::number), number_(static_cast<double>(i)) {
        if (!std::is_unsigned_v<T> || static_cast<uint64_t>(i) <= static_cast<uint64_t>(INT64_MAX)) {
            int_ = static_cast<int64_t>(i);
            is_int_ = true;
        }
    }
    Json(std::string s) : type_(Type::string), string_(std::move(s)) {}
    Json(std::string_view s) : Json(std::string(s)) {}
    Json(const char* s) : Json(std::string(s)) {}
    static Json array(Array items = {});
    static Json object(Object members = {});  // throws on a duplicate key

    // ---- type tests ------------------------------------------------------
    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::null; }
    bool is_bool() const { return type_ == Type::boolean; }
    bool is_number() const { return type_ == Type::number; }
    // A number that holds an exact int64 (an integer literal or constructor).
    bool is_integer() const { return type_ == Type::number && is_int_; }
    bool is_string() const { return type_ == Type::string; }
    bool is_array() const { return type_ == Type::array; }
    bool is_object() const { return type_ == Type::object; }

    // ---- access: each throws std::runtime_error naming the actual type ----
    bool as_bool() const;
    double as_double() const;
    // The exact integer; a double is accepted only if it is integral and in
    // range (so 3.0 and 1e3 are fine, 2.5 is an error).
    int64_t as_int() const;
    const std::string& as_string() const;
    const Array& as_array() const;
    Array& as_array();
    const Object& as_object() const;
    Object& as_object();

    // Elements of an array or members of an object; 0 for anything else.
    size_t size() const;
    // Array element; throws if not an array or out of range.
    const Json& operator[](size_t index) const;
    // Object member; throws if not an object or the key is missing.
    const Json& operator[](std::string_view key) const;
    // Object member, or nullptr if missing (throws if not an object).
    const Json* find(std::string_view key) const;
    bool contains(std::string_view key) const { return find(key) != nullptr; }

    // ---- modification ----------------------------------------------------
    // Sets a member of an object (null becomes an empty object first):
    // replaces the value if the key exists, else appends. Returns *this.
    Json& set(std::string key, Json value);
    // Appends to an array (null becomes an empty array first).
    Json& push_back(Json value);

    // ---- writing ---------------------------------------------------------
    // Compact JSON text: {"a":[1,2.5,"x"]}.
    std::string dump() const;
    void dump_to(std::string& out) const;

    // Structural equality: numbers compare by value, objects member by member
    // in order.
    bool operator==(const Json& other) const;

    // The type as a word ("object", "string", ...) for error messages.
    static const char* type_name(Type t);

private:
    [[noreturn]] void type_error(const char* wanted) const;
    friend class JsonParser;

    Type type_ = Type::null;
    bool bool_ = false;
    bool is_int_ = false;
    double number_ = 0;
    int64_t int_ = 0;
    std::string string_;
    Array array_;
    Object object_;
};

// Parses one complete JSON text (surrounding whitespace allowed, nothing
// else). Throws JsonParseError. Nesting deeper than 512 levels is rejected so
// that hostile input cannot overflow the stack.
Json parse_json(std::string_view text);

// Appends `s` as a quoted JSON string literal with the necessary escapes
// (\" \\ \b \f \n \r \t and \u00XX for other control characters). JSON text
// is UTF-8: a string that is not valid UTF-8 would make a file no reader
// accepts, so it throws std::invalid_argument naming the byte instead.
void append_json_string(std::string& out, std::string_view s);

// The length in bytes (1–4) of the UTF-8 character starting at s[at], or 0 if
// the bytes there are not a valid one (a stray continuation byte, a truncated,
// overlong or surrogate encoding, a code point above U+10FFFF); then `why`,
// if given, gets the reason ("invalid UTF-8 continuation byte").
size_t utf8_char_length(std::string_view s, size_t at, const char** why = nullptr);
// The offset of the first byte of `s` that begins no valid UTF-8 character
// (and its reason in `why`), or std::string_view::npos when `s` is all UTF-8:
// what a reader of a user's text file checks each line with.
size_t first_invalid_utf8(std::string_view s, const char** why = nullptr);

}  // namespace attn
