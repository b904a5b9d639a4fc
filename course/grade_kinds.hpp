// The grade kinds: what a `grade:` line of course/exercises.txt names, one
// file each (course/grade_*.cpp). grade() in course/grade.cpp reads an
// exercise's grade lines and calls the kind's entry function here; the
// kind prints its checks' lines into the report (course/report.hpp).
// A new kind is a new file with its entry function declared here, a branch
// in grade() and, when its values can tell known mistakes apart, one in
// observe() (course/fingerprints.cpp). ("checks NAME", the grader's own
// checks, has no file here: course/checks.cpp holds them, grade_each runs
// them.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/checks.hpp"
#include "course/exercises.hpp"
#include "course/report.hpp"
#include "tests/grad/catalog.hpp"

namespace attn::course::grading {

// ---- "entries ID…" and "ops NAME…": course/grade_catalog.cpp ----------------------------------------
// A catalog entry's cases, each in a child of its own: its values against
// the entry's independent reference, its gradients against central
// differences, its masking and its declared properties (the catalog
// registry, tests/grad/catalog_checks.hpp).
void grade_case(Report& r, const testing::Entry& e, const testing::Case& c, uint64_t seed);
// One op's gradient cases of the op registry (tests/grad/registry.cpp),
// every element against central differences.
void grade_op(Report& r, const std::string& op, uint64_t seed);
// A case of a mechanism's fused kernel ("fused heads, …"): the library's fast
// twin, which the exercises switch off or leave aside; it does not run the
// student's code, so it is not theirs to be graded on.
bool runs_the_fast_twin(const testing::Case& c);

// ---- "engine": course/grade_engine.cpp --------------------------------------------------------------
// The backward engine's graphs, worked out by hand there: paths added, a
// node run once after every later one, a 100,000-node chain on a small
// stack, a freed graph refused. Graded with grade_each (course/report.hpp).
std::vector<Check> engine_checks();

// ---- "trainer EXACT FLAGS…": course/grade_trainer.cpp -----------------------------------------------
// The date translator (examples/seq2seq) trained on the code in the tree:
// its test set's exact match against the bar the exercise sets, and the
// report with its alignments. build_trainer() builds it first, once, outside
// every time limit (main, before any exercise is graded).
void build_trainer();
void grade_trainer(Report& r, const std::string& threshold, const std::string& flags);

// ---- "write-test N ID…" and "capstone SHARE": course/grade_written_tests.cpp -----------------------
// The student's own registry entries graded as tests: they must pass on the
// library as it is and on correct variants (course/wheats.txt), and fail on
// known mistakes built into the library (scripts/exercises.py mistakes):
// at least `need` of them (write-test), or that share (capstone).
void grade_written_tests(Report& r, const Exercise& ex, bool capstone, double need,
                         const std::vector<std::string>& ids, uint64_t seed);
// The entries course/capstone.txt names ("entry: ID" lines); none without
// the file. A line of the wrong form throws, naming it.
std::vector<std::string> capstone_ids();
// The same, saying what is missing or wrong as a failed check.
std::vector<std::string> capstone_entries(Report& r);
// --checks-only: the entries' checks alone (what each built mistake runs).
extern bool g_checks_only;

// ---- "gemm": course/grade_gemm.cpp ------------------------------------------------------------------
// The AVX2 GEMM's micro-kernel (tensor/gemm/gemm_avx2.cpp): its products
// against the triple loop on shapes that end inside and on the edges of its
// tile and cache blocks, against unreadable pages; then its speed, a share
// of this core's AVX2 peak (the exercise's `speed:` line).
void grade_gemm(Report& r, const Exercise& ex, uint64_t seed);
// For its fingerprint (course/fingerprints.cpp): how many shapes it is
// graded on, and the kernel's product on shape i, inputs drawn from `seed`
// (C's N columns row by row; none if it faulted).
size_t gemm_shape_count();
std::vector<float> gemm_kernel_product(size_t shape, uint64_t seed);

}  // namespace attn::course::grading
