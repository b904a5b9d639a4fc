#include "io/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "io/atomic_file.hpp"
#include "io/json.hpp"

namespace attn {

namespace {

// A header this long is not a real checkpoint header (the reference
// implementation uses the same 100 MB limit): refuse before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// ---- little-endian bytes, independent of the host's byte order -------------

void put_le(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* p, int bytes) {
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
    return value;
}

// ---- dtypes ---------------------------------------------------------------

// Every dtype of the safetensors specification with its size in bytes; the
// reader converts the floating-point ones and names the others.
struct DtypeInfo {
    const char* name;
    int bytes;
    bool supported;
};
constexpr DtypeInfo kDtypes[] = {
    {"F64", 8, true},   {"F32", 4, true},   {"F16", 2, true},  {"BF16", 2, true},
    {"I64", 8, false},  {"I32", 4, false},  {"I16", 2, false}, {"I8", 1, false},
    {"U64", 8, false},  {"U32", 4, false},  {"U16", 2, false}, {"U8", 1, false},
    {"BOOL", 1, false}, {"F8_E4M3", 1, false}, {"F8_E5M2", 1, false},
};

const DtypeInfo* find_dtype(const std::string& name) {
    for (const DtypeInfo& d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

// IEEE half precision: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
float half_to_float(uint16_t h) {
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    float magnitude;
    if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero, subnormal
    else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
    else magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

float bits_to_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Converts n values stored as `dtype` at p into reals.
void decode(real* out, const char* p, int64_t n, std::string_view dtype) {
    if (dtype == "F32" && std::endian::native == std::endian::little && sizeof(real) == 4) {
        std::memcpy(out, p, static_cast<size_t>(n) * 4);  // bit for bit, NaN payloads included
    } else if (dtype == "F32") {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<real>(bits_to_float(uint32_t(get_le(p + 4 * i, 4))));
    } else if (dtype == "F64") {
        for (int64_t i = 0; i < n; ++i) {
            const uint64_t bits = get_le(p + 8 * i, 8);
            double d;
            std::memcpy(&d, &bits, sizeof d);
            out[i] = static_cast<real>(d);
        }
    } else if (dtype == "F16") {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<real>(half_to_float(uint16_t(get_le(p + 2 * i, 2))));
    } else if (dtype == "BF16") {  // the upper half of an F32
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<real>(bits_to_float(uint32_t(get_le(p + 2 * i, 2)) << 16));
    } else {
        throw std::logic_error("safetensors: no decoder for dtype " + std::string(dtype));
    }
}

// "[4, 3]" for messages.
std::string shape_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// One tensor entry of the header, validated on its own.
struct Entry {
    std::string name;
    const DtypeInfo* dtype = nullptr;
    std::vector<int64_t> dims;
    uint64_t begin = 0, end = 0;
};

class HeaderReader {
public:
    explicit HeaderReader(const std::string& source) : source_(source) {}

    [[noreturn]] void fail(const std::string& problem) const {
        throw std::runtime_error("load_safetensors: '" + source_ + "': " + problem);
    }

    uint64_t non_negative_integer(const Json& j, const std::string& where) const {
        if (!j.is_integer() || j.as_int() < 0)
            fail(where + " must be a non-negative integer, got " + j.dump());
        return static_cast<uint64_t>(j.as_int());
    }

    Entry entry(const std::string& name, const Json& j) const {
        const std::string what = "tensor \"" + name + "\"";
        if (!j.is_object()) fail(what + ": expected an object with dtype, shape and data_offsets, got " + j.dump());
        for (const auto& [key, value] : j.as_object())
            if (key != "dtype" && key != "shape" && key != "data_offsets")
                fail(what + ": unexpected field \"" + key + "\"");
        for (const char* key : {"dtype", "shape", "data_offsets"})
            if (!j.contains(key)) fail(what + ": missing \"" + key + "\"");

        Entry e;
        e.name = name;
        const Json& dtype = j["dtype"];
        if (!dtype.is_string()) fail(what + ": dtype must be a string, got " + dtype.dump());
        e.dtype = find_dtype(dtype.as_string());
        if (!e.dtype) fail(what + ": unknown dtype \"" + dtype.as_string() + "\"");
        if (!e.dtype->supported)
            fail(what + ": dtype " + dtype.as_string() + " is not supported (this reader reads F32, F64, F16, BF16)");

        const Json& shape = j["shape"];
        if (!shape.is_array()) fail(what + ": shape must be an array, got " + shape.dump());
        if (shape.size() > static_cast<size_t>(Shape::kMaxRank))
            fail(what + ": shape has " + std::to_string(shape.size()) + " dimensions, more than the " +
                 std::to_string(Shape::kMaxRank) + " a Tensor supports");
        uint64_t numel = 1;
        bool too_large = false;
        for (size_t i = 0; i < shape.size(); ++i) {
            const uint64_t d = non_negative_integer(shape[i], what + ": shape[" + std::to_string(i) + "]");
            // Keep numel × 8 bytes (and Shape's int64 numel) far from overflow.
            if (d != 0 && numel > (uint64_t(1) << 60) / d) too_large = true;
            numel *= d;
            e.dims.push_back(static_cast<int64_t>(d));
        }
        if (too_large) fail(what + ": shape " + shape_text(e.dims) + " is too large");

        const Json& offsets = j["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2)
            fail(what + ": data_offsets must be an array [begin, end], got " + offsets.dump());
        e.begin = non_negative_integer(offsets[0], what + ": data_offsets[0]");
        e.end = non_negative_integer(offsets[1], what + ": data_offsets[1]");
        if (e.end < e.begin)
            fail(what + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                 "] end before they begin");
        const uint64_t needed = numel * static_cast<uint64_t>(e.dtype->bytes);
        if (e.end - e.begin != needed)
            fail(what + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
                 std::to_string(e.end - e.begin) + " bytes, but " + e.dtype->name + " with shape " +
                 shape_text(e.dims) + " needs " + std::to_string(needed));
        return e;
    }

    std::map<std::string, std::string> metadata(const Json& j) const {
        if (!j.is_object()) fail("__metadata__ must be an object of strings, got " + j.dump());
        std::map<std::string, std::string> out;
        for (const auto& [key, value] : j.as_object()) {
            if (!value.is_string()) fail("__metadata__ \"" + key + "\" must be a string, got " + value.dump());
            out[key] = value.as_string();
        }
        return out;
    }

    // The spec requires the tensors to tile the data region exactly: sorted
    // by offset, each begins where the previous one ended, the last ends at
    // the end of the file. This rules out overlaps, holes and overruns.
    void check_layout(std::vector<const Entry*> sorted, uint64_t data_bytes) const {
        std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
            return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
        });
        uint64_t covered = 0;
        const Entry* previous = nullptr;
        for (const Entry* e : sorted) {
            if (e->end > data_bytes)
                fail("tensor \"" + e->name + "\": data_offsets [" + std::to_string(e->begin) + ", " +
                     std::to_string(e->end) + "] reach past the end of the data (" + std::to_string(data_bytes) +
                     " bytes)");
            if (e->begin < covered)
                fail("tensor \"" + e->name + "\" (bytes " + std::to_string(e->begin) + " to " +
                     std::to_string(e->end) + ") overlaps tensor \"" + previous->name + "\" (bytes " +
                     std::to_string(previous->begin) + " to " + std::to_string(previous->end) + ")");
            if (e->begin > covered)
                fail("bytes " + std::to_string(covered) + " to " + std::to_string(e->begin) +
                     " of the data are not covered by any tensor (a hole before \"" + e->name + "\")");
            covered = e->end;
            previous = e;
        }
        if (covered != data_bytes)
            fail("bytes " + std::to_string(covered) + " to " + std::to_string(data_bytes) +
                 " at the end of the data are not covered by any tensor");
    }

private:
    const std::string& source_;
};

}  // namespace

// ---- SafetensorsFile -------------------------------------------------------

bool SafetensorsFile::contains(std::string_view name) const {
    for (const auto& [n, t] : tensors)
        if (n == name) return true;
    return false;
}

const Tensor& SafetensorsFile::at(std::string_view name) const {
    std::string names;
    for (const auto& [n, t] : tensors) {
        if (n == name) return t;
        names += (names.empty() ? "" : ", ") + n;
    }
    throw std::out_of_range("safetensors: '" + path + "' has no tensor \"" + std::string(name) + "\" (it has: " +
                            (names.empty() ? "none" : names) + ")");
}

// ---- writing ---------------------------------------------------------------

std::string serialize_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
    // Sorted by name, as the reference writer orders the data; the header
    // lists the tensors in the same order.
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return tensors[a].first < tensors[b].first; });
    for (size_t k = 0; k < order.size(); ++k) {
        const auto& [name, t] = tensors[order[k]];
        if (k > 0 && name == tensors[order[k - 1]].first)
            throw std::invalid_argument("save_safetensors: tensor name \"" + name + "\" appears twice");
        if (name == "__metadata__")
            throw std::invalid_argument("save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
        if (!t.defined()) throw std::invalid_argument("save_safetensors: tensor \"" + name + "\" is undefined");
    }

    Json header = Json::object();
    if (!metadata.empty()) {
        Json meta = Json::object();
        for (const auto& [key, value] : metadata) meta.set(key, value);
        header.set("__metadata__", std::move(meta));
    }
    uint64_t offset = 0;
    for (size_t k : order) {
        const auto& [name, t] = tensors[k];
        Json shape = Json::array();
        for (int64_t d : t.shape()) shape.push_back(d);
        const uint64_t bytes = 4 * static_cast<uint64_t>(t.numel());
        Json entry = Json::object();
        entry.set("dtype", "F32").set("shape", std::move(shape));
        entry.set("data_offsets", Json::array({Json(offset), Json(offset + bytes)}));
        header.set(name, std::move(entry));
        offset += bytes;
    }

    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N becomes a multiple of 8

    std::string out;
    out.reserve(8 + text.size() + offset);
    put_le(out, text.size(), 8);
    out += text;
    for (size_t k : order) {
        const Tensor& t = tensors[k].second;
        const real* values = t.data();
        for (int64_t i = 0; i < t.numel(); ++i) {
            const float f = static_cast<float>(values[i]);  // the double build narrows to F32
            uint32_t bits;
            std::memcpy(&bits, &f, sizeof bits);
            put_le(out, bits, 4);
        }
    }
    return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    write_file_atomic(path, serialize_safetensors(tensors, metadata), "save_safetensors");
}

// ---- reading ---------------------------------------------------------------

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source) {
    HeaderReader reader(source);
    if (bytes.size() < 8)
        reader.fail("the file is " + std::to_string(bytes.size()) +
                    " bytes long, too short for the 8-byte header length (not a safetensors file?)");
    const uint64_t header_bytes = get_le(bytes.data(), 8);
    if (header_bytes > kMaxHeaderBytes)
        reader.fail("header length " + std::to_string(header_bytes) + " is absurd (more than " +
                    std::to_string(kMaxHeaderBytes) + " bytes; not a safetensors file?)");
    if (header_bytes > bytes.size() - 8)
        reader.fail("header length " + std::to_string(header_bytes) + " runs past the end of the file (" +
                    std::to_string(bytes.size()) + " bytes; truncated?)");

    Json header;
    try {
        header = parse_json(bytes.substr(8, header_bytes));
    } catch (const JsonParseError& e) {
        reader.fail(std::string("the header is not valid JSON: ") + e.what() + " (the header starts at byte 8)");
    }
    if (!header.is_object()) reader.fail("the header must be a JSON object, got " + header.dump());

    SafetensorsFile file;
    file.path = source;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.as_object()) {
        if (name == "__metadata__") file.metadata = reader.metadata(value);
        else entries.push_back(reader.entry(name, value));
    }
    std::vector<const Entry*> pointers;
    for (const Entry& e : entries) pointers.push_back(&e);
    const std::string_view data = bytes.substr(8 + header_bytes);
    reader.check_layout(pointers, data.size());

    for (const Entry& e : entries) {
        Tensor t = Tensor::empty(Shape(e.dims));
        decode(t.data(), data.data() + e.begin, t.numel(), e.dtype->name);
        file.tensors.emplace_back(e.name, std::move(t));
    }
    return file;
}

SafetensorsFile load_safetensors(const std::string& path) {
    const std::string prefix = "load_safetensors: '" + path + "': ";
    // O_NONBLOCK: opening a FIFO (a named pipe, given by mistake) would wait
    // for a writer forever; for a regular file it changes nothing.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw std::runtime_error(prefix + "cannot open: " + std::strerror(errno));
    std::string bytes;
    struct stat st {};
    int err = ::fstat(fd, &st) == 0 ? 0 : errno;
    if (err == 0 && !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error(prefix + "not a regular file");
    }
    if (err == 0) {
        bytes.resize(static_cast<size_t>(st.st_size));
        size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) err = errno;
            if (n <= 0) break;
            got += static_cast<size_t>(n);
        }
        bytes.resize(got);  // a file that shrank meanwhile is parsed (and rejected) as it is
    }
    ::close(fd);
    if (err != 0) throw std::runtime_error(prefix + "reading failed: " + std::strerror(err));
    return parse_safetensors(bytes, path);
}

}  // namespace attn
