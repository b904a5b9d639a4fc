# attn — build, test and benchmark.
#
#   make              build the library, tests, benchmarks and examples into build/
#   make test         build and run every test
#   make test SAN=1   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#                     (CXX=clang++: also the fuzzers' build, for make fuzz;
#                     STDLIB=libc++ too: libc++'s own checks as well, as CI runs it)
#   make check FILE=attention/scores.cpp   after editing one file: rebuild,
#                     then run only that file's checks (its catalog entries
#                     and the test files that include its header)
#   make debug        the library, tests and programs at -O0 -g in build/debug/
#   make bug SEED=n OUT=dir   a tree with one deliberate mistake to find
#                     (docs/course/find-the-bug.md); make bug-grade there
#   make check-arm    the tests built for aarch64, run under qemu-aarch64
#   make check-libcxx the tests built with clang and libc++ (macOS's library)
#   make run          train the example models on built-in data; out/report.html
#   make check-report click through out/report.html in headless Chromium
#   make check-torch  the PyTorch reference (python/) loads each trainer's
#                     model.safetensors strictly and reproduces its logits and
#                     attention (needs python3-torch, PYTHON=... picks the
#                     interpreter; not part of make test)
#   make install PREFIX=DIR   headers, libattn.a, attn.pc, attnConfig.cmake
#   make zoo          train the attention families on small tasks; out/report.html
#   make data         fetch the real data sets (Debian packages) into data/
#   make bench        the workloads of docs/WORKLOADS.md, as JSON lines
#                     (BENCH=W0,W1 runs some of them)
#   make docs-graphs  redraw the autograd graphs of docs/images/ (docs/tour.md)
#   make mutation-check   apply each deliberate mistake of tests/mutations/ to
#                     the library and check that the tests catch it
#   make fuzz         run each parser's libFuzzer target (fuzz/README.md) with
#                     clang for FUZZ_SECONDS (60) each (STDLIB=libc++: in
#                     the build of CXX=clang++ make test SAN=1 STDLIB=libc++)
#   make clean
#
# CXX, CXXFLAGS and LDFLAGS are yours: the project's own flags live in
# ATTN_CXXFLAGS and are combined with them. `CXX=clang++ make test` builds with
# clang into build/clang/. WERROR=1 turns warnings into errors (CI sets it).
# NATIVE=1 adds -march=native (never the default: the SIMD kernels are chosen at
# run time, so one binary runs on any x86-64).

# Every core by default: -jN on the command line still decides (-j1: one job).
NPROC := $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
# (Only in the make you typed: a make it starts, as make debug and make
# check-arm do, shares its jobs.)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(NPROC)
endif
# When this make started, for the time `make test` and `make run` report.
START_TIME := $(shell date +%s)
# V=1 prints every compiler command as run; by default a build says one short
# line a file ("  CXX  tensor/tensor.cpp (double)"): a passing build reads
# as progress, and a warning or an error stands out.
ifeq ($(V),1)
Q :=
quietly =
else
Q := @
quietly = @printf '  %-4s %s\n' '$1' '$2' && 
endif
elapsed = echo "$1: $$(( $$(date +%s) - $(START_TIME) )) s, build included"

CXX ?= g++
ifeq ($(origin CXX),default)
CXX := g++
endif

# The architecture the compiler builds for (not this machine's: a
# cross-compiler builds for another): x86_64, aarch64, arm64 (Apple's name).
ARCH := $(firstword $(subst -, ,$(shell $(CXX) -dumpmachine)))
CROSS := $(if $(filter $(ARCH),$(shell uname -m)),,$(ARCH))

# One build directory per configuration, so switching never mixes objects:
# build/ for g++, else build/ + the configuration's parts joined by '-', e.g.
# build/clang, build/san, build/clang-san, build/clang-libcxx,
# build/clang-libcxx-san, build/aarch64
# (a cross-compiler).
IS_CLANG := $(findstring clang,$(CXX))
# STDLIB=libc++: clang with LLVM's standard library (macOS's toolchain).
LIBCXX := $(if $(filter libc++,$(STDLIB)),libcxx)
# DEBUG=1 (make debug): everything at -O0 -g, in build/debug.
CONFIG := $(strip $(CROSS) $(if $(IS_CLANG),clang) $(LIBCXX) $(if $(SAN),san) $(if $(filter 1,$(DEBUG)),debug))
empty :=
B := build$(if $(CONFIG),/$(subst $(empty) $(empty),-,$(CONFIG)))

ATTN_CXXFLAGS := -std=c++20 -I. -Wall -Wextra -Wshadow -pthread -MMD -MP
# DEBUG_INFO: -g by default, so that every build can be stepped through.
# .ci/run's later stages, which nobody steps through, set -g1 (line tables: a
# sanitizer's backtrace still names the lines) or -g0; debug information is
# not code, and it is a fifth of an optimised file's compile time.
DEBUG_INFO ?= -g
ATTN_CXXFLAGS += $(DEBUG_INFO)
ifeq ($(DEBUG),1)
# make debug: everything at -O0, in build/debug/: every local has its value
# and `next` goes down the lines in order (README, "Two commands").
FAST_OPT := -O0
DOUBLE_OPT := -O0
TEST_OPT := -O0
else ifeq ($(SAN),1)
# The library at -O1, its hot loops being what the tests run most; the tests'
# own code and the double-precision library at -O0, which the sanitizers'
# instrumentation compiles about three times faster (the stage is mostly
# building; figures in docs/performance.md, "Build time").
ATTN_CXXFLAGS += -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ATTN_LDFLAGS := -fsanitize=address,undefined
FAST_OPT := -O1
DOUBLE_OPT := -O0
TEST_OPT := -O0
# With clang this build is also make fuzz's: the library and the programs
# carry libFuzzer's coverage counters (the tests ignore them), so that the
# fuzz targets link against the objects the tests ran, and make fuzz after
# CXX=clang++ make test SAN=1 compiles only fuzz/*.cpp.
ifneq ($(IS_CLANG),)
FAST_OPT += -fsanitize=fuzzer-no-link
endif
else
# The library and the programs: -O2. The tests' own code: -O0, the fastest
# to compile and the easiest to step through; its work is mostly calls into
# the -O2 library. The double-precision library, which serves only the
# gradient checks: -Og, which compiles almost as fast as -O0 (without the
# variable tracking below) and runs the finite differences 2.5 times faster
# (figures in docs/performance.md, "Build time").
FAST_OPT := -O2
DOUBLE_OPT := -Og
TEST_OPT := -O0
# GCC at -O2 vectorises a loop only when no scalar remainder is needed (its
# "very cheap" cost model): a plain loop over a run of runtime length stays
# scalar. "cheap" allows the remainder, as clang does at -O2; the library's
# element-wise kernels are written as such loops. (Results are unchanged:
# without -ffast-math no floating-point sum is reordered.)
# -fno-trapping-math lets GCC turn a selection between two floats (x > y ?
# x : y) into a vector mask, which it otherwise refuses because a comparison
# might raise a floating-point exception; clang assumes so by default, and
# the library never looks at the exception flags. (max_pool2d's 2×2 rows.)
ifeq ($(IS_CLANG),)
FAST_OPT += -fvect-cost-model=cheap -fno-trapping-math
endif
endif
# GCC's tracking of where each local lives through the optimiser (variable
# tracking assignments) takes a quarter of an optimised file's compile time;
# without it an optimised function's locals often read "optimized out", which
# is what make debug is for. (GCC only: clang has no such pass; -O0 has
# nothing to track.)
ifeq ($(IS_CLANG),)
FAST_OPT += -fno-var-tracking-assignments
DOUBLE_OPT += -fno-var-tracking-assignments
endif
ifeq ($(WERROR),1)
ATTN_CXXFLAGS += -Werror
endif
ifeq ($(NATIVE),1)
ATTN_CXXFLAGS += -march=native
endif
ATTN_LDFLAGS += -pthread
ifneq ($(STDLIB),)
ATTN_CXXFLAGS += -stdlib=$(STDLIB)
ATTN_LDFLAGS += -stdlib=$(STDLIB)
endif
# libc++ under the sanitizers (CI's clang stage): also libc++'s own checks,
# an index past a vector's size among them, which AddressSanitizer misses
# while the index is still inside the vector's capacity.
ifneq ($(LIBCXX),)
ifeq ($(SAN),1)
ATTN_CXXFLAGS += -D_LIBCPP_DEBUG=0
endif
endif

# SIMD kernels: each x86 file is compiled for its own instruction set (they
# are chosen at run time); NEON is part of every aarch64 CPU, so the ARM
# files need no flag.
AVX2_FLAGS := -mavx2 -mfma
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma
isa_flags = $(if $(findstring _avx512,$1),$(AVX512_FLAGS),$(if $(findstring _avx2,$1),$(AVX2_FLAGS)))

# doctest: its single header is kept in the tree (third_party/doctest/), and
# included as a system header: its own warnings are not ours (and the pragmas
# by which it silences them do not survive a precompiled header).
TEST_INCLUDE := -isystem third_party/doctest

# ---- sources ---------------------------------------------------------------
LIB_SRC := $(sort $(wildcard tensor/*.cpp tensor/gemm/*.cpp autograd/*.cpp nn/*.cpp io/*.cpp attention/*.cpp))
# The SIMD sources of the target's architecture only.
ifneq ($(ARCH),x86_64)
LIB_SRC := $(filter-out %_avx2.cpp %_avx512.cpp,$(LIB_SRC))
endif
ifeq ($(filter aarch64 arm64,$(ARCH)),)
LIB_SRC := $(filter-out %_neon.cpp,$(LIB_SRC))
endif
COMMON_SRC := $(sort $(wildcard examples/common/*.cpp))
# Each trainer's model and data (everything in its folder but main.cpp), as
# its own archive: the tests, benchmarks and fuzz targets link them too.
TASKS := seq2seq caption docclass
task_src = $(sort $(filter-out examples/$1/main.cpp,$(wildcard examples/$1/*.cpp)))
UNIT_SRC := $(sort $(wildcard tests/*.cpp))
GRAD_SRC := $(sort $(wildcard tests/grad/*.cpp))
BENCH_SRC := $(sort $(wildcard bench/*.cpp))
FUZZ_SRC := $(sort $(wildcard fuzz/*.cpp))
EXAMPLES := $(notdir $(patsubst %/main.cpp,%,$(wildcard examples/*/main.cpp)))

LIB_F := $(B)/lib/libattn.a
LIB_D := $(B)/lib/libattn_double.a
LIB_COMMON := $(B)/lib/libattn_common.a
TASK_LIBS := $(foreach t,$(TASKS),$(B)/lib/libtask_$t.a)
obj_f = $(patsubst %.cpp,$(B)/obj/float/%.o,$1)
obj_d = $(patsubst %.cpp,$(B)/obj/double/%.o,$1)

UNIT_BIN := $(B)/tests/unit
GRAD_BIN := $(B)/tests/grad
GRADE_BIN := $(B)/course/grade
BENCH_BINS := $(patsubst bench/%.cpp,$(B)/bench/%,$(BENCH_SRC))
EXAMPLE_BINS := $(addprefix $(B)/examples/,$(EXAMPLES))
FUZZ_BINS := $(patsubst fuzz/%.cpp,$(B)/fuzz/%,$(FUZZ_SRC))


.PHONY: grade grade-student grade-class grade-class-merge autograder classroom bench-class check-class progress exercise check-exercises fingerprints
.PHONY: all test tests-built debug check-debugging bug bug-grade check check-arm check-libcxx bench clean run check-report check-torch install data zoo docs-graphs mutation-check fuzz fuzz-run
all: $(LIB_F) $(BENCH_BINS) $(EXAMPLE_BINS) $(UNIT_BIN) $(GRAD_BIN) $(GRADE_BIN)

# ---- compile ---------------------------------------------------------------
# Every file but the SIMD kernels (whose instruction-set flags a precompiled
# header cannot share) starts from a precompiled header: pch/std.hpp for the
# library and the programs, pch/tests.hpp (doctest too) for the tests. A header
# is precompiled once per optimisation level, with the same flags as the files
# that use it; -Winvalid-pch says so if it ever cannot be used. The libc++
# build compiles the library and the programs without it, once (their float
# objects): there a missing #include shows. Its double-precision copy of the
# library, the same files again, keeps the header.
PCH_DIR := $(B)/obj/pch
STD_PCH_FAST := $(PCH_DIR)/fast/std.hpp
STD_PCH_DOUBLE := $(PCH_DIR)/double/std.hpp
TEST_PCH := $(PCH_DIR)/test/tests.hpp
FAST_STD_PCH := $(if $(LIBCXX),,1)
std_pch = $(if $3,$(if $(call isa_flags,$1),,-include $2 -Winvalid-pch))

$(B)/obj/float/%.o: %.cpp $(if $(FAST_STD_PCH),$(STD_PCH_FAST).gch)
	@mkdir -p $(dir $@)
	$(call quietly,CXX,$<)$(CXX) $(ATTN_CXXFLAGS) $(OPT) $(call isa_flags,$<) $(TEST_INCLUDE) $(CXXFLAGS) -c $< -o $@

$(B)/obj/double/%.o: %.cpp $(STD_PCH_DOUBLE).gch
	@mkdir -p $(dir $@)
	$(call quietly,CXX,$< (double))$(CXX) $(ATTN_CXXFLAGS) $(OPT) -DATTN_DOUBLE $(call isa_flags,$<) $(TEST_INCLUDE) $(CXXFLAGS) -c $< -o $@

OPT = $(FAST_OPT) $(call std_pch,$<,$(STD_PCH_FAST),$(FAST_STD_PCH))
$(B)/obj/double/%.o: OPT = $(DOUBLE_OPT) $(call std_pch,$<,$(STD_PCH_DOUBLE),1)

# A precompiled header, compiled with the flags of the files that use it (its
# copy beside the .gch is what -include names; the compiler takes the .gch).
define precompile
	@mkdir -p $(dir $@)
	$(Q)cp $< $(basename $@)
	$(call quietly,PCH,$@)$(CXX) $(ATTN_CXXFLAGS) $1 $(TEST_INCLUDE) $(CXXFLAGS) -x c++-header $< -o $@
endef
$(STD_PCH_FAST).gch: pch/std.hpp
	$(call precompile,$(FAST_OPT))
$(STD_PCH_DOUBLE).gch: pch/std.hpp
	$(call precompile,$(DOUBLE_OPT))
$(TEST_PCH).gch: pch/tests.hpp pch/std.hpp
	$(call precompile,$(TEST_OPT))

$(LIB_F): $(call obj_f,$(LIB_SRC))
	@mkdir -p $(dir $@)
	$(call quietly,AR,$@)rm -f $@ && ar rcs $@ $^
# The double library holds the float GEMM too (its float products, and the
# coursework grader's, which times a student's micro-kernel as make bench
# would: course/grade_gemm.cpp). Those files never see `real` (tensor/gemm/
# includes no header that does), so the float library's objects serve both:
# -DATTN_DOUBLE would compile the same code again (the AVX-512 kernel alone
# takes about a minute under the sanitizers).
GEMM_SRC := $(filter tensor/gemm/%,$(LIB_SRC))
LIB_D_OBJ := $(call obj_d,$(filter-out $(GEMM_SRC),$(LIB_SRC))) $(call obj_f,$(GEMM_SRC))
$(LIB_D): $(LIB_D_OBJ)
	@mkdir -p $(dir $@)
	$(call quietly,AR,$@)rm -f $@ && ar rcs $@ $^
$(LIB_COMMON): $(call obj_f,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	$(call quietly,AR,$@)rm -f $@ && ar rcs $@ $^

# ---- tests -------------------------------------------------------------------
# The test objects use pch/tests.hpp. One header serves both test builds:
# ATTN_DOUBLE does not appear in it.
TEST_OBJ := $(call obj_f,$(UNIT_SRC)) $(call obj_d,$(GRAD_SRC))
# (Not doctest_main.cpp: it includes doctest after a #define, to compile
# doctest's own code, which the header must not have been parsed without.)
TEST_MAIN_OBJ := $(call obj_f,tests/doctest_main.cpp)
$(filter-out $(TEST_MAIN_OBJ),$(TEST_OBJ)): $(TEST_PCH).gch
$(filter-out $(TEST_MAIN_OBJ),$(TEST_OBJ)): OPT = $(TEST_OPT) -include $(TEST_PCH) -Winvalid-pch
$(TEST_MAIN_OBJ): OPT = $(TEST_OPT)
# The fast exp, tanh and sigmoid are inline in their header, so their test
# (ten million values each) compiles them itself: at the library's level, the
# code it checks is the code the library runs, and it runs in 2 s, not 19.
FAST_MATH_TEST_OBJ := $(call obj_f,tests/test_fast_math.cpp)
$(FAST_MATH_TEST_OBJ): OPT = $(FAST_OPT)

# The test binaries link their libraries first, whole. An inline function
# that both a test file (-O0) and the library (-O2) compile, a std::string or
# std::vector member say, is kept from the first object on the line that
# defines it and dropped from the others: with the test files first, the
# optimised library called their -O0 copies wherever it did not inline
# them (drawing a 60,000-node graph, 6.3 s instead of 4.8; the whole unit
# suite 35.9 s instead of 29.8). The libraries' archives hold nothing a
# test binary does not use.
libraries_first = -Wl,--whole-archive $(filter %.a,$^) -Wl,--no-whole-archive $(filter-out %.a,$^)
# (course/child.cpp too: the grader's child runner, tested in tests/test_course_child.cpp;
# and the readers of its files, tests/test_course_files.cpp.)
COURSE_FILES_SRC := course/course_files.cpp course/exercises.cpp
$(UNIT_BIN): $(call obj_f,$(UNIT_SRC) course/child.cpp $(COURSE_FILES_SRC)) $(TASK_LIBS) $(LIB_COMMON) $(LIB_F)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $(libraries_first) -o $@ $(ATTN_LDFLAGS) $(LDFLAGS)
$(GRAD_BIN): $(TEST_MAIN_OBJ) $(call obj_d,$(GRAD_SRC)) $(LIB_D)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $(libraries_first) -o $@ $(ATTN_LDFLAGS) $(LDFLAGS)

# make grade: the coursework grader (course/grade.cpp), in the double build
# beside the gradient tests, whose files register the cases it runs.
# EX=id grades one exercise (default: those of course/assignment.txt, in a
# student's tree); SEED=n draws the inputs from seed n (hidden checks).
# course/hidden/: the instructor's cases, which a student's tree does not hold.
# (The grader's rooms: course/grade.cpp what it does, course/report.cpp the
# report, course/grade_*.cpp one grade kind each, course/fingerprints.cpp and
# course/progress.cpp; the rest are what they read and run.)
GRADE_SRC := course/grade.cpp course/report.cpp course/grade_catalog.cpp course/grade_engine.cpp \
	course/grade_trainer.cpp course/grade_written_tests.cpp course/grade_gemm.cpp course/fingerprints.cpp \
	course/progress.cpp course/exercises.cpp course/course_files.cpp course/checks.cpp course/child.cpp \
	course/guard.cpp course/probes.cpp
GRADE_OBJ := $(call obj_d,$(GRADE_SRC) $(wildcard course/hidden/*.cpp))
# The student's code checked for memory errors: the library's files that hold
# an exercise's cut code (the `cut:` lines of course/exercises.txt) are
# compiled for the grader a second time, under AddressSanitizer and
# UndefinedBehaviorSanitizer, with the standard library's own checks, and the
# allocator with them (it then marks the unused end of each tensor's block),
# so that a read or a write past a tensor's end, an index past a vector's or
# a signed overflow is a wrong answer said in words, never a lucky pass
# (course/grade.cpp reads the report). Only the grader links these objects;
# the tests link the plain ones. Not the GEMM's kernel, which is timed: its
# grading puts A, B and C against unreadable pages instead. Not where the
# build is sanitized already (SAN=1: every file is), nor in a cross build,
# nor with NO_MEMCHECK=1 (a compiler without AddressSanitizer): there the
# grader says that memory is unchecked.
CUT_SRC := $(sort $(filter tensor/%.cpp autograd/%.cpp nn/%.cpp attention/%.cpp,$(filter-out tensor/gemm/%,\
	$(shell sed -n 's/^cut: *\([^ |]*\) *|.*/\1/p' course/exercises.txt 2>/dev/null))))
ifeq ($(SAN)$(CROSS)$(NO_MEMCHECK),)
CHECKED_SRC := $(CUT_SRC) tensor/allocator.cpp
endif
MEMCHECK_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS
obj_c = $(patsubst %.cpp,$(B)/obj/checked/%.o,$1)
STD_PCH_CHECKED := $(PCH_DIR)/checked/std.hpp
$(STD_PCH_CHECKED).gch: pch/std.hpp
	$(call precompile,$(DOUBLE_OPT) $(MEMCHECK_FLAGS))
$(B)/obj/checked/%.o: %.cpp $(STD_PCH_CHECKED).gch
	@mkdir -p $(dir $@)
	$(call quietly,CXX,$< (memory-checked for the grader))$(CXX) $(ATTN_CXXFLAGS) $(DOUBLE_OPT) $(MEMCHECK_FLAGS) -include $(STD_PCH_CHECKED) -Winvalid-pch -DATTN_DOUBLE $(TEST_INCLUDE) $(CXXFLAGS) -c $< -o $@
# The GEMM's AVX2 kernel (exercise 4.1) for the grader: at the library's -O2
# and instruction set (it is timed) with UndefinedBehaviorSanitizer's bounds
# checks: the tile's registers are arrays, and an index past one (a loop that
# zeroes one accumulator row too many) is reported. Once the loops are
# unrolled every index is a constant, so a right kernel pays nothing.
ifneq ($(CHECKED_SRC),)
ifeq ($(ARCH),x86_64)
CHECKED_GEMM := tensor/gemm/gemm_avx2.cpp
$(call obj_c,$(CHECKED_GEMM)): $(CHECKED_GEMM)
	@mkdir -p $(dir $@)
	$(call quietly,CXX,$< (bounds-checked for the grader))$(CXX) $(ATTN_CXXFLAGS) $(FAST_OPT) $(AVX2_FLAGS) -fsanitize=bounds -fno-sanitize-recover=bounds $(TEST_INCLUDE) $(CXXFLAGS) -c $< -o $@
endif
endif
# The double library as the grader links it: the checked objects in place of the plain ones.
LIB_D_GRADE := $(B)/lib/libattn_double_grade.a
$(LIB_D_GRADE): $(filter-out $(call obj_d,$(CHECKED_SRC)) $(call obj_f,$(CHECKED_GEMM)),$(LIB_D_OBJ)) \
		$(call obj_c,$(CHECKED_SRC) $(CHECKED_GEMM))
	@mkdir -p $(dir $@)
	$(call quietly,AR,$@)rm -f $@ && ar rcs $@ $^
$(GRADE_BIN): $(GRADE_OBJ) $(call obj_d,$(GRAD_SRC)) $(if $(CHECKED_SRC),$(LIB_D_GRADE),$(LIB_D))
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $(libraries_first) -o $@ $(ATTN_LDFLAGS) $(if $(CHECKED_SRC),$(MEMCHECK_FLAGS)) $(LDFLAGS)
# One make grade, make progress, make grade-student or make grade-class at a time in a tree
# (two at once rebuilt the same build/lib/*.a under each other, and
# course/progress.txt): each takes GRADE_LOCK (scripts/grade-lock.sh, with
# flock(1)) before building anything, and runs again under it; a second is
# refused at once, naming the holder (GRADE_WAIT=s: it waits that long first).
GRADE_LOCK ?= build/grade.lock
ifeq ($(GRADE_LOCK_HELD),)
# (make grade progress: one after the other, not the second refused by the first.)
ifneq ($(filter-out 0 1,$(words $(filter grade grade-student grade-class check-class progress,$(MAKECMDGOALS)))),)
.NOTPARALLEL:
endif
grade grade-student grade-class check-class progress:
	@sh scripts/grade-lock.sh '$(subst ','\'',$(GRADE_LOCK))' '$(subst ','\'',make $(strip $(MAKECMDGOALS) $(-*-command-variables-*-)))' \
		$(MAKE) --no-print-directory GRADE_LOCK_HELD=1 $@
else
# An exercise not yet done is the grader's verdict, said in its last lines,
# not a failure of make: make grade then exits 0, without make's "Error 1"
# line under the verdict. STRICT=1 (for scripts) exits 1 when one is not done;
# a grader that could not grade (exit 2) fails either way.
grade: $(GRADE_BIN)
	@$(GRADE_BIN) $(EX) $(if $(SEED),--seed $(SEED)) $(if $(HIDDEN),--hidden); status=$$?; \
		$(call elapsed,make grade); if [ $$status -eq 1 ] && [ -z "$(STRICT)" ]; then status=0; fi; exit $$status
# make grade-student STUDENT=dir: a student's tree graded here, with the
# instructor's hidden cases: the bodies of the student's blocks of each
# exercise's cut code, spliced into a fresh copy of this tree that shares
# this tree's build (build/grade-student/), each exercise graded on its own,
# and a pass borne out by the judge (scripts/exercises.py: the student's
# values on fresh draws against this tree's solution's).
grade-student:
	@python3 scripts/exercises.py grade-student "$(STUDENT)" $(if $(SEED),--seed $(SEED)) $(EX)
# make grade-class SUBMISSIONS=dir OUT=dir [EX=id,...] [SEED=n] [ROSTER=file]
# [JOBS=n] [SHARD=k/n] [PLAN=n] [SANDBOX=none|user]: a class's submissions (folders, zips, tarballs)
# graded one exercise at a time, each grader run inside bubblewrap, into
# OUT/results/STUDENT.json and OUT/gradebook.csv (scripts/grade_class.py;
# docs/course/instructors.md). make check-class: a generated class of right,
# wrong, broken and hostile submissions graded, each verdict and each
# containment checked (scripts/check_class.py).
grade-class:
	@python3 scripts/grade_class.py "$(SUBMISSIONS)" "$(OUT)" $(if $(EX),--ex $(EX)) $(if $(SEED),--seed $(SEED)) \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(JOBS),--jobs $(JOBS)) $(if $(SANDBOX),--sandbox $(SANDBOX)) \
		$(if $(TIME_CAP),--time-cap $(TIME_CAP)) $(if $(SHARD),--shard $(SHARD)) $(if $(PLAN),--plan $(PLAN))
check-class:
	@python3 scripts/check_class.py
progress: $(GRADE_BIN)
	@$(GRADE_BIN) --progress
endif

# make grade-class-merge OUT=dir FROM="dir ...": the results of a class graded in
# shards (SHARD=k/n, or the scripts PLAN=n writes) gathered, the gradebook
# and the class page made from all of them.
grade-class-merge:
	@python3 scripts/grade_class.py "$(OUT)" --merge "$(FROM)"
# make autograder EX=id,... [SEED=n|per-student] [POINTS=p] [OUT=file.zip]: a
# Gradescope autograder (setup.sh, run_autograder, this tree); make classroom
# TREE=dir: GitHub Classroom's autograding workflow in a student's tree
# (scripts/autograder.py; docs/course/instructors.md).
autograder:
	@python3 scripts/autograder.py zip EX=$(EX) $(if $(SEED),--seed $(SEED)) $(if $(POINTS),--points $(POINTS)) \
		"$(or $(OUT),build/autograder.zip)"
classroom:
	@POINTS="$(POINTS)" python3 scripts/autograder.py classroom "$(TREE)"
# make bench-class [STUDENTS=30] [JOBS=2]: a generated class of right, wrong,
# broken and hostile submissions of three exercises graded end to end by make
# grade-class, timed (scripts/bench_class.py; a benchmark, not a test).
bench-class:
	@STUDENTS="$(STUDENTS)" JOBS="$(JOBS)" python3 scripts/bench_class.py

# make exercise: the exercises, one id per line first; make exercise EX=id
# OUT=dir: a student's tree with that exercise's code cut out (EX=all: every
# exercise). make check-exercises: every grader fails on its stub, passes the
# solution and names every known mistake; no line of an answer is left in a
# student's tree (CI runs it); and the graders against mistakes nobody wrote
# down: small changes made in each solution by scripts/mutants.py, a spread
# of 5 of each exercise's (MUTANTS=all: every one, about 35 minutes; MUTANTS=none:
# none), every one that computes anything else failed. make fingerprints: the
# known mistakes' values, into course/fingerprints.txt. (scripts/exercises.py; docs/course/.)
exercise:
	@if [ -n "$(EX)" ]; then python3 scripts/exercises.py tree "$(EX)" "$(OUT)"; \
		else python3 scripts/exercises.py list; fi
check-exercises:
	@python3 scripts/exercises.py check $(if $(MUTANTS),--mutants $(MUTANTS)) $(EX)
	@if [ -z "$(EX)" ]; then python3 scripts/bugs.py check && python3 scripts/bugs.py walk; fi

# make bug SEED=n OUT=dir: a student's tree with one deliberate mistake of
# tests/mutations/ in it, chosen by the seed (LAYER=tensor|autograd|nn|io|
# attention|examples: one of that layer); make bug alone: how many each layer
# has. make bug-grade, in that tree: every file as it was and make test
# passing. (scripts/bugs.py; docs/course/find-the-bug.md.)
bug:
	@if [ -n "$(SEED)" ]; then python3 scripts/bugs.py tree "$(SEED)" "$(OUT)" "$(LAYER)"; \
		else python3 scripts/bugs.py list "$(LAYER)"; fi
bug-grade:
	+@python3 scripts/bugs.py grade
fingerprints:
	@python3 scripts/exercises.py fingerprints $(EX)

# make debug: the library, the tests and the programs at -O0 -g, in
# build/debug/ (build/debug/examples/seq2seq, ...), to step through with gdb.
debug:
	@$(MAKE) --no-print-directory DEBUG=1 all

# make check-debugging: docs/course/debugging.md's gdb session replayed on
# the debug build of the date translator (scripts/replay-debugging.py): every
# line the page shows must be what gdb prints now. Then the page's printers
# (scripts/gdb/attn.py) on tests/gdb/printers.cpp's tensors: each must print
# what the tensor's own str() wrote.
check-debugging:
	@$(MAKE) --no-print-directory DEBUG=1 build/debug/examples/seq2seq build/debug/tests/gdb-printers
	@python3 scripts/replay-debugging.py --printers build/debug/tests/gdb-printers

$(B)/tests/gdb-printers: $(call obj_f,tests/gdb/printers.cpp) $(LIB_F)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $^ -o $@ $(ATTN_LDFLAGS) $(LDFLAGS)

# TEST_RUNNER: a command the test binaries run under (check-arm's emulator).
# make test builds the coursework grader too (without a warning, by each
# compiler CI runs), though it runs no test of its own; TEST_GRADER= leaves it
# out (check-arm: the grader is never run under the emulator, and its
# memory-checked objects are the costliest to cross-compile).
TEST_GRADER ?= $(GRADE_BIN)
# make tests-built: what make test runs, built and not run (make bug builds a
# student's tree with it, out of sight).
tests-built: $(UNIT_BIN) $(GRAD_BIN) $(TEST_GRADER)
test: tests-built
	@TEST_RUNNER="$(TEST_RUNNER)" TEST_EXCLUDE="$(TEST_EXCLUDE)" V="$(V)" sh scripts/run-tests.sh $(UNIT_BIN) $(GRAD_BIN); status=$$?; \
		$(call elapsed,make test); exit $$status

# make check FILE=attention/scores.cpp: after editing one file, rebuild the
# tests and run only that file's checks: the catalog entries it names and the
# test files that include its header (scripts/check-file.sh).
check: $(UNIT_BIN) $(GRAD_BIN)
	@sh scripts/check-file.sh $(B) "$(FILE)"; status=$$?; $(call elapsed,make check); exit $$status

# make check-arm: the tests cross-compiled for aarch64 (Debian's
# g++-aarch64-linux-gnu) into build/aarch64/, run under qemu-aarch64 (Debian's
# qemu-user). Correctness only: times under the emulator mean nothing.
ARM_CXX ?= aarch64-linux-gnu-g++
ARM_SYSROOT ?= /usr/aarch64-linux-gnu
# Left out under the emulator (TEST_EXCLUDE): two trainers learning a toy task
# and a layout's running time, the same C++ on every processor, whose ops and
# layers the other cases check on aarch64. The caption model's alone took
# 96 s of a 393 s run; without the three, 229 s (docs/performance.md, session 54).
ARM_EXCLUDE := caption model: a tiny model learns*,graph_svg: thousands of nodes*,seq2seq right-to-left: trained on reversed*
check-arm:
	@TEST_SHARDS=4 $(MAKE) --no-print-directory CXX=$(ARM_CXX) TEST_RUNNER="qemu-aarch64 -L $(ARM_SYSROOT)" \
		TEST_GRADER= TEST_EXCLUDE="$(ARM_EXCLUDE)" test

# make check-libcxx: clang with libc++ (the standard library of macOS), in
# build/clang-libcxx/ (Debian: libc++-dev and libc++abi-dev).
check-libcxx:
	@$(MAKE) --no-print-directory CXX=clang++ STDLIB=libc++ test

# ---- benchmarks and examples -------------------------------------------------
$(B)/bench/%: $(B)/obj/float/bench/%.o $(TASK_LIBS) $(LIB_COMMON) $(LIB_F)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $^ -o $@ $(ATTN_LDFLAGS) $(LDFLAGS) -ldl

bench: $(BENCH_BINS)
	@sh bench/run.sh "$(B)" "$(BENCH)"

.SECONDEXPANSION:
# Keep the example objects make would treat as intermediate (and delete).
# (Not .SECONDARY: with no targets: that makes every object intermediate, and
# an archive newer than its sources was then not rebuilt when a new source
# file's object was missing.)
.PRECIOUS: $(B)/obj/float/%.o $(B)/obj/double/%.o $(B)/obj/checked/%.o
$(B)/lib/libtask_%.a: $$(call obj_f,$$(call task_src,$$*))
	@mkdir -p $(dir $@)
	$(call quietly,AR,$@)rm -f $@ && ar rcs $@ $^
$(B)/examples/%: $$(call obj_f,$$(wildcard examples/%/*.cpp)) $(TASK_LIBS) $(LIB_COMMON) $(LIB_F)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $^ -o $@ $(ATTN_LDFLAGS) $(LDFLAGS)

# make run: trains each example on its built-in data (a minute or two each)
# and writes out/report.html. make data: the real data sets, into data/.
run: $(EXAMPLE_BINS)
	@sh scripts/run-examples.sh "$(B)"; status=$$?; $(call elapsed,make run); exit $$status

# make check-report: the page of make run in headless Chromium (Debian's
# chromium): every explorer clicked through, no JavaScript error allowed;
# screenshots in out/report-check/ (scripts/check-report.sh).
check-report:
	@sh scripts/check-report.sh out/report.html seq2seq,caption,caption-hard

# make check-torch: small models of the three trainers, each model.safetensors
# loaded into the PyTorch reference of python/ with strict=True, the logits and
# attention weights compared on fixed inputs (scripts/check-torch.sh).
check-torch: $(B)/examples/seq2seq $(B)/examples/caption $(B)/examples/docclass
	@sh scripts/check-torch.sh "$(B)"

# make install PREFIX=DIR: the library's headers (DIR/include/attn/, included
# as "attention/...", "nn/..." as in the repository), libattn.a, a pkg-config
# file and a CMake package (attn::attn); examples/template/ builds on them.
PREFIX ?= /usr/local
LIB_HEADER_DIRS := tensor tensor/gemm autograd nn io attention
install: $(LIB_F)
	@for d in $(LIB_HEADER_DIRS); do mkdir -p "$(PREFIX)/include/attn/$$d" && cp $$d/*.hpp "$(PREFIX)/include/attn/$$d/"; done
	@mkdir -p "$(PREFIX)/lib/pkgconfig" "$(PREFIX)/lib/cmake/attn"
	cp $(LIB_F) "$(PREFIX)/lib/libattn.a"
	cp packaging/attn.pc "$(PREFIX)/lib/pkgconfig/attn.pc"
	cp packaging/attnConfig.cmake packaging/attnConfigVersion.cmake "$(PREFIX)/lib/cmake/attn/"
	@echo "installed attn into $(PREFIX): build your program with examples/template/ (Makefile or CMakeLists.txt)"

# make zoo: the families of the attention catalog on tasks that need them
# (9 of its 15 groups have one).
zoo: $(B)/examples/zoo
	$(B)/examples/zoo --out out

data:
	@sh scripts/fetch-data.sh data

# make docs-graphs: the pictures of the autograd graph in docs/images/
# (examples/draw_graph/main.cpp), drawn by examples/common/graph_draw.hpp.
docs-graphs: $(B)/examples/draw_graph
	@mkdir -p docs/images
	$(B)/examples/draw_graph docs/images

# Builds in build/mutation/ and restores every file it mutates.
mutation-check:
	@python3 scripts/mutation-check.py

# ---- fuzzing (fuzz/README.md) ----------------------------------------------------
# make fuzz: every target of fuzz/ for FUZZ_SECONDS each (FUZZ=json,idx: some).
FUZZ_SECONDS ?= 60
# The targets are built in clang's sanitizer build (build/clang-san/), which
# make test SAN=1 with CXX=clang++ shares; with STDLIB=libc++ (as CI runs
# it), in build/clang-libcxx-san/, the build of CXX=clang++ make test SAN=1
# STDLIB=libc++.
fuzz:
	@$(MAKE) --no-print-directory CXX=clang++ SAN=1 fuzz-run
# libFuzzer's own runtime (Debian's clang) is built against libstdc++, so a
# target whose code uses libc++ links both; their names never meet (libc++'s
# live in std::__1).
comma := ,
FUZZ_LDFLAGS := -fsanitize=fuzzer $(if $(LIBCXX),-Wl$(comma)-l:libstdc++.so.6)
$(B)/fuzz/%: $(B)/obj/float/fuzz/%.o $(TASK_LIBS) $(LIB_COMMON) $(LIB_F)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $^ -o $@ $(ATTN_LDFLAGS) $(FUZZ_LDFLAGS) $(LDFLAGS)
# The targets of the grader's files (fuzz/course_*.cpp) need only their readers.
$(B)/fuzz/course_%: $(B)/obj/float/fuzz/course_%.o $(call obj_f,$(COURSE_FILES_SRC) io/atomic_file.cpp)
	@mkdir -p $(dir $@)
	$(call quietly,LD,$@)$(CXX) $(ATTN_CXXFLAGS) $(CXXFLAGS) $^ -o $@ $(ATTN_LDFLAGS) $(FUZZ_LDFLAGS) $(LDFLAGS)
fuzz-run: $(FUZZ_BINS)
	@sh scripts/fuzz.sh "$(B)" "$(FUZZ_SECONDS)" "$(FUZZ)"

clean:
	rm -rf build

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
