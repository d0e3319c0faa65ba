// DivergenceGuard: whether an optimizer step's update may be applied, as a pure state machine (no
// tensors) like the loss scaler. A step whose loss or gradient norm is not finite, or whose loss
// spikes above `spikeFactor` x the mean of the last `spikeWindow` applied steps, gets a Diagnosis
// instead: the recipe drops its gradients, logs it and pauses for the user. Only applied steps
// enter the window.
#pragma once

#include "train/metrics.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace tb {

class DivergenceGuard {
public:
    DivergenceGuard(double spikeFactor, int spikeWindow);  // spikeFactor 0: no spike check

    // step: the 1-based step being checked; loss: its mean token loss; gradNorm: before clipping.
    std::optional<Diagnosis> check(int64_t step, double loss, double gradNorm) const;
    // The diagnosis when fp16 gradients overflow even at loss scale 1
    // (DynamicLossScaler::Exhausted).
    static Diagnosis fp16Exhausted(int64_t step, double gradNorm);

    void record(double loss);  // an applied step's loss joins the window
    const std::deque<double>& recentLosses() const { return m_recent; }
    void restore(const std::vector<double>& recentLosses);  // from a checkpoint

private:
    double m_spikeFactor;
    int m_spikeWindow;
    std::deque<double> m_recent;
};

}  // namespace tb
