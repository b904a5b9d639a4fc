// scripts/g2p-2007-ensemble.sh, the G2P recipe, run on a stand-in trainer: a
// shell script that records the command it was given and writes a "checkpoint"
// naming its seed. What is checked is the script's own bookkeeping, which an
// hour of training would be a poor way to find wrong: the waves train the seeds
// they should, in the directions they should; a second run on the same folder
// keeps the models a first one trained and adds only the new ones; a model
// trained with other settings is never overwritten; a failed run is trained
// again, its partner of the same wave kept.
#include <doctest/doctest.h>
#include <sys/wait.h>  // WIFEXITED, WEXITSTATUS

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/helpers.hpp"

namespace {

using attn::testing::read_file;
using attn::testing::TempDir;

using attn::testing::repository_path;

// Writes the stand-in trainer to DIR/fake-seq2seq. Every call appends its
// arguments to DIR/calls, one line; a training call (--out given) writes
// OUT/seq2seq/best.safetensors holding its seed. With its seed in FAIL_SEED
// it then fails, exit status 3, as a run that crashed after its first epochs
// would: a best checkpoint on disk, the run not finished.
std::string write_fake_trainer(const TempDir& dir) {
    const std::string path = dir / "fake-seq2seq";
    std::ofstream f(path);
    f << "#!/bin/sh\n"
         "echo \"$*\" >> '"
      << (dir / "calls")
      << "'\n"
         "out=''; seed=''\n"
         "while [ $# -gt 0 ]; do\n"
         "    case $1 in --out) out=$2; shift ;; --seed) seed=$2; shift ;; esac\n"
         "    shift\n"
         "done\n"
         "[ -n \"$out\" ] || exit 0\n"
         "mkdir -p \"$out/seq2seq\" && echo \"weights of seed $seed\" > \"$out/seq2seq/best.safetensors\"\n"
         "[ \"$seed\" != \"${FAIL_SEED:-}\" ] || exit 3\n";
    f.close();
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
}

struct Run {
    int status = -1;                   // the script's exit status
    std::string output;                // what it wrote on both streams
    std::vector<std::string> trained;  // the trainer's training calls in this run, sorted
    std::vector<std::string> decoded;  // and its other calls, in order
};

// Runs the script on DIR/out with the stand-in, `env` before it (VAR=value ...).
Run run_recipe(const TempDir& dir, const std::string& env) {
    const std::string before = read_file(dir / "calls");
    const std::string command = "SEQ2SEQ='" + write_fake_trainer(dir) + "' " + env + " sh '" + repository_path("scripts/g2p-2007-ensemble.sh") +
                                "' '" + (dir / "out") + "' > '" + (dir / "output") + "' 2>&1";
    const int raw = std::system(command.c_str());
    Run r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.output = read_file(dir / "output");
    std::istringstream in(read_file(dir / "calls").substr(before.size()));
    for (std::string line; std::getline(in, line);)
        (line.find(" --out ") != std::string::npos ? r.trained : r.decoded).push_back(line);
    std::sort(r.trained.begin(), r.trained.end());
    return r;
}

// The training call the script makes for seed k, EPOCHS epochs: by default
// the even seeds write right to left.
std::string training(const TempDir& dir, int k, int epochs, bool right_to_left) {
    return "--data g2p-2007 --fast --dropout 0.2 --epochs " + std::to_string(epochs) +
           " --patience 0 --ema 0.999 --beam 5 --threads 1 --seed " + std::to_string(k) +
           (right_to_left ? " --right-to-left" : "") + " --out " + (dir / "out") + "/seed" + std::to_string(k);
}
std::string training(const TempDir& dir, int k) { return training(dir, k, 30, k % 2 == 0); }

// The decoding call with the best checkpoints of seeds 1 … n.
std::string ensemble(const TempDir& dir, int n) {
    std::string members;
    for (int k = 1; k <= n; ++k)
        members += (k > 1 ? "," : "") + (dir / "out") + "/seed" + std::to_string(k) + "/seq2seq/best.safetensors";
    return "--data g2p-2007 --fast --ensemble " + members + " --beam 5";
}

}  // namespace

TEST_CASE("G2P recipe script: two waves, then a larger MODELS trains only the new seeds") {
    TempDir dir("g2p_recipe");
    const Run first = run_recipe(dir, "MODELS=2");
    INFO(first.output);
    REQUIRE(first.status == 0);
    CHECK(first.trained == std::vector<std::string>{training(dir, 1), training(dir, 2)});
    CHECK(first.decoded == std::vector<std::string>{ensemble(dir, 2)});
    CHECK(read_file(dir / "out/seed2/seq2seq/best.safetensors") == "weights of seed 2\n");

    const Run second = run_recipe(dir, "MODELS=5");
    INFO(second.output);
    REQUIRE(second.status == 0);
    CHECK(second.trained == std::vector<std::string>{training(dir, 3), training(dir, 4), training(dir, 5)});
    CHECK(second.decoded == std::vector<std::string>{ensemble(dir, 5)});
    CHECK(second.output.find("seed 1: trained already") != std::string::npos);
    CHECK(second.output.find("not counting the 2 models kept") != std::string::npos);

    // The same MODELS again: nothing to train, the ensemble decoded again.
    const Run third = run_recipe(dir, "MODELS=5");
    REQUIRE(third.status == 0);
    CHECK(third.trained.empty());
    CHECK(third.decoded == std::vector<std::string>{ensemble(dir, 5)});
}

TEST_CASE("G2P recipe script: models of other settings are never overwritten") {
    TempDir dir("g2p_recipe");
    REQUIRE(run_recipe(dir, "MODELS=2").status == 0);
    const Run other = run_recipe(dir, "MODELS=2 EPOCHS=31");
    INFO(other.output);
    CHECK(other.status == 2);
    CHECK(other.trained.empty());
    CHECK(other.decoded.empty());
    CHECK(other.output.find("seed1 was trained with other settings") != std::string::npos);
    CHECK(other.output.find("--epochs 30") != std::string::npos);  // it says which
    CHECK(read_file(dir / "out/seed1/seq2seq/best.safetensors") == "weights of seed 1\n");
    // EXTRA_FLAGS are settings too.
    CHECK(run_recipe(dir, "MODELS=2 EXTRA_FLAGS='--lr 0.003'").status == 2);
}

TEST_CASE("G2P recipe script: a failed run stops the recipe and alone is trained again") {
    TempDir dir("g2p_recipe");
    const Run failed = run_recipe(dir, "MODELS=4 FAIL_SEED=4");
    INFO(failed.output);
    CHECK(failed.status == 3);  // the trainer's own status
    CHECK(failed.trained.size() == 4);
    CHECK(failed.decoded.empty());
    CHECK(failed.output.find("a training run failed") != std::string::npos);
    CHECK(std::filesystem::exists(dir / "out/seed3.done"));
    CHECK_FALSE(std::filesystem::exists(dir / "out/seed4.done"));

    const Run again = run_recipe(dir, "MODELS=4");
    INFO(again.output);
    REQUIRE(again.status == 0);
    CHECK(again.trained == std::vector<std::string>{training(dir, 4)});
    CHECK(again.decoded == std::vector<std::string>{ensemble(dir, 4)});
}

TEST_CASE("G2P recipe script: DIRECTIONS=left trains every seed left to right") {
    TempDir dir("g2p_recipe");
    const Run r = run_recipe(dir, "MODELS=2 DIRECTIONS=left EPOCHS=3");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.trained == std::vector<std::string>{training(dir, 1, 3, false), training(dir, 2, 3, false)});
}
