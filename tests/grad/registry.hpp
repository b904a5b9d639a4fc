// The op registry: every differentiable op, as one or more entries of (op
// name, what the case exercises, sample input shapes, how to draw the inputs,
// a function building the op from them). The gradient check
// (test_gradcheck_ops.cpp) loops over it, and test_docs_table.cpp checks that
// every op named here has a row in docs/autograd.md's derivative table.
//
// Adding an op: write it in autograd/ops_*.cpp, add its entries here, add its
// row to the table. ATTN_OP=name build/tests/grad runs the cases of one op.
#pragma once

#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "tests/function.hpp"

namespace attn::testing {

// How the inputs of a case are drawn. Kinks and singularities are avoided
// here, not by loosening tolerances.
enum class Domain {
    normal,    // N(0, 1)
    positive,  // U[0.5, 2]: log, sqrt, division, fractional powers
    distinct,  // all values of all inputs distinct, ≥ 0.1 apart and ≥ 0.01 from
               // every multiple of 0.05: ties of max/min, relu/abs at 0, clamp's ends
    probability,  // U[0.2, 1]: unnormalised probabilities
};

struct OpCase {
    std::string op;       // the op's name, a row of docs/autograd.md
    std::string variant;  // what this case exercises, e.g. "broadcast 2×3 + 3"
    std::vector<Shape> shapes;
    Domain domain;
    Function<Var(const std::vector<Var>&)> build;
};

const std::vector<OpCase>& op_registry();

// The inputs of a case, drawn from `gen`.
std::vector<Tensor> sample_inputs(const OpCase& c, Generator& gen);

}  // namespace attn::testing
