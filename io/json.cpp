#include "io/json.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace attn {

// std::from_chars and std::to_chars for double, with stand-ins where the
// standard library lacks them: libc++ before version 20 (every Xcode up to 16)
// has no from_chars for double, and on macOS to_chars for double needs 13.3.
// The stand-ins use strtod and snprintf, which read and write '.' in the "C"
// locale every program starts in. ATTN_NO_CHARCONV_DOUBLE forces them, so
// they can be tested anywhere.
namespace {

#if defined(ATTN_NO_CHARCONV_DOUBLE) || (defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 200000)
std::from_chars_result read_double(const char* first, const char* last, double& out) {
    const std::string text(first, last);  // strtod needs a terminated string
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text.c_str(), &end);
    std::from_chars_result r{first + (end - text.c_str()), std::errc()};
    // ERANGE also comes with a subnormal result, which from_chars accepts: out
    // of range is only an overflow (±inf) or an underflow to 0.
    if (end == text.c_str()) r.ec = std::errc::invalid_argument;
    else if (errno == ERANGE && (std::isinf(value) || value == 0)) r.ec = std::errc::result_out_of_range;
    else out = value;
    return r;
}
#else
std::from_chars_result read_double(const char* first, const char* last, double& out) {
    return std::from_chars(first, last, out);
}
#endif

#if defined(ATTN_NO_CHARCONV_DOUBLE) || \
    (defined(__APPLE__) && defined(__ENVIRONMENT_MAC_OS_X_VERSION_MIN_REQUIRED__) && \
     __ENVIRONMENT_MAC_OS_X_VERSION_MIN_REQUIRED__ < 130300)
// The shortest %g text that reads back as the same double.
char* write_double(char* first, char* last, double value) {
    const auto size = static_cast<size_t>(last - first);
    for (int digits = 1; digits <= 17; ++digits) {
        const int n = std::snprintf(first, size, "%.*g", digits, value);
        if (n > 0 && static_cast<size_t>(n) < size && std::strtod(first, nullptr) == value) return first + n;
    }
    return first + std::snprintf(first, size, "%.17g", value);
}
#else
char* write_double(char* first, char* last, double value) { return std::to_chars(first, last, value).ptr; }
#endif

}  // namespace

JsonParseError::JsonParseError(size_t offset, const std::string& message)
    : std::runtime_error("json: at byte " + std::to_string(offset) + ": " + message), offset_(offset) {}

// ---- construction and access ---------------------------------------------

Json Json::array(Array items) {
    Json j;
    j.type_ = Type::array;
    j.array_ = std::move(items);
    return j;
}

Json Json::object(Object members) {
    Json j;
    j.type_ = Type::object;
    for (auto& [key, value] : members) {
        if (j.find(key)) throw std::invalid_argument("Json::object: duplicate key \"" + key + "\"");
        j.object_.emplace_back(std::move(key), std::move(value));
    }
    return j;
}

const char* Json::type_name(Type t) {
    switch (t) {
        case Type::null: return "null";
        case Type::boolean: return "boolean";
        case Type::number: return "number";
        case Type::string: return "string";
        case Type::array: return "array";
        case Type::object: return "object";
    }
    return "?";
}

void Json::type_error(const char* wanted) const {
    throw std::runtime_error(std::string("json: expected ") + wanted + ", got " + type_name(type_));
}

bool Json::as_bool() const {
    if (type_ != Type::boolean) type_error("a boolean");
    return bool_;
}

double Json::as_double() const {
    if (type_ != Type::number) type_error("a number");
    return number_;
}

int64_t Json::as_int() const {
    if (type_ != Type::number) type_error("an integer");
    if (is_int_) return int_;
    // 2^63 is exactly representable as a double; anything >= it does not fit.
    if (std::isfinite(number_) && number_ == std::trunc(number_) && number_ >= -9223372036854775808.0 &&
        number_ < 9223372036854775808.0)
        return static_cast<int64_t>(number_);
    throw std::runtime_error("json: expected an integer, got the number " + dump());
}

const std::string& Json::as_string() const {
    if (type_ != Type::string) type_error("a string");
    return string_;
}

const Json::Array& Json::as_array() const {
    if (type_ != Type::array) type_error("an array");
    return array_;
}

Json::Array& Json::as_array() {
    if (type_ != Type::array) type_error("an array");
    return array_;
}

const Json::Object& Json::as_object() const {
    if (type_ != Type::object) type_error("an object");
    return object_;
}

Json::Object& Json::as_object() {
    if (type_ != Type::object) type_error("an object");
    return object_;
}

size_t Json::size() const {
    if (type_ == Type::array) return array_.size();
    if (type_ == Type::object) return object_.size();
    return 0;
}

const Json& Json::operator[](size_t index) const {
    const Array& a = as_array();
    if (index >= a.size())
        throw std::out_of_range("json: index " + std::to_string(index) + " is out of range for an array of " +
                                std::to_string(a.size()));
    return a[index];
}

const Json& Json::operator[](std::string_view key) const {
    const Json* value = find(key);
    if (!value) throw std::out_of_range("json: no member \"" + std::string(key) + "\"");
    return *value;
}

const Json* Json::find(std::string_view key) const {
    for (const auto& [k, v] : as_object())
        if (k == key) return &v;
    return nullptr;
}

Json& Json::set(std::string key, Json value) {
    if (type_ == Type::null) type_ = Type::object;
    for (auto& [k, v] : as_object()) {
        if (k == key) {
            v = std::move(value);
            return *this;
        }
    }
    object_.emplace_back(std::move(key), std::move(value));
    return *this;
}

Json& Json::push_back(Json value) {
    if (type_ == Type::null) type_ = Type::array;
    as_array().push_back(std::move(value));
    return *this;
}

bool Json::operator==(const Json& other) const {
    if (type_ != other.type_) return false;
    switch (type_) {
        case Type::null: return true;
        case Type::boolean: return bool_ == other.bool_;
        case Type::number:
            if (is_int_ && other.is_int_) return int_ == other.int_;
            return number_ == other.number_;
        case Type::string: return string_ == other.string_;
        case Type::array: return array_ == other.array_;
        case Type::object: return object_ == other.object_;
    }
    return false;
}

// ---- writing ---------------------------------------------------------------

size_t utf8_char_length(std::string_view s, size_t at, const char** why) {
    const auto invalid = [why](const char* reason) {
        if (why) *why = reason;
        return size_t{0};
    };
    if (at >= s.size()) return invalid("truncated UTF-8 character");
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
    const unsigned char b0 = byte(0);
    if (b0 < 0x80) return 1;
    size_t length;
    unsigned code, min_code;
    // The lead byte gives the length and the first bits of the code point;
    // min_code rejects overlong encodings (the same point in more bytes).
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        length = 2, code = b0 & 0x1f, min_code = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        length = 3, code = b0 & 0x0f, min_code = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        length = 4, code = b0 & 0x07, min_code = 0x10000;
    } else {
        return invalid("invalid UTF-8 byte");
    }
    if (at + length > s.size()) return invalid("truncated UTF-8 character");
    for (size_t i = 1; i < length; ++i) {
        if ((byte(i) & 0xc0) != 0x80) return invalid("invalid UTF-8 continuation byte");
        code = (code << 6) | (byte(i) & 0x3f);
    }
    if (code < min_code || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
        return invalid("invalid UTF-8 character");
    return length;
}

size_t first_invalid_utf8(std::string_view s, const char** why) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_char_length(s, i, why);
        if (n == 0) return i;
        i += n;
    }
    return std::string_view::npos;
}

void append_json_string(std::string& out, std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i)
        if (static_cast<unsigned char>(s[i]) >= 0x80) {
            const size_t n = utf8_char_length(s, i);
            if (n == 0)
                throw std::invalid_argument("append_json_string: the string is not valid UTF-8 (byte " +
                                            std::to_string(i) + " of \"" + std::string(s.substr(0, 40)) + "\")");
            i += n - 1;
        }
    out += '"';
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                    out += buf;
                } else {
                    out += c;  // UTF-8 bytes pass through unchanged
                }
        }
    }
    out += '"';
}

void Json::dump_to(std::string& out) const {
    switch (type_) {
        case Type::null: out += "null"; break;
        case Type::boolean: out += bool_ ? "true" : "false"; break;
        case Type::number: {
            if (is_int_) {
                out += std::to_string(int_);
            } else if (!std::isfinite(number_)) {
                out += "null";
            } else {
                // The shortest text that reads back as the same double.
                char buf[32];
                out.append(buf, write_double(buf, buf + sizeof buf, number_));
            }
            break;
        }
        case Type::string: append_json_string(out, string_); break;
        case Type::array:
            out += '[';
            for (size_t i = 0; i < array_.size(); ++i) {
                if (i) out += ',';
                array_[i].dump_to(out);
            }
            out += ']';
            break;
        case Type::object:
            out += '{';
            for (size_t i = 0; i < object_.size(); ++i) {
                if (i) out += ',';
                append_json_string(out, object_[i].first);
                out += ':';
                object_[i].second.dump_to(out);
            }
            out += '}';
            break;
    }
}

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

// ---- parsing ---------------------------------------------------------------

// A recursive-descent parser over the grammar of RFC 8259:
//   value  = object | array | string | number | true | false | null
//   object = '{' [ string ':' value *( ',' string ':' value ) ] '}'
//   array  = '[' [ value *( ',' value ) ] ']'
class JsonParser {
public:
    explicit JsonParser(std::string_view text) : text_(text) {}

    Json parse_document() {
        skip_whitespace();
        Json value = parse_value(0);
        skip_whitespace();
        if (pos_ != text_.size()) fail("expected the end of the input after the JSON value");
        return value;
    }

private:
    static constexpr int kMaxDepth = 512;

    std::string_view text_;
    size_t pos_ = 0;

    // Describes what stands at pos_, for error messages.
    std::string found() const {
        if (pos_ >= text_.size()) return "the end of the input";
        const unsigned char c = static_cast<unsigned char>(text_[pos_]);
        char buf[16];
        if (c >= 0x20 && c < 0x7f)
            std::snprintf(buf, sizeof buf, "'%c'", c);
        else
            std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
        return buf;
    }
    [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }
    [[noreturn]] void fail_at(size_t offset, const std::string& message) const {
        throw JsonParseError(offset, message);
    }
    [[noreturn]] void expected(const std::string& what) const { fail("expected " + what + ", got " + found()); }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    void skip_whitespace() {
        while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
    }

    Json parse_value(int depth) {
        if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
        switch (peek()) {
            case '{': return parse_object(depth);
            case '[': return parse_array(depth);
            case '"': return Json(parse_string());
            case 't': parse_literal("true"); return Json(true);
            case 'f': parse_literal("false"); return Json(false);
            case 'n': parse_literal("null"); return Json();
            default:
                if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
                expected("a JSON value");
        }
    }

    void parse_literal(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) expected("'" + std::string(word) + "'");
        pos_ += word.size();
    }

    Json parse_object(int depth) {
        Json obj = Json::object();
        std::unordered_set<std::string> keys;
        ++pos_;  // '{'
        skip_whitespace();
        if (peek() == '}') {
            ++pos_;
            return obj;
        }
        for (;;) {
            if (peek() != '"') expected("a string key");
            const size_t key_offset = pos_;
            std::string key = parse_string();
            if (!keys.insert(key).second) fail_at(key_offset, "duplicate key \"" + key + "\"");
            skip_whitespace();
            if (peek() != ':') expected("':' after an object key");
            ++pos_;
            skip_whitespace();
            Json value = parse_value(depth + 1);
            obj.object_.emplace_back(std::move(key), std::move(value));
            skip_whitespace();
            if (peek() == ',') {
                ++pos_;
                skip_whitespace();
            } else if (peek() == '}') {
                ++pos_;
                return obj;
            } else {
                expected("',' or '}' after an object member");
            }
        }
    }

    Json parse_array(int depth) {
        Json arr = Json::array();
        ++pos_;  // '['
        skip_whitespace();
        if (peek() == ']') {
            ++pos_;
            return arr;
        }
        for (;;) {
            arr.array_.push_back(parse_value(depth + 1));
            skip_whitespace();
            if (peek() == ',') {
                ++pos_;
                skip_whitespace();
            } else if (peek() == ']') {
                ++pos_;
                return arr;
            } else {
                expected("',' or ']' after an array element");
            }
        }
    }

    // number = [ '-' ] ( '0' | [1-9] *digit ) [ '.' 1*digit ] [ ( 'e' | 'E' ) [ '+' | '-' ] 1*digit ]
    Json parse_number() {
        const size_t start = pos_;
        auto digits = [&] {
            const size_t from = pos_;
            while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
            return pos_ - from;
        };
        if (peek() == '-') ++pos_;
        if (peek() == '0') {
            ++pos_;
            if (peek() >= '0' && peek() <= '9') fail("leading zeros are not allowed in numbers");
        } else if (digits() == 0) {
            expected("a digit");
        }
        bool integral = true;
        if (peek() == '.') {
            ++pos_;
            if (digits() == 0) expected("a digit after the decimal point");
            integral = false;
        }
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (digits() == 0) expected("a digit in the exponent");
            integral = false;
        }
        const char* first = text_.data() + start;
        const char* last = text_.data() + pos_;
        Json j;
        j.type_ = Json::Type::number;
        auto [end, ec] = read_double(first, last, j.number_);
        if (ec == std::errc::result_out_of_range && integral) ec = {};  // huge integer: a double is fine
        if (ec != std::errc() || end != last || !std::isfinite(j.number_))
            fail_at(start, "number " + std::string(first, last) + " is out of the range of a double");
        // "-0" stays the double −0: as the integer 0 it would be written back as "0".
        if (integral && !(j.number_ == 0 && std::signbit(j.number_))) {
            auto [iend, iec] = std::from_chars(first, last, j.int_);
            j.is_int_ = iec == std::errc() && iend == last;
        }
        return j;
    }

    unsigned parse_hex4() {
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            unsigned digit;
            if (c >= '0' && c <= '9') digit = c - '0';
            else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
            else expected("a hexadecimal digit in a \\u escape");
            code = code * 16 + digit;
            ++pos_;
        }
        return code;
    }

    static void append_utf8(std::string& out, unsigned code) {
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
        } else if (code < 0x10000) {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (code >> 18));
            out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
        }
    }

    // \uXXXX, where a UTF-16 surrogate pair \uD83D\uDE00 makes one code point.
    unsigned parse_unicode_escape() {
        const size_t start = pos_ - 2;  // at the backslash
        unsigned code = parse_hex4();
        if (code >= 0xdc00 && code <= 0xdfff) fail_at(start, "lone low surrogate in a \\u escape");
        if (code >= 0xd800 && code <= 0xdbff) {
            if (text_.substr(pos_, 2) != "\\u") fail_at(start, "high surrogate not followed by a \\u low surrogate");
            pos_ += 2;
            const unsigned low = parse_hex4();
            if (low < 0xdc00 || low > 0xdfff) fail_at(start, "high surrogate not followed by a low surrogate");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        }
        return code;
    }

    // Copies one UTF-8 encoded character (starting at a byte >= 0x80),
    // rejecting invalid, overlong and surrogate encodings.
    void copy_utf8_char(std::string& out) {
        const char* why = "";
        const size_t length = utf8_char_length(text_, pos_, &why);
        if (length == 0) fail(std::string(why) + " in a string");
        out.append(text_.data() + pos_, length);
        pos_ += length;
    }

    std::string parse_string() {
        const size_t start = pos_;
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) fail_at(start, "unterminated string");
            const unsigned char c = static_cast<unsigned char>(peek());
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail("raw control character in a string (write it as an escape such as \\n)");
            if (c >= 0x80) {
                copy_utf8_char(out);
                continue;
            }
            ++pos_;
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            const char e = peek();
            ++pos_;
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': append_utf8(out, parse_unicode_escape()); break;
                default: --pos_; expected("an escape character (one of \" \\ / b f n r t u) after '\\'");
            }
        }
    }
};

Json parse_json(std::string_view text) { return JsonParser(text).parse_document(); }

}  // namespace attn
