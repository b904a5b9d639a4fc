// Gradient checks of every registered attention mechanism (double build): to
// each input, and to each parameter of the module.
#include <doctest/doctest.h>

#include <cstdlib>

#include "autograd/gradcheck.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

TEST_CASE("attention mechanisms: gradients match finite differences") {
    const char* only = std::getenv("ATTN_MECHANISM");
    int ran = 0;
    for (const MechanismCase& c : mechanism_registry()) {
        if (only && c.id != only) continue;
        const std::string name = c.id + " (" + c.variant + ")";
        CAPTURE(name);
        Generator gen(2024);
        std::unique_ptr<Module> module = c.make ? c.make(gen) : nullptr;
        std::vector<Tensor> inputs;
        for (const Shape& s : c.input_shapes) inputs.push_back(Tensor::normal(s, 0, 1, gen));

        // To the inputs.
        auto to_inputs = gradcheck(name, [&](const std::vector<Var>& x) { return c.run(module.get(), x); }, inputs);
        CHECK_MESSAGE(to_inputs.ok, to_inputs.message);

        // To the parameters, with the inputs held fixed.
        if (module && module->num_parameters() > 0) {
            std::vector<Var> fixed;
            for (const Tensor& t : inputs) fixed.emplace_back(t);
            auto to_params = gradcheck(name + " parameters", [&] { return c.run(module.get(), fixed); },
                                       module->parameters());
            CHECK_MESSAGE(to_params.ok, to_params.message);
        }
        ++ran;
    }
    if (!only) CHECK(ran == static_cast<int>(mechanism_registry().size()));
}
