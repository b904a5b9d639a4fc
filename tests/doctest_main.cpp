// The test runner's main(). Both test binaries link it: build/tests/unit
// (float32) and build/tests/grad (the float64 build, for gradient checks).
// Run one test with -tc="name", one file's tests with -sf="*gemm*".
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
