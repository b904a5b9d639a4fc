// Workload W2 of docs/WORKLOADS.md: one training step of the seq2seq
// example's model with additive (Bahdanau) attention, Seq2SeqModel(ModelConfig{})
// of examples/seq2seq/seq2seq_model.hpp (819,760 parameters): batch 64, source
// and target length 16, no padding, teacher forcing; Adam (lr 1e-3) after
// gradient-norm clipping at 5, as examples/seq2seq/main.cpp trains it.
// Random ids (seed 0) that avoid the padding id, so every token counts.
// The PyTorch peer is bench/peers/w2_seq2seq.py.
#include <memory>

#include "bench/training_bench.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "nn/optim.hpp"

using namespace attn;
using namespace attn::seq2seq;

namespace {

constexpr int64_t kBatch = 64, kLength = 16;

// B×n ids drawn uniformly from [1, vocab) (0 is the padding id).
Tensor random_ids(int64_t vocab, Generator& gen) {
    Tensor ids = Tensor::empty(Shape{kBatch, kLength});
    for (int64_t i = 0; i < ids.numel(); ++i) ids[i] = static_cast<real>(1 + gen.randint(static_cast<uint64_t>(vocab - 1)));
    return ids;
}

bench::Workload make_w2() {
    Generator gen(0);
    const ModelConfig config{};
    auto model = std::make_shared<Seq2SeqModel>(config, gen);
    model->set_fast(true);  // as the trainer runs it with --fast
    auto opt = std::make_shared<Adam>(model->parameters(), AdamOptions{.lr = 1e-3, .fast = true});
    auto batch = std::make_shared<Batch>();
    batch->source = random_ids(config.source_vocab, gen);
    batch->target_in = random_ids(config.target_vocab, gen);
    batch->target_out = random_ids(config.target_vocab, gen);
    batch->source_lengths.assign(kBatch, kLength);
    return {[=] {
                opt->zero_grad();
                Var loss = model->loss(*batch);
                loss.backward();
                clip_grad_norm_(model->parameters(), 5.0);
                opt->step();
            },
            model->num_parameters()};
}

}  // namespace

int main(int argc, char** argv) { return bench::main(argc, argv, "W2-seq2seq", make_w2); }
