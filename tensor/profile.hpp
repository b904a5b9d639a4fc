// The profiler: where the time of a forward pass, a backward pass and an
// update goes, op by op, and how much of it the matrix products take.
//
//     ATTN_PROFILE=1 build/examples/seq2seq --epochs 1      # a table at exit
//
// or, around any piece of a program,
//
//     Profiler profiler;                  // starts recording this thread
//     ... train a few steps ...
//     std::cout << profiler.table();      // per op, sorted by time
//
// What is recorded. Every autograd op opens a ProfileScope with its name when
// it computes its value (forward), and the backward engine opens one with the
// op's name around the op's backward function; the GEMM entry points open a
// scope "gemm" with the product's FLOPs (2·M·N·K), the optimizers one around
// their update, and a training loop may open "step" around each step. Scopes
// nest: a scope's *self* time is its time minus the time of the scopes opened
// inside it, so "matmul" holds the bookkeeping of the op and "gemm" the
// product itself, and the self times of all rows add up to the time recorded.
// The column "forward" holds what ran outside backward() (the optimizer's
// update too), "backward" what ran inside it.
//
// Only the thread that started the profiler records (a trainer's thread).
// Work the thread pool does for it inside a scope counts in that scope: a
// GEMM split over two threads is one "gemm" call, timed by the wall clock,
// and the products inside the fused attention kernel's parallel tiles count
// in that kernel's row, not in "gemm".
//
// Off, a scope costs one test of a thread-local pointer. On, it costs two
// clock readings and a map update, ~0.1 µs: a few percent of a step made of
// many small ops (docs/performance.md, "The profiler").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attn {

struct ProfileState;

namespace profile_detail {
// The profiler recording on this thread, or nullptr: the only thing a scope
// looks at when profiling is off.
extern thread_local ProfileState* t_state;
}  // namespace profile_detail

// One named stretch of work. Construct it at the top of the code it times;
// `flops` is the number of floating-point operations the work does (products
// only: the table shows GFLOP/s for rows that have them).
class ProfileScope {
public:
    explicit ProfileScope(const char* name, double flops = 0) {
        if (profile_detail::t_state != nullptr) open(name, flops);
    }
    ~ProfileScope() {
        if (open_) close();
    }
    ProfileScope(const ProfileScope&) = delete;
    ProfileScope& operator=(const ProfileScope&) = delete;

private:
    void open(const char* name, double flops);
    void close();
    bool open_ = false;
};

// Marks the backward pass: scopes opened while it lives count as backward.
class ProfileBackwardPhase {
public:
    ProfileBackwardPhase();
    ~ProfileBackwardPhase();
    ProfileBackwardPhase(const ProfileBackwardPhase&) = delete;
    ProfileBackwardPhase& operator=(const ProfileBackwardPhase&) = delete;

private:
    bool previous_ = false;
};

// Records nothing while it lives: parallel_for holds one, so that the scopes of
// work split over the pool (the tiles of the fused attention kernel, say)
// count in the scope around the split, on one thread or many alike.
class ProfilePause {
public:
    ProfilePause() : saved_(profile_detail::t_state) { profile_detail::t_state = nullptr; }
    ~ProfilePause() { profile_detail::t_state = saved_; }
    ProfilePause(const ProfilePause&) = delete;
    ProfilePause& operator=(const ProfilePause&) = delete;

private:
    ProfileState* saved_;
};

// One row of the table: one name.
struct ProfileRow {
    std::string name;
    int64_t forward_calls = 0, backward_calls = 0;
    double forward_self_s = 0, backward_self_s = 0;  // self time, seconds
    double total_s = 0;                              // with the scopes inside it
    double flops = 0;
    double self_s() const { return forward_self_s + backward_self_s; }
};

struct ProfileSummary {
    double elapsed_s = 0;      // wall time while the profiler recorded
    double gemm_s = 0;         // inside "gemm" scopes (their total time)
    double gemm_flops = 0;
    int64_t steps = 0;         // "step" scopes closed (0 if none)
    double step_s = 0;         // their total time
    double outside_s = 0;      // elapsed time in no scope at all
    std::vector<ProfileRow> rows;  // by self time, largest first
};

// Records the calling thread's scopes from construction to destruction (or
// stop()). Profilers nest: an inner one records alone while it lives.
class Profiler {
public:
    Profiler();
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    void stop();  // stops recording; the figures stay readable
    ProfileSummary summary() const;
    // The table, sorted by self time, with the share of the time inside GEMM.
    std::string table() const;

private:
    ProfileState* state_;
    ProfileState* previous_;
    bool stopped_ = false;
};

// The table of a summary (Profiler::table() is table_of(summary())).
std::string profile_table(const ProfileSummary& summary);

}  // namespace attn
