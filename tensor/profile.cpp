#include "tensor/profile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>

namespace attn {

using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

// What one profiler has recorded: a row per name, and the scopes open now.
struct ProfileState {
    struct Stats {
        int64_t calls[2] = {0, 0};  // [0] forward, [1] backward
        double self_s[2] = {0, 0};
        double total_s = 0;
        double flops = 0;
    };
    struct Open {
        const char* name;
        double flops;
        Clock::time_point start;
        double inner_s;  // total time of the scopes opened inside this one
    };
    std::map<std::string, Stats, std::less<>> by_name;
    std::vector<Open> open;
    double in_scopes_s = 0;  // total time of the outermost scopes
    Clock::time_point started = Clock::now();
    Clock::time_point stopped{};
    bool running = true;
};

namespace profile_detail {
thread_local ProfileState* t_state = nullptr;
}  // namespace profile_detail

using profile_detail::t_state;

namespace {
thread_local bool t_backward = false;
}  // namespace

void ProfileScope::open(const char* name, double flops) {
    t_state->open.push_back({name, flops, Clock::now(), 0.0});
    open_ = true;
}

void ProfileScope::close() {
    ProfileState* s = t_state;
    // The profiler stopped while this scope was open: nothing to close.
    if (s == nullptr || s->open.empty()) return;
    const ProfileState::Open o = s->open.back();
    s->open.pop_back();
    const double total = seconds(Clock::now() - o.start);
    auto it = s->by_name.find(std::string_view(o.name));
    if (it == s->by_name.end()) it = s->by_name.emplace(o.name, ProfileState::Stats{}).first;
    ProfileState::Stats& st = it->second;
    const int phase = t_backward ? 1 : 0;
    st.calls[phase] += 1;
    st.self_s[phase] += total - o.inner_s;
    st.total_s += total;
    st.flops += o.flops;
    if (s->open.empty())
        s->in_scopes_s += total;
    else
        s->open.back().inner_s += total;
}

ProfileBackwardPhase::ProfileBackwardPhase() : previous_(t_backward) { t_backward = true; }
ProfileBackwardPhase::~ProfileBackwardPhase() { t_backward = previous_; }

Profiler::Profiler() : state_(new ProfileState), previous_(t_state) { t_state = state_; }

Profiler::~Profiler() {
    stop();
    delete state_;
}

void Profiler::stop() {
    if (stopped_) return;
    stopped_ = true;
    state_->stopped = Clock::now();
    state_->running = false;
    if (t_state == state_) t_state = previous_;
}

ProfileSummary Profiler::summary() const {
    const ProfileState& s = *state_;
    ProfileSummary out;
    out.elapsed_s = seconds((s.running ? Clock::now() : s.stopped) - s.started);
    out.outside_s = std::max(0.0, out.elapsed_s - s.in_scopes_s);
    for (const auto& [name, st] : s.by_name) {
        ProfileRow r;
        r.name = name;
        r.forward_calls = st.calls[0];
        r.backward_calls = st.calls[1];
        r.forward_self_s = st.self_s[0];
        r.backward_self_s = st.self_s[1];
        r.total_s = st.total_s;
        r.flops = st.flops;
        if (name == "gemm") {
            out.gemm_s = st.total_s;
            out.gemm_flops = st.flops;
        }
        if (name == "step") {
            out.steps = st.calls[0] + st.calls[1];
            out.step_s = st.total_s;
        }
        out.rows.push_back(std::move(r));
    }
    std::stable_sort(out.rows.begin(), out.rows.end(),
                     [](const ProfileRow& a, const ProfileRow& b) { return a.self_s() > b.self_s(); });
    return out;
}

std::string Profiler::table() const { return profile_table(summary()); }

namespace {
std::string format(const char* fmt, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}
}  // namespace

std::string profile_table(const ProfileSummary& s) {
    const double ms = 1e3;
    const double whole = s.elapsed_s > 0 ? s.elapsed_s : 1;
    std::string out = format("profile: %.3f s recorded", s.elapsed_s);
    if (s.steps > 0) out += format(", %lld steps of %.2f ms", static_cast<long long>(s.steps), s.step_s / s.steps * ms);
    out += format("; inside GEMM %.1f %%", 100 * s.gemm_s / whole);
    if (s.gemm_s > 0) out += format(" (%.1f GFLOP/s)", s.gemm_flops / s.gemm_s / 1e9);
    out += format(", outside every scope %.1f %%\n", 100 * s.outside_s / whole);
    out += format("%-28s %9s %11s %9s %11s %10s %6s %10s %8s %8s\n", "name", "fwd calls", "fwd self ms", "bwd calls",
                  "bwd self ms", "self ms", "self%", "total ms", "GFLOP", "GFLOP/s");
    for (const ProfileRow& r : s.rows) {
        out += format("%-28.28s %9lld %11.2f %9lld %11.2f %10.2f %6.1f %10.2f", r.name.c_str(),
                      static_cast<long long>(r.forward_calls), r.forward_self_s * ms,
                      static_cast<long long>(r.backward_calls), r.backward_self_s * ms, r.self_s() * ms,
                      100 * r.self_s() / whole, r.total_s * ms);
        if (r.flops > 0)
            out += format(" %8.2f %8.1f\n", r.flops / 1e9, r.total_s > 0 ? r.flops / r.total_s / 1e9 : 0.0);
        else
            out += "\n";
    }
    out += format("%-28s %9s %11s %9s %11s %10.2f %6.1f\n", "(outside every scope)", "", "", "", "", s.outside_s * ms,
                  100 * s.outside_s / whole);
    return out;
}

namespace {
// ATTN_PROFILE=1: a profiler on the thread that starts the program (the one
// that runs static initialisation: main's), its table on stderr at exit.
struct ProfileFromEnvironment {
    std::unique_ptr<Profiler> profiler;
    ProfileFromEnvironment() {
        const char* v = std::getenv("ATTN_PROFILE");
        if (v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0)
            profiler = std::make_unique<Profiler>();
    }
    ~ProfileFromEnvironment() {
        if (!profiler) return;
        profiler->stop();
        std::fputs(profiler->table().c_str(), stderr);
    }
};
const ProfileFromEnvironment profile_from_environment;
}  // namespace

}  // namespace attn
