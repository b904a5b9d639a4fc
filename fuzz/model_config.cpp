// The seq2seq model's configuration as a checkpoint's header stores it
// ("source_vocab=64 ... dropout=0.1"); what parses must print and parse back.
#include <stdexcept>
#include <string>

#include "examples/seq2seq/seq2seq_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        const attn::seq2seq::ModelConfig c =
            attn::seq2seq::ModelConfig::parse(std::string(reinterpret_cast<const char*>(data), size));
        if (attn::seq2seq::ModelConfig::parse(c.str()).str() != c.str()) __builtin_trap();
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
