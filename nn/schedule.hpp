// Learning-rate schedules: the learning rate as a function of the step.
//
// Each schedule is a small class with one method, lr(t), in closed form, so a
// trainer can ask for any step (also after resuming from a checkpoint):
//
//   CosineAnnealing schedule(/*base_lr=*/1e-3, /*t_max=*/1000);
//   for (int64_t t = 0; t < 1000; ++t) {
//       optimizer.set_lr(schedule.lr(t));
//       ...
//   }
//
// The formulas are PyTorch's (torch.optim.lr_scheduler), with t = the
// scheduler's last_epoch: lr(t) is the rate in effect after t calls of
// scheduler.step(), so lr(0) is the rate of the very first update. Whether t
// counts epochs or batches is up to the trainer, as in PyTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace attn {

class LrSchedule {
public:
    virtual ~LrSchedule() = default;
    // The learning rate at step t >= 0 (throws std::invalid_argument for t < 0).
    virtual double lr(int64_t t) const = 0;
    // A one-line description for logs: "cosine(base_lr=0.001, t_max=1000, eta_min=0)".
    virtual std::string str() const = 0;
};

// lr(t) = base_lr
// (PyTorch: no scheduler at all.)
class ConstantSchedule : public LrSchedule {
public:
    explicit ConstantSchedule(double base_lr);
    double lr(int64_t t) const override;
    std::string str() const override;

private:
    double base_lr_;
};

// lr(t) = base_lr · gamma^⌊t / step_size⌋
// (PyTorch: StepLR(optimizer, step_size, gamma).) Requires step_size >= 1.
class StepDecay : public LrSchedule {
public:
    StepDecay(double base_lr, int64_t step_size, double gamma = 0.1);
    double lr(int64_t t) const override;
    std::string str() const override;

private:
    double base_lr_;
    int64_t step_size_;
    double gamma_;
};

// lr(t) = eta_min + (base_lr − eta_min) · (1 + cos(π t / T_max)) / 2
// (PyTorch: CosineAnnealingLR(optimizer, T_max, eta_min), whose closed form
// this is; SGDR, Loshchilov & Hutter 2017, without restarts.) It falls from
// base_lr at t = 0 to eta_min at t = T_max; like PyTorch's closed form it
// rises again after T_max (a period of 2·T_max), so train for T_max steps.
// Requires T_max >= 1.
class CosineAnnealing : public LrSchedule {
public:
    CosineAnnealing(double base_lr, int64_t t_max, double eta_min = 0);
    double lr(int64_t t) const override;
    std::string str() const override;

private:
    double base_lr_;
    int64_t t_max_;
    double eta_min_;
};

// Linear warm-up for W = warmup_steps steps, then the schedule `after`,
// restarted at 0:
//
//   lr(t) = after.lr(0) · (s + (1 − s) · t / W)   for t < W
//   lr(t) = after.lr(t − W)                        for t >= W
//
// where s = start_factor. PyTorch: SequentialLR(optimizer,
// [LinearLR(optimizer, start_factor=s, end_factor=1, total_iters=W), after],
// milestones=[W]). The warm-up climbs to after.lr(0), the base rate of the
// following schedule. Requires W >= 0 (0: no warm-up) and 0 < s <= 1 (as
// LinearLR does: s = 0 would make the first update a no-op).
class LinearWarmup : public LrSchedule {
public:
    LinearWarmup(int64_t warmup_steps, double start_factor, std::shared_ptr<const LrSchedule> after);
    double lr(int64_t t) const override;
    std::string str() const override;

private:
    int64_t warmup_steps_;
    double start_factor_;
    std::shared_ptr<const LrSchedule> after_;
};

// Vaswani et al. (2017), §5.3, the Transformer's schedule ("noam"): a linear
// warm-up over W steps, then a decay with the inverse square root of the step:
//
//   lr(t) = peak_lr · min(s / W, √(W / s)),   s = t + 1
//
// The paper writes it lrate = d_model^−0.5 · min(s^−0.5, s · W^−1.5), which is
// this with peak_lr = (d_model · W)^−0.5: the rate rises to peak_lr at s = W
// and falls as 1/√s after (fairseq's inverse_sqrt). Here the peak is given
// directly, so a trainer's --lr means the same under every schedule.
// (PyTorch: LambdaLR with this lambda.) Requires W >= 1.
class InverseSqrtWarmup : public LrSchedule {
public:
    InverseSqrtWarmup(double peak_lr, int64_t warmup_steps);
    double lr(int64_t t) const override;
    std::string str() const override;

private:
    double peak_lr_;
    int64_t warmup_steps_;
};

}  // namespace attn
