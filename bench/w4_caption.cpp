// Workload W4 of docs/WORKLOADS.md: one training step of the caption
// example's show-attend-tell model, Captioner(CaptionerConfig{}) of
// examples/caption/caption_model.hpp (496,017 parameters): 32 grayscale 56×56
// images, captions of 5 words, the loss of caption_loss (cross-entropy plus
// the doubly stochastic penalty, λ = 1), Adam (lr 1e-3).
//   W4-soft  soft attention
//   W4-hard  hard attention: one location sampled at every step (soft
//            probability 0), REINFORCE with the moving-average baseline and
//            the entropy bonus 0.01
// Random images and words (seed 0). The PyTorch peer is bench/peers/w4_caption.py.
#include <memory>
#include <string>

#include "bench/training_bench.hpp"
#include "examples/caption/caption_model.hpp"
#include "nn/optim.hpp"

using namespace attn;

namespace {

constexpr int64_t kBatch = 32, kSide = 56, kLength = 5;

struct State {
    Tensor images, captions;
    MovingAverageBaseline baseline;
};

bench::Workload make_w4(bool hard) {
    Generator gen(0);
    CaptionerConfig config{};
    config.hard = hard;
    config.soft_probability = 0;  // W4-hard samples a location at every step
    auto model = std::make_shared<Captioner>(config, gen);
    model->set_fast(true);  // as the trainer runs it with --fast
    model->seed_sampler(1);
    auto opt = std::make_shared<Adam>(model->parameters(), AdamOptions{.lr = 1e-3, .fast = true});
    auto state = std::make_shared<State>();
    state->images = Tensor::normal(Shape{kBatch, 1, kSide, kSide}, 0, 1, gen);
    state->captions = Tensor::empty(Shape{kBatch, kLength});
    for (int64_t i = 0; i < state->captions.numel(); ++i)
        state->captions[i] = static_cast<real>(gen.randint(static_cast<uint64_t>(config.vocab)));
    return {[=] {
                opt->zero_grad();
                const Captioner::Forward f = model->forward(state->images, state->captions);
                CaptionLoss loss = caption_loss(f, state->captions, {.fast = true}, hard, state->baseline);
                loss.total.backward();
                opt->step();
            },
            model->num_parameters()};
}

}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 2 ? argv[2] : "";
    int failures = 0;
    if (only.empty() || only == "soft")
        failures += bench::main(argc, argv, "W4-soft", [] { return make_w4(false); });
    if (only.empty() || only == "hard")
        failures += bench::main(argc, argv, "W4-hard", [] { return make_w4(true); });
    return failures ? 1 : 0;
}
