// The tensors scripts/gdb/attn.py's printers are checked on (make
// check-debugging): every rank from 0 to 3, axes short and long enough to be
// elided, a view at an offset into its storage, values of every magnitude,
// a leaf and an op's Var, and the undefined ones. The program writes each
// one's str() — the library's own printing — and stops in inspect(), where
// scripts/replay-debugging.py has gdb print the same names through the
// printers and compares the two texts.
#include <cstdio>
#include <string>

#include "autograd/ops.hpp"
#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace {

// gdb breaks here; the caller's locals are what it prints.
[[gnu::noinline]] void inspect() { asm volatile(""); }

void show(const char* name, const std::string& text) { std::printf("@@%s\n%s\n", name, text.c_str()); }

}  // namespace

int main() {
    using namespace attn;
    Generator gen(7);
    Tensor scalar = Tensor::scalar(-2.5);
    Tensor short_vector = Tensor::from({1, -2.5f, 1e-7f, 1.23456789e8f, 0.1f, 3});
    Tensor long_vector = Tensor::arange(0, 1.2f, 0.1f);
    Tensor matrix = Tensor::normal({9, 8}, 0, 100, gen);
    Tensor cube = Tensor::normal({3, 8, 2}, 0, 1, gen);
    Tensor rows = matrix.rows(2, 5);  // a view: storage shared, offset 16
    Tensor undefined_tensor;
    Var leaf(Tensor::uniform({2, 9}, -1, 1, gen), true);
    Var op = sigmoid(leaf);
    Var constant(short_vector);
    Var undefined_var;
    show("scalar", scalar.str());
    show("short_vector", short_vector.str());
    show("long_vector", long_vector.str());
    show("matrix", matrix.str());
    show("cube", cube.str());
    show("rows", rows.str());
    show("undefined_tensor", undefined_tensor.str());
    show("leaf", leaf.str());
    show("op", op.str());
    show("constant", constant.str());
    show("undefined_var", undefined_var.str());
    show("$shape(cube)", cube.shape().str());
    show("$shape(op)", op.shape().str());
    show("$shape(scalar)", scalar.shape().str());
    char element[64];
    std::snprintf(element, sizeof element, "%.9g", static_cast<double>(rows.at({2, 7})));
    show("$at(rows, 2, 7)", element);
    std::snprintf(element, sizeof element, "%.9g", static_cast<double>(op.value().at({1, 8})));
    show("$at(op, 1, 8)", element);
    std::snprintf(element, sizeof element, "%.9g", static_cast<double>(cube.at({2, 5, 1})));
    show("$at(cube, 2, 5, 1)", element);
    std::fflush(stdout);
    inspect();
    return 0;
}
