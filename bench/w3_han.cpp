// Workload W3 of docs/WORKLOADS.md: one training step of the docclass
// example's hierarchical attention network, HierarchicalAttentionNetwork(
// DocModelConfig{}) of examples/docclass/docclass_models.hpp (4,142,610
// parameters, Yang et al. 2016's sizes): 32 documents of 8 sentences × 16
// words, no padding, cross-entropy over 10 classes, Adam (lr 1e-3) updating
// the 20,000×200 embedding densely. Random ids (seed 0) avoiding the padding id.
// The PyTorch peer is bench/peers/w3_han.py.
#include <memory>

#include "bench/training_bench.hpp"
#include "examples/docclass/docclass_models.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"

using namespace attn;

namespace {

constexpr int64_t kDocs = 32, kSentences = 8, kWords = 16;

struct Data {
    Tensor ids, word_mask, sentence_mask, labels;
};

bench::Workload make_w3() {
    Generator gen(0);
    const DocModelConfig config{};
    auto model = std::make_shared<HierarchicalAttentionNetwork>(config, gen);
    model->set_fast(true);  // as the trainer runs it with --fast
    auto opt = std::make_shared<Adam>(model->parameters(), AdamOptions{.lr = 1e-3, .fast = true});
    auto data = std::make_shared<Data>();
    data->ids = Tensor::empty(Shape{kDocs, kSentences, kWords});
    for (int64_t i = 0; i < data->ids.numel(); ++i)
        data->ids[i] = static_cast<real>(2 + gen.randint(static_cast<uint64_t>(config.vocab_size - 2)));
    data->word_mask = Tensor::ones(Shape{kDocs, kSentences, kWords});
    data->sentence_mask = Tensor::ones(Shape{kDocs, kSentences});
    data->labels = Tensor::empty(Shape{kDocs});
    for (int64_t b = 0; b < kDocs; ++b)
        data->labels[b] = static_cast<real>(gen.randint(static_cast<uint64_t>(config.num_classes)));
    return {[=] {
                opt->zero_grad();
                const DocOutput out = model->forward(data->ids, data->word_mask, data->sentence_mask);
                Var loss = cross_entropy(out.logits, data->labels);
                loss.backward();
                opt->step();
            },
            model->num_parameters()};
}

}  // namespace

int main(int argc, char** argv) { return bench::main(argc, argv, "W3-han", make_w3); }
