// The test runner's main(). Both test binaries link it: build/tests/unit
// (float32) and build/tests/grad (the float64 build, for gradient checks).
// Run one test with -tc="name", one file's tests with -sf="*gemm*".
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// Under LeakSanitizer (make test SAN=1): a child forked while the thread
// pool runs has no workers (fork copies one thread), so what each worker's
// start handed to it (std::thread's state, freed by the worker itself) is
// reachable from nothing when that child exits, and counted as a leak. The
// tests of tests/test_course_child.cpp fork so on purpose: that is not a leak
// of the library's. (A function LeakSanitizer looks for by name; a build
// without it never calls this.)
extern "C" const char* __lsan_default_suppressions() { return "leak:ThreadPool::resize\n"; }
