// io/safetensors: exact bytes, bit-exact round trips, every corruption
// rejected with a message naming the file, and saves that fail cleanly.
#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.hpp"
#include "io/safetensors.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

void write_raw(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
}

// The 8-byte little-endian length followed by the header text.
std::string le64(uint64_t v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
}

// A file made by hand: header JSON (not padded) and data bytes.
std::string make_file(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

uint32_t bits_of(real v) {
    float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

Tensor from_bits(const std::vector<uint32_t>& bits, const Shape& shape) {
    Tensor t = Tensor::empty(shape);
    for (size_t i = 0; i < bits.size(); ++i) {
        float f;
        std::memcpy(&f, &bits[i], 4);
        t[static_cast<int64_t>(i)] = f;
    }
    return t;
}

// parse_safetensors must throw a runtime_error naming the source and `problem`.
void check_rejected(const std::string& bytes, const std::string& problem) {
    CAPTURE(problem);
    bool threw = false;
    try {
        parse_safetensors(bytes, "bad.safetensors");
    } catch (const std::runtime_error& e) {
        threw = true;
        const std::string what = e.what();
        CHECK_MESSAGE(what.rfind("load_safetensors: 'bad.safetensors': ", 0) == 0, what);
        CHECK_MESSAGE(what.find(problem) != std::string::npos, what);
    }
    CHECK(threw);
}

const std::string kGood = R"("dtype":"F32","shape":[2],"data_offsets":)";

}  // namespace

TEST_CASE("safetensors: the bytes match the specification exactly") {
    // b = [1, 2] and a = 3 (a scalar), with metadata. Sorted by name: a, then b.
    const std::string bytes = serialize_safetensors(
        {{"b", Tensor::from({1, 2})}, {"a", Tensor::scalar(3)}}, {{"format", "pt"}});
    std::string header = R"({"__metadata__":{"format":"pt"},)"
                         R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    REQUIRE(header.size() == 138);
    header += std::string(6, ' ');  // padded to 144 bytes: 8 + 144 is a multiple of 8
    const std::string data("\x00\x00\x40\x40"   // 3.0f = 0x40400000, little-endian
                           "\x00\x00\x80\x3f"   // 1.0f = 0x3f800000
                           "\x00\x00\x00\x40",  // 2.0f = 0x40000000
                           12);
    const std::string expected = std::string("\x90\0\0\0\0\0\0\0", 8) + header + data;
    CHECK(bytes == expected);
    CHECK((bytes.size() - data.size()) % 8 == 0);

    // Without metadata there is no __metadata__ key at all.
    const std::string plain = serialize_safetensors({{"w", Tensor::from({5})}});
    CHECK(plain.substr(8, plain.size() - 12) == R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}  )");
}

TEST_CASE("safetensors: a round trip through a file is bit-exact") {
    TempDir dir("safetensors");
    const std::string path = dir / "model.safetensors";
    // NaN with a payload, negative NaN, a signalling NaN, ±inf, -0, the
    // smallest subnormal, the largest float, and ordinary numbers.
    const std::vector<uint32_t> special = {0x7fc00001, 0xffc00000, 0x7f800001, 0x7f800000, 0xff800000,
                                           0x80000000, 0x00000001, 0x7f7fffff, 0x3f800000, 0xc0490fdb};
    Generator gen(7);
    const NamedTensors tensors = {
        {"special", from_bits(special, Shape{2, 5})},
        {"encoder.layers.0.weight", Tensor::normal(Shape{3, 4, 5}, 0, 1, gen)},
        {"scalar", Tensor::scalar(-1.5f)},
        {"empty", Tensor::zeros(Shape{0})},
        {"empty2d", Tensor::zeros(Shape{3, 0})},
        {"rank8", Tensor::ones(Shape{1, 2, 1, 2, 1, 2, 1, 2})},
    };
    const std::map<std::string, std::string> metadata = {{"epoch", "3"}, {"note", "quote \" and \\ and \n"}};
    save_safetensors(path, tensors, metadata);
    CHECK(files_in(dir.path) == std::vector<std::string>{"model.safetensors"});  // no temporary left

    const SafetensorsFile file = load_safetensors(path);
    CHECK(file.path == path);
    CHECK(file.metadata == metadata);
    REQUIRE(file.tensors.size() == tensors.size());
    // The header lists the tensors sorted by name.
    std::vector<std::string> names;
    for (const auto& [name, t] : file.tensors) names.push_back(name);
    CHECK(names == std::vector<std::string>{"empty", "empty2d", "encoder.layers.0.weight", "rank8", "scalar",
                                            "special"});
    for (const auto& named : tensors) {
        CAPTURE(named.first);
        const Tensor& original = named.second;
        const Tensor& loaded = file.at(named.first);
        CHECK(loaded.shape() == original.shape());
        for (int64_t i = 0; i < original.numel(); ++i) CHECK(bits_of(loaded[i]) == bits_of(original[i]));
    }
    CHECK(file.contains("scalar"));
    CHECK(!file.contains("missing"));
    CHECK_THROWS_WITH_AS(file.at("missing"), doctest::Contains("has no tensor \"missing\" (it has: empty, empty2d"),
                         std::out_of_range);

    // Saving again replaces the file; an empty checkpoint is valid too.
    save_safetensors(path, {});
    CHECK(read_file(path) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
    CHECK(load_safetensors(path).tensors.empty());
}

TEST_CASE("safetensors: other float dtypes are converted on reading") {
    // F16 1.5 = 0x3e00, -2 = 0xc000, 2^-24 (subnormal) = 0x0001, inf = 0x7c00;
    // BF16 3.0 = 0x4040; F64 0.1.
    const std::string header = R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},)"
                               R"("d":{"dtype":"F64","shape":[1],"data_offsets":[10,18]}})";
    double tenth = 0.1;
    std::string d(8, '\0');
    std::memcpy(d.data(), &tenth, 8);  // the test host is little-endian (x86-64, arm64)
    const std::string data = std::string("\x00\x3e\x00\xc0\x01\x00\x00\x7c", 8) + std::string("\x40\x40", 2) + d;
    const SafetensorsFile f = parse_safetensors(make_file(header, data), "mixed");
    CHECK(f.at("h")[0] == 1.5f);
    CHECK(f.at("h")[1] == -2.0f);
    CHECK(f.at("h")[2] == std::ldexp(1.0f, -24));
    CHECK(std::isinf(f.at("h")[3]));
    CHECK(f.at("b")[0] == 3.0f);
    CHECK(f.at("d")[0] == static_cast<real>(0.1));
    CHECK(f.tensors[0].first == "h");  // header order is kept
}

TEST_CASE("safetensors: every truncation and every byte flip is rejected or harmless, never a crash") {
    Generator gen(3);
    const std::string good = serialize_safetensors(
        {{"w", Tensor::normal(Shape{3, 2}, 0, 1, gen)}, {"b", Tensor::from({1, 2, 3})}}, {{"k", "v"}});
    REQUIRE_NOTHROW(parse_safetensors(good, "good"));
    for (size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        CHECK_THROWS_AS(parse_safetensors(good.substr(0, n), "cut"), std::runtime_error);
    }
    check_rejected(good.substr(0, 5), "the file is 5 bytes long, too short for the 8-byte header length");
    check_rejected(good.substr(0, 40), "runs past the end of the file (40 bytes");
    check_rejected(good.substr(0, good.size() - 1), "reach past the end of the data");
    // Any byte flipped anywhere: an error or (in the data) other numbers.
    for (size_t i = 0; i < good.size(); ++i) {
        for (unsigned char x : {0x01, 0x20, 0x80, 0xff}) {
            std::string bad = good;
            bad[i] = static_cast<char>(bad[i] ^ x);
            try {
                parse_safetensors(bad, "flipped");
            } catch (const std::runtime_error&) {
            }
        }
    }
    // Appending bytes leaves part of the data uncovered.
    check_rejected(good + "xyz", "at the end of the data are not covered by any tensor");
}

TEST_CASE("safetensors: a corrupted header length is rejected") {
    const std::string good = serialize_safetensors({{"w", Tensor::from({1, 2})}});
    const std::string rest = good.substr(8);
    check_rejected(le64(uint64_t(1) << 63) + rest, "header length 9223372036854775808 is absurd");
    check_rejected(le64(200'000'000) + rest, "is absurd (more than 100000000 bytes");
    check_rejected(le64(rest.size() + 1) + rest, "runs past the end of the file");
    check_rejected(le64(0) + rest, "the header is not valid JSON: json: at byte 0: expected a JSON value");
    check_rejected(le64(20) + rest, "the header is not valid JSON: json: at byte 20: expected");
}

TEST_CASE("safetensors: every malformed header is rejected with a message naming the problem") {
    const std::string d8(8, '\0');
    struct Case {
        std::string header, data, problem;
    };
    const Case cases[] = {
        {"[]", "", "the header must be a JSON object, got []"},
        {"{\"w\":{" + kGood + "[0,8]}", d8, "the header is not valid JSON: json: at byte 53: expected ',' or '}'"},
        {R"({"w":5})", "", "tensor \"w\": expected an object with dtype, shape and data_offsets, got 5"},
        {R"({"w":{"shape":[2],"data_offsets":[0,8]}})", d8, "tensor \"w\": missing \"dtype\""},
        {R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", d8, "tensor \"w\": missing \"shape\""},
        {R"({"w":{"dtype":"F32","shape":[2]}})", d8, "tensor \"w\": missing \"data_offsets\""},
        {"{\"w\":{" + kGood + "[0,8],\"extra\":1}}", d8, "tensor \"w\": unexpected field \"extra\""},
        {R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", d8, "tensor \"w\": unknown dtype \"F33\""},
        {R"({"w":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", d8, "dtype must be a string, got 7"},
        {R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", d8,
         "dtype I64 is not supported (this reader reads F32, F64, F16, BF16)"},
        {R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", d8, "shape must be an array, got 2"},
        {R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8,
         "shape[0] must be a non-negative integer, got -2"},
        {R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", d8,
         "shape[0] must be a non-negative integer, got 2.5"},
        {R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", d8,
         "shape has 9 dimensions, more than the 8 a Tensor supports"},
        {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", d8,
         "shape [4294967296, 4294967296] is too large"},
        {"{\"w\":{" + kGood + "[0]}}", d8, "data_offsets must be an array [begin, end], got [0]"},
        {"{\"w\":{" + kGood + "\"0,8\"}}", d8, "data_offsets must be an array [begin, end]"},
        {"{\"w\":{" + kGood + "[0,-8]}}", d8, "data_offsets[1] must be a non-negative integer, got -8"},
        {"{\"w\":{" + kGood + "[8,0]}}", d8, "data_offsets [8, 0] end before they begin"},
        {"{\"w\":{" + kGood + "[0,12]}}", std::string(12, '\0'),
         "data_offsets [0, 12] hold 12 bytes, but F32 with shape [2] needs 8"},
        {"{\"w\":{" + kGood + "[8,16]}}", d8, "data_offsets [8, 16] reach past the end of the data (8 bytes)"},
        {"{\"w\":{" + kGood + "[4,12]}}", std::string(12, '\0'),
         "bytes 0 to 4 of the data are not covered by any tensor (a hole before \"w\")"},
        {"{\"w\":{" + kGood + "[0,8]}}", std::string(10, '\0'),
         "bytes 8 to 10 at the end of the data are not covered by any tensor"},
        {"{\"a\":{" + kGood + "[0,8]},\"b\":{" + kGood + "[4,12]}}", std::string(12, '\0'),
         "tensor \"b\" (bytes 4 to 12) overlaps tensor \"a\" (bytes 0 to 8)"},
        {"{\"a\":{" + kGood + "[0,8]},\"b\":{" + kGood + "[0,8]}}", d8, "overlaps tensor"},
        {"{\"a\":{" + kGood + "[0,8]},\"a\":{" + kGood + "[8,16]}}", d8 + d8, "duplicate key \"a\""},
        {R"({"__metadata__":[1]})", "", "__metadata__ must be an object of strings, got [1]"},
        {R"({"__metadata__":{"epoch":3}})", "", "__metadata__ \"epoch\" must be a string, got 3"},
        {"{\"w\":{\"dtype\":\"F32\xff\"}}", "", "invalid UTF-8 byte in a string"},
    };
    for (const Case& c : cases) check_rejected(make_file(c.header, c.data), c.problem);

    // The same checks pass for a well-formed hand-made file, in any order.
    const std::string two = "{\"b\":{" + kGood + "[8,16]},\"a\":{" + kGood + "[0,8]}}";
    const SafetensorsFile f = parse_safetensors(make_file(two, d8 + d8), "hand");
    CHECK(f.tensors[0].first == "b");
}

TEST_CASE("safetensors: load_safetensors names the file") {
    TempDir dir("safetensors");
    CHECK_THROWS_WITH(load_safetensors(dir / "missing.safetensors"),
                      ("load_safetensors: '" + (dir / "missing.safetensors") +
                       "': cannot open: No such file or directory")
                          .c_str());
    CHECK_THROWS_WITH(load_safetensors(dir.path), ("load_safetensors: '" + dir.path + "': not a regular file").c_str());
    write_raw(dir / "short", "abc");
    CHECK_THROWS_WITH(load_safetensors(dir / "short"), doctest::Contains("/short': the file is 3 bytes long"));
}

TEST_CASE("safetensors: a failed save leaves the old file intact and no temporary file") {
    TempDir dir("safetensors");
    const std::string path = dir / "ckpt.safetensors";
    save_safetensors(path, {{"w", Tensor::from({1, 2, 3})}});
    const std::string old_bytes = read_file(path);
    const NamedTensors new_tensors = {{"w", Tensor::from({4, 5})}};

    // Bad input: nothing is written.
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", Tensor::from({1})}, {"w", Tensor::from({2})}}),
                         "save_safetensors: tensor name \"w\" appears twice", std::invalid_argument);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"__metadata__", Tensor::from({1})}}),
                         doctest::Contains("is reserved"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"u", Tensor()}}), "save_safetensors: tensor \"u\" is undefined",
                         std::invalid_argument);

    // The directory does not exist.
    CHECK_THROWS_WITH_AS(save_safetensors(dir / "no/such/dir/x.safetensors", new_tensors),
                         doctest::Contains("cannot create the temporary file"), std::runtime_error);

    // The temporary file cannot be created (its name is taken by a directory).
    const std::string tmp_name = path + ".tmp." + std::to_string(::getpid());
    std::filesystem::create_directory(tmp_name);
    CHECK_THROWS_WITH_AS(save_safetensors(path, new_tensors), doctest::Contains("cannot create the temporary file"),
                         std::runtime_error);
    std::filesystem::remove(tmp_name);

    // The target is a directory: refused before anything is written (its
    // rename once failed only after the data was; io/atomic_file.hpp), and no
    // temporary file is left.
    const std::string dir_target = dir / "is_a_dir";
    std::filesystem::create_directories(dir_target + "/inside");
    CHECK_THROWS_WITH_AS(save_safetensors(dir_target, new_tensors),
                         ("save_safetensors: cannot write '" + dir_target +
                          "': is a directory, not a regular file; give a file path").c_str(),
                         std::runtime_error);

    // A directory we may not write to (meaningless for root, who may).
    if (::geteuid() != 0) {
        const TempDir other("safetensors");
        const std::string locked = other / "locked";
        std::filesystem::create_directory(locked);
        save_safetensors(locked + "/c.safetensors", new_tensors);
        ::chmod(locked.c_str(), 0555);
        CHECK_THROWS_AS(save_safetensors(locked + "/c.safetensors", {{"w", Tensor::from({9})}}), std::runtime_error);
        ::chmod(locked.c_str(), 0755);
        CHECK(load_safetensors(locked + "/c.safetensors").at("w").numel() == 2);
        CHECK(files_in(locked) == std::vector<std::string>{"c.safetensors"});
    }

    CHECK(read_file(path) == old_bytes);
    CHECK(files_in(dir.path) == std::vector<std::string>{"ckpt.safetensors", "is_a_dir"});

    // And a successful save replaces it.
    save_safetensors(path, new_tensors);
    CHECK(load_safetensors(path).at("w").numel() == 2);
}

// `kill -9` during a save leaves `path.tmp.<pid>` behind, as large as the
// checkpoint (12 of them after 20 kills). The next save of the same path
// removes those whose process is gone, and nothing else.
TEST_CASE("safetensors: a save removes the temporary files of saves that were killed") {
    TempDir dir("safetensors");
    const std::string path = dir / "last.safetensors";
    // A pid that certainly belongs to no process: a child that has exited and been reaped.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    const std::string dead = std::to_string(child), alive = std::to_string(::getppid());
    for (const std::string& name : {path + ".tmp." + dead, path + ".tmp." + alive, path + ".tmp.x1",
                                    dir / "best.safetensors.tmp." + dead})
        std::ofstream(name) << "partial";

    save_safetensors(path, {{"w", Tensor::from({1, 2})}});
    CHECK(files_in(dir.path) == std::vector<std::string>{"best.safetensors.tmp." + dead, "last.safetensors",
                                                         "last.safetensors.tmp." + alive,
                                                         "last.safetensors.tmp.x1"});
}

// --predict --checkpoint on a named pipe once waited in open() for a writer
// that never came. The call runs in a child process with an alarm, so that
// a regression fails this test instead of hanging the suite.
TEST_CASE("load_safetensors: a FIFO is refused at once, not waited on") {
    attn::testing::TempDir dir("safetensors_fifo");
    const std::string fifo = dir / "model.safetensors";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::alarm(10);
        try {
            attn::load_safetensors(fifo);
        } catch (const std::runtime_error& e) {
            ::_exit(std::string(e.what()).find("not a regular file") != std::string::npos ? 0 : 2);
        } catch (...) {
            ::_exit(4);  // never back into the test runner (see test_training_loop.cpp)
        }
        ::_exit(3);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));  // not killed by the alarm
    CHECK(WEXITSTATUS(status) == 0);
}
