#include "tests/grad/alignments_reference.hpp"

#include <cmath>
#include <limits>

namespace attn::testing {

Array keep_keys(const Array& mask, int64_t B, int64_t m, int64_t n) {
    Array keep({B, m, n});
    for (int64_t b = 0; b < B; ++b) {
        const Vec k = keep_row(mask, b, n);
        for (int64_t i = 0; i < m; ++i) set_row(keep, b, i, k);
    }
    return keep;
}

Vec keep_of(const Array& keep, int64_t b, int64_t i) { return row(keep, b, i); }

namespace {

// Calls f(b, i, e, keep) for every query row and stores the Vec it returns.
template <class F>
Array per_row(const Array& E, const Array& keep, F f) {
    Array A(E.shape());
    for (int64_t b = 0; b < E.size(0); ++b)
        for (int64_t i = 0; i < E.size(1); ++i) set_row(A, b, i, f(b, i, row(E, b, i), keep_of(keep, b, i)));
    return A;
}

bool any_kept(const Vec& keep) {
    for (double k : keep)
        if (k != 0) return true;
    return false;
}

}  // namespace

// ---- 22 ---------------------------------------------------------------------------------------

Array soft_alignment_reference(const Array& E, const Array& keep, double T) {
    return per_row(E, keep, [&](int64_t, int64_t, const Vec& e, const Vec& k) { return softmax(scale(e, 1 / T), k); });
}

// ---- 23 ---------------------------------------------------------------------------------------

HardDraw hard_alignment_reference(const Array& E, const Array& keep, Generator& noise, bool sample,
                                  double soft_probability) {
    const int64_t B = E.size(0), m = E.size(1), n = E.size(2);
    HardDraw d{soft_alignment_reference(E, keep), Array({B, m}), Array({B, m}), Array({B, m}), Array({B, m}),
               Array({B, m, n})};
    // m ~ Categorical(a): the first l whose cumulative probability exceeds u·Σa
    // (a fully masked row draws from a uniform stand-in, so the stream stays aligned).
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            const Vec a = row(d.probs, b, i);
            const bool alive = any_kept(keep_of(keep, b, i));
            const Vec p = alive ? a : Vec(static_cast<size_t>(n), 1.0);
            int64_t pick = 0;
            if (sample) {
                const double u = noise.uniform() * sum(p);
                double cumulative = 0;
                pick = -1;
                for (int64_t l = 0; l < n && pick < 0; ++l) {
                    cumulative += p[static_cast<size_t>(l)];
                    if (p[static_cast<size_t>(l)] > 0 && u < cumulative) pick = l;
                }
                for (int64_t l = n - 1; pick < 0 && l >= 0; --l)  // rounding: the last positive
                    if (p[static_cast<size_t>(l)] > 0) pick = l;
            } else {
                for (int64_t l = 1; l < n; ++l)
                    if (p[static_cast<size_t>(l)] > p[static_cast<size_t>(pick)]) pick = l;
            }
            d.indices(b, i) = alive ? static_cast<double>(pick) : -1;
            if (alive) d.weights(b, i, pick) = 1;
            double H = 0;
            for (double al : a) H -= al > 0 ? al * std::log(al) : 0;
            d.entropy(b, i) = H;
        }
    // The expected context with probability soft_probability: a row's weights are
    // a, and it has no REINFORCE term.
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            if (soft_probability > 0) d.soft(b, i) = noise.uniform() < soft_probability ? 1 : 0;
            const bool alive = d.indices(b, i) >= 0;
            if (d.soft(b, i) == 1)
                set_row(d.weights, b, i, row(d.probs, b, i));
            else if (alive)
                d.log_prob(b, i) = std::log(d.probs(b, i, static_cast<int64_t>(d.indices(b, i))));
        }
    return d;
}

// ---- 24 ---------------------------------------------------------------------------------------

Array local_monotonic_reference(const Array& E, const Array& keep, int64_t D, const Array& positions) {
    return per_row(E, keep, [&](int64_t b, int64_t i, const Vec& e, Vec k) {
        const double p = positions.numel() == 0 ? static_cast<double>(i) : positions(b, i);
        for (size_t l = 0; l < k.size(); ++l)
            if (std::abs(static_cast<double>(l) - p) > static_cast<double>(D)) k[l] = 0;
        return softmax(e, k);
    });
}

// ---- 25 ---------------------------------------------------------------------------------------

Array local_predictive_centres(const Array& Q, const Array& W_p, const Vec& v_p, const Array& keep) {
    Array centres({Q.size(0), Q.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i) {
            const double S = sum(keep_of(keep, b, i));
            centres(b, i) = S * sigmoid(dot(v_p, each(matvec(W_p, row(Q, b, i)), std::tanh)));
        }
    return centres;
}

Array local_predictive_reference(const Array& E, const Array& keep, const Array& centres, int64_t D) {
    const double sigma = static_cast<double>(D) / 2;
    return per_row(E, keep, [&](int64_t b, int64_t i, const Vec& e, Vec k) {
        const double p = centres(b, i);
        for (size_t l = 0; l < k.size(); ++l)
            if (std::abs(static_cast<double>(l) - p) > static_cast<double>(D)) k[l] = 0;
        Vec a = softmax(e, k);
        for (size_t l = 0; l < a.size(); ++l) {
            const double dl = static_cast<double>(l) - p;
            a[l] *= std::exp(-dl * dl / (2 * sigma * sigma));
        }
        return a;
    });
}

// ---- 26 ---------------------------------------------------------------------------------------

SamplerDraw resa_sampler_reference(const Array& X, const Array& valid, const Array& W_1, const Vec& b_1,
                                   const Vec& w_2, double b_2, Generator& noise, bool training) {
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
    SamplerDraw s{Array({B, n}), Array({B, n}), Array({B})};
    for (int64_t b = 0; b < B; ++b) {
        Vec x_bar(static_cast<size_t>(d), 0.0);  // the mean of the valid tokens
        double count = 0;
        for (int64_t l = 0; l < n; ++l)
            if (valid(b, l) != 0) x_bar = add(x_bar, row(X, b, l)), count += 1;
        x_bar = scale(x_bar, 1 / std::max(count, 1.0));
        for (int64_t l = 0; l < n; ++l) {
            const Vec h = each(add(matvec(W_1, concat(row(X, b, l), x_bar)), b_1), std::tanh);
            s.probs(b, l) = sigmoid(dot(w_2, h) + b_2);
        }
    }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < n; ++l) {
            const double pi = s.probs(b, l);
            const double u = training ? noise.uniform() : 0.5;
            if (valid(b, l) == 0) continue;
            s.z(b, l) = u < pi ? 1 : 0;
            s.log_prob(b) += s.z(b, l) == 1 ? std::log(pi) : std::log(1 - pi);
        }
    return s;
}

Array restricted_softmax_reference(const Array& E, const Array& keep, const Array& z_attending,
                                   const Array& z_attended) {
    return per_row(E, keep, [&](int64_t b, int64_t i, const Vec& e, Vec k) {
        for (size_t l = 0; l < k.size(); ++l) k[l] *= z_attending(b, i) * z_attended(b, static_cast<int64_t>(l));
        return softmax(e, k);
    });
}

// ---- 27 ---------------------------------------------------------------------------------------

Array gumbel_softmax_reference(const Array& E, const Array& keep, Generator& noise, double tau, bool training,
                               bool straight_through) {
    const Array a = soft_alignment_reference(E, keep);
    Array G(E.shape());  // g = −log(−log u), drawn for every score in order
    if (training)
        for (int64_t f = 0; f < G.numel(); ++f) {
            const double u = std::max(noise.uniform(), std::numeric_limits<double>::min());
            G[f] = -std::log(-std::log(u));
        }
    return per_row(E, keep, [&](int64_t b, int64_t i, const Vec&, const Vec& k) {
        Vec logits(k.size(), 0.0);
        for (int64_t l = 0; l < static_cast<int64_t>(k.size()); ++l)
            if (k[static_cast<size_t>(l)] != 0)
                logits[static_cast<size_t>(l)] = (std::log(a(b, i, l)) + G(b, i, l)) / tau;
        Vec y = softmax(logits, k);
        if (!straight_through || !any_kept(k)) return y;
        size_t best = 0;
        for (size_t l = 1; l < y.size(); ++l)
            if (y[l] > y[best]) best = l;
        Vec hard(y.size(), 0.0);
        hard[best] = 1;
        return hard;
    });
}

// ---- 28 ---------------------------------------------------------------------------------------

Array elementwise_reference(const Array& E, const Array& keep, ElementwiseRef kind, double eps) {
    return per_row(E, keep, [&](int64_t, int64_t, const Vec& e, const Vec& k) {
        Vec a(e.size(), 0.0);
        for (size_t l = 0; l < e.size(); ++l)
            if (k[l] != 0) a[l] = kind == ElementwiseRef::sigmoid ? sigmoid(e[l]) : relu(e[l]);
        double s = 1;
        if (kind == ElementwiseRef::relu_length) s = std::max(sum(k), 1.0);
        if (kind == ElementwiseRef::relu_sum) s = sum(a) + eps;
        return scale(a, 1 / s);
    });
}

}  // namespace attn::testing
