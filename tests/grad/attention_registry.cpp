#include "tests/grad/attention_registry.hpp"

namespace attn::testing {

std::vector<MechanismCase>& mechanism_registry() {
    static std::vector<MechanismCase> cases;
    return cases;
}

RegisterMechanisms::RegisterMechanisms(std::vector<MechanismCase> cases) {
    for (auto& c : cases) mechanism_registry().push_back(std::move(c));
}

}  // namespace attn::testing
