// The grade kinds "entries ID…" and "ops NAME…" (course/grade_kinds.hpp):
// the library's own checks, run on the student's code. A catalog entry's
// case is checked as the gradient tests check it (tests/grad/
// catalog_checks.hpp): its values against the entry's independent
// reference, every gradient element against central differences, its
// masking, its declared properties; an op's cases of the op registry
// (tests/grad/registry.cpp), every gradient element. Each case in a child
// process of its own (grade_apart): a crash ends that case alone.
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/grade_kinds.hpp"
#include "course/report.hpp"
#include "tests/grad/catalog_checks.hpp"
#include "tests/grad/registry.hpp"

using namespace attn;
using namespace attn::testing;

namespace attn::course::grading {
namespace {

// ---- catalog entries: value, gradients, masking, properties -----------------------------------------
// One line a tensor of a gradient check: right, or how many derivatives are
// wrong and the first of them (an entry's inputs and parameters, an op's inputs).
void grade_gradient_table(Report& r, const std::string& what, const GradcheckResult& g,
                          const std::vector<std::string>& names) {
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const GradcheckTensor& t = g.tensors[i];
        const std::string label = what + " " + (i < names.size() ? names[i] : std::to_string(i)) + " (" +
                                  t.shape.str() + ")";
        if (t.wrong == 0) {
            r.right("gradient to " + label, "worst relative error " + sci(t.worst_relative));
        } else {
            r.fail("gradient to " + label,
                   std::to_string(t.wrong) + " of " + std::to_string(t.checked) + " derivatives wrong, worst " +
                       "relative error " + sci(t.worst_relative) + "; first at " + index_str(t.shape, t.first_wrong) +
                       ": yours (analytic) " + num(t.analytic) + ", central difference " + num(t.numeric));
        }
    }
}

// One case's checks, in the child process grade_case starts for it.
void grade_case_here(Report& r, const Entry& e, const Case& c, uint64_t seed) {
    try {
        const Prepared p(e, c, seed);
        bool values_ok = true;
        for (const ValueFinding& f : check_values(p)) {
            const std::string what = "value of '" + f.output + "' against the reference";
            if (!f.problem.empty()) {
                r.fail(what, f.problem);
                values_ok = false;
            } else if (f.wrong > 0) {
                r.fail(what, std::to_string(f.wrong) + " of " + std::to_string(f.total) + " elements wrong; first at " +
                                 index_str(f.shape, f.first) + ": " + attn::course::expected_got(f.expected, f.got));
                values_ok = false;
            } else {
                r.right(what, std::to_string(f.total) + " elements");
            }
        }
        const GradientFindings g = check_gradients(p, /*every_element=*/true);
        if (!g.problem.empty()) r.fail("gradients", g.problem);
        if (g.checked) {
            std::vector<std::string> inputs;
            for (size_t i = 0; i < g.inputs.tensors.size(); ++i) inputs.push_back(std::to_string(i));
            grade_gradient_table(r, "input", g.inputs, inputs);
            grade_gradient_table(r, "parameter", g.parameters, g.parameter_names);
        }
        if (!c.masking.empty()) {
            const std::vector<std::string> masking = check_masking(p);
            if (masking.empty()) {
                r.right("masking: a masked key changes nothing, whatever it holds; all masked gives zeros");
            } else {
                std::string detail = masking[0];
                if (masking.size() > 1) detail += " (and " + std::to_string(masking.size() - 1) + " more)";
                r.fail("masking", detail);
            }
        }
        for (const PropertyFinding& f : check_properties(p)) {
            if (f.error.empty()) r.right("property: " + f.name);
            else r.fail("property: " + f.name, f.error);
        }
        if (!values_ok) std::cout << "  (a wrong value usually explains the gradients and properties after it)\n";
    } catch (const std::exception& ex) {
        r.fail("this case", what_threw(ex));
    }
}

}  // namespace

// A case of a mechanism's fused kernel runs the library's fast twin, not
// the student's code (course/grade_kinds.hpp): its variant says "fused".
bool runs_the_fast_twin(const Case& c) { return c.variant.rfind("fused", 0) == 0; }

void grade_case(Report& r, const Entry& e, const Case& c, uint64_t seed) {
    std::cout << "\n" << e.id << " (" << c.variant << ")\n";
    grade_apart(r, "this case", [&](Report& mine) { grade_case_here(mine, e, c, seed); }, 300);
}

// ---- one op's gradient cases ---------------------------------------------------------------------
void grade_op(Report& r, const std::string& op, uint64_t seed) {
    int cases = 0;
    for (const OpCase& c : op_registry()) {
        if (c.op != op) continue;
        ++cases;
        std::cout << "\n" << op << " (" << c.variant << ")\n";
        grade_apart(r, "this case", [&](Report& mine) {
            try {
                Generator gen(seed + static_cast<uint64_t>(cases));
                const std::vector<Tensor> inputs = sample_inputs(c, gen);
                GradcheckOptions every;
                every.every_element = true;
                const GradcheckResult g = gradcheck(op, c.build, inputs, every);
                if (g.tensors.empty()) {
                    mine.fail("gradients", g.message);
                    return;
                }
                std::vector<std::string> names;
                for (size_t i = 0; i < inputs.size(); ++i) names.push_back(std::to_string(i));
                grade_gradient_table(mine, "input", g, names);
            } catch (const std::exception& ex) {
                mine.fail("this case", what_threw(ex));
            }
        }, 120);
    }
    if (cases == 0) r.fail("the op registry", "has no case of '" + op + "' (tests/grad/registry.cpp)");
}

}  // namespace attn::course::grading
