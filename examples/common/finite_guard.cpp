#include "examples/common/finite_guard.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace attn {

namespace {

// "nan" whatever its sign bit ("-nan" would suggest a meaning it has not).
std::string text(double x) {
    if (std::isnan(x)) return "nan";
    std::ostringstream os;
    os << x;
    return os.str();
}

}  // namespace

void FiniteGuard::check(int64_t step, double loss, double gradient_norm) {
    const bool loss_ok = std::isfinite(loss), norm_ok = std::isfinite(gradient_norm);
    if (loss_ok && norm_ok) {
        last_step_ = step;
        last_loss_ = loss;
        return;
    }
    std::ostringstream os;
    os << "step " << step << ": ";
    if (!loss_ok)
        os << "the loss is " << text(loss);
    else
        os << "the gradient norm is " << text(gradient_norm) << " (the loss " << text(loss) << ")";
    if (last_step_ >= 0)
        os << " (the last finite loss was " << last_loss_ << " at step " << last_step_ << ")";
    else
        os << " at the first step of this run";
    os << "; training stopped before this update, and the checkpoints already saved are kept. A smaller --lr or "
          "--clip may help";
    throw std::runtime_error(os.str());
}

}  // namespace attn
