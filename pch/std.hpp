// The library's precompiled header: the standard headers that most files of
// the library and the examples include, parsed once per build configuration
// instead of once in each of ~150 files (0.4–0.5 s of a file's compile time;
// figures in docs/performance.md, "Build time"). The Makefile passes it with
// -include; every file still includes what it uses, so it reads and compiles
// the same without it, and the libc++ build, whose headers include each other
// least, compiles without it to catch a missing include. Only the standard
// library goes here: the project's own headers change too often to freeze.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
