// Generator: the only source of randomness in the library.
//
// Every function that draws random numbers takes a Generator& explicitly, so a
// run is reproduced exactly by its seed (and thread count). The algorithm is
// xoshiro256** (Blackman & Vigna, 2018), seeded through SplitMix64; both are
// fully specified here, so results do not depend on the standard library.
#pragma once

#include <cmath>
#include <cstdint>

namespace attn {

class Generator {
public:
    explicit Generator(uint64_t seed = 0) { manual_seed(seed); }

    void manual_seed(uint64_t seed) {
        seed_ = seed;
        uint64_t x = seed;
        for (uint64_t& s : state_) s = splitmix64(x);
        has_spare_normal_ = false;
    }
    uint64_t initial_seed() const { return seed_; }

    // 64 random bits.
    uint64_t next_u64() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform on [0, 1), with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

    // Uniform integer in [0, n), without modulo bias (Lemire's method).
    uint64_t randint(uint64_t n) {
        if (n == 0) return 0;
        unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
        uint64_t low = static_cast<uint64_t>(m);
        if (low < n) {
            const uint64_t threshold = (0 - n) % n;
            while (low < threshold) {
                m = static_cast<unsigned __int128>(next_u64()) * n;
                low = static_cast<uint64_t>(m);
            }
        }
        return static_cast<uint64_t>(m >> 64);
    }

    // Standard normal, by the Box–Muller transform (two values per pair of uniforms).
    double normal() {
        if (has_spare_normal_) {
            has_spare_normal_ = false;
            return spare_normal_;
        }
        double u1 = uniform(), u2 = uniform();
        if (u1 < 1e-300) u1 = 1e-300;  // log(0) would be -inf
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double theta = 2.0 * 3.14159265358979323846 * u2;
        spare_normal_ = r * std::sin(theta);
        has_spare_normal_ = true;
        return r * std::cos(theta);
    }
    double normal(double mean, double std) { return mean + std * normal(); }

    // A new generator whose stream is independent of this one's; used to give
    // each worker or each module its own stream without sharing state.
    Generator fork() { return Generator(next_u64()); }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static uint64_t splitmix64(uint64_t& x) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    uint64_t state_[4] = {};
    uint64_t seed_ = 0;
    double spare_normal_ = 0.0;
    bool has_spare_normal_ = false;
};

}  // namespace attn
