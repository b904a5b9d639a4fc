// Workload W5 of docs/WORKLOADS.md: one training step of a one-layer
// transformer classifier (327,562 parameters): tokens 32×64 from a vocabulary
// of 1,000 → Embedding(1000, 128) + sinusoidal position encoding (no √d
// scaling) → TransformerEncoderLayer(128, 4 heads, 512) of
// attention/transformer.hpp (post-LN, ReLU, no dropout; with its `fused`
// option: the heads use the fused SDPA kernel and the 32×4×64×64 weights are
// not materialised, as a trainer that does not draw them would) → mean over positions
// → Linear(128 → 10), cross-entropy, Adam (lr 1e-3). Random tokens and labels
// (seed 0). The PyTorch peer is bench/peers/w5_transformer.py.
#include <memory>

#include "attention/position.hpp"
#include "attention/transformer.hpp"
#include "autograd/ops.hpp"
#include "bench/training_bench.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"

using namespace attn;

namespace {

constexpr int64_t kBatch = 32, kLength = 64, kVocab = 1000, kModel = 128, kHeads = 4, kFeedForward = 512,
                  kClasses = 10;

class TransformerClassifier : public Module {
public:
    explicit TransformerClassifier(Generator& gen)
        : embedding(kVocab, kModel, gen), layer(kModel, kHeads, kFeedForward, gen, {.fused = true, .need_weights = false}), out(kModel, kClasses, gen) {
        register_module("embedding", embedding);
        register_module("layer", layer);
        register_module("out", out);
    }
    // tokens B×n → logits B×C
    Var forward(const Tensor& tokens) {
        const Var x = add_sinusoidal_position_encoding(embedding(tokens));  // B×n×d
        const Var y = layer.forward(x).output;                               // B×n×d
        return out(mean(y, 1));                                              // B×C
    }
    Embedding embedding;
    TransformerEncoderLayer layer;
    Linear out;
};

struct Data {
    Tensor tokens, labels;
};

bench::Workload make_w5() {
    Generator gen(0);
    auto model = std::make_shared<TransformerClassifier>(gen);
    auto opt = std::make_shared<Adam>(model->parameters(), AdamOptions{.lr = 1e-3, .fast = true});
    auto data = std::make_shared<Data>();
    data->tokens = Tensor::empty(Shape{kBatch, kLength});
    for (int64_t i = 0; i < data->tokens.numel(); ++i) data->tokens[i] = static_cast<real>(gen.randint(kVocab));
    data->labels = Tensor::empty(Shape{kBatch});
    for (int64_t b = 0; b < kBatch; ++b) data->labels[b] = static_cast<real>(gen.randint(kClasses));
    return {[=] {
                opt->zero_grad();
                Var loss = cross_entropy(model->forward(data->tokens), data->labels);
                loss.backward();
                opt->step();
            },
            model->num_parameters()};
}

}  // namespace

int main(int argc, char** argv) { return bench::main(argc, argv, "W5-transformer", make_w5); }
