// The tests' precompiled header: doctest and the standard headers that most
// test files include, parsed once per build instead of once in each of ~80
// files (about a fifth of a test file's compile time). The Makefile passes it
// with -include; each test file still includes what it uses, so a file reads
// and compiles the same without it. Only doctest and the standard library go
// here: the project's own headers change too often to be worth freezing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
