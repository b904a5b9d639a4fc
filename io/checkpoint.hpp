// Checkpoints: a model's state_dict, or a whole training run, in one
// safetensors file (io/safetensors.hpp), written atomically (a temporary file
// renamed into place: a crash never leaves half a checkpoint).
//
// Model files hold exactly the model's state_dict, under PyTorch's keys, so in
// Python:
//
//   from safetensors.torch import load_file
//   model.load_state_dict(load_file("model.safetensors"))
//
// Training checkpoints add the optimiser and the loop's position:
//
//   tensors   "fc.weight", "fc.bias", …                  the model
//             "optimizer.state.fc.weight.exp_avg", …     the optimiser's buffers
//   metadata  "format": "pt", "step", "epoch", "seed"
//             "optimizer.type": "Adam", "optimizer.lr": "0.001"
//             "optimizer.state.fc.weight.step": "120"    per-parameter step counts
//             anything the trainer adds (TrainingState::extra)
//
// Everything is stored exactly (tensors as F32 bit for bit in the float
// build, numbers as decimal strings with all their digits), so a run resumed
// from a checkpoint continues exactly as if it had not stopped, provided the
// trainer rebuilds its data order and random streams from `seed` and the step.
// (In the double build tensors are rounded to F32 on saving.)
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace attn {

// The model alone. load_model() applies Module::load_state_dict's checks (a
// missing, unexpected or mis-shaped tensor throws and changes nothing); it
// also reads the model part of a training checkpoint.
void save_model(const std::string& path, const Module& model, const std::map<std::string, std::string>& metadata = {});
void load_model(const std::string& path, Module& model);

// Where a training loop stands.
struct TrainingState {
    int64_t step = 0;   // optimiser updates done
    int64_t epoch = 0;  // epochs completed
    uint64_t seed = 0;  // the run's seed
    std::map<std::string, std::string> extra{};  // anything else the trainer wants back (best loss, …)
    std::string source{};  // the file load_checkpoint read it from, for messages

    // extra[key] as a finite number, or throw std::runtime_error naming the
    // file, the key and what is wrong ("metadata \"best_valid\" is missing").
    double number(const std::string& key) const;
    // extra[key] as a whole number in [0, max], or throw the same way ("is not
    // a count from 0 to ..."): a position or a count read back from a file
    // must not index past what it counts (loop.batch = -3 once read the heap).
    int64_t count(const std::string& key, int64_t max) const;
};

void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const TrainingState& state);
// Loads model and optimiser state (both checked before either is changed)
// and returns the loop's position. Throws std::runtime_error naming the file
// if it is not a training checkpoint or its metadata is malformed.
TrainingState load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer);

}  // namespace attn
