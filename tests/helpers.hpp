// Helpers the float unit tests share: a temporary directory, whole-file
// reads, and the path of a fixture in tests/fixtures/.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace attn::testing {

// A fresh directory /tmp/attn_<tag>_XXXXXX, removed with everything in it.
struct TempDir {
    std::string path;
    explicit TempDir(const std::string& tag) {
        std::string name = "/tmp/attn_" + tag + "_XXXXXX";
        REQUIRE(::mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& file) const { return path + "/" + file; }
};

// The bytes of a file ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// tests/fixtures/NAME from the repository root (where make test runs), else
// beside this header (a test binary run from elsewhere).
inline std::string fixture_path(const std::string& name) {
    const std::string from_root = "tests/fixtures/" + name;
    if (std::filesystem::exists(from_root)) return from_root;
    return (std::filesystem::path(__FILE__).parent_path() / "fixtures" / name).string();
}

}  // namespace attn::testing
