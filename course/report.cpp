// The report's helpers (course/report.hpp): a group of checks graded in a
// child process of its own, and the numbers as the report prints them.
#include "course/report.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "course/child.hpp"

namespace attn::course::grading {

void grade_apart(Report& r, const std::string& what, const std::function<void(Report&)>& grade_group, int seconds) {
    const ChildResult run = run_in_child(
        [&] {
            Report mine;
            grade_group(mine);
            std::cout.flush();
            return mine.counts();
        },
        seconds);
    std::istringstream in(run.payload);
    int checks = -1, wrong = -1;
    std::string outcomes;
    in >> checks >> wrong >> outcomes;
    const bool consistent = run.finished && checks >= 0 && wrong >= 0 && wrong <= checks &&
                            static_cast<int>(outcomes.size()) <= checks &&
                            outcomes.find_first_not_of("rw") == std::string::npos &&
                            std::count(outcomes.begin(), outcomes.end(), 'w') <= wrong;
    if (!consistent) {
        r.fail(what, run.finished ? "its checks' results did not come back whole" : crash_words(run));
        return;
    }
    r.checks += checks;
    r.wrong += wrong;
    r.outcomes += outcomes;
}

std::string sci(double x) {
    std::ostringstream os;
    os << std::scientific << std::setprecision(1) << x;
    return os.str();
}

void grade_each(Report& r, const std::vector<Check>& checks, int seconds) {
    for (const Check& c : checks) {
        const ChildResult run = run_in_child(c.check, seconds);
        if (!run.finished) r.fail(c.what, crash_words(run));
        else if (run.payload.empty()) r.right(c.what);
        else r.fail(c.what, run.payload);
    }
}

}  // namespace attn::course::grading
