// The tests' precompiled header: doctest and the standard headers of
// pch/std.hpp, parsed once per build instead of once in each of ~90 test
// files (about a fifth of a test file's compile time). The Makefile passes it
// with -include; each test file still includes what it uses, so a file reads
// and compiles the same without it. Only doctest and the standard library go
// here: the project's own headers change too often to be worth freezing.
#include <doctest/doctest.h>

#include "pch/std.hpp"
