#pragma once

namespace memx::ui {

/// Relative weights of the three objectives (each >= 0; only ratios matter).
struct ObjectiveWeights {
    double time = 1.0; ///< Weight of T (iteration time).
    double memory = 0.5; ///< Weight of M (peak memory fraction).
    double balance = 0.5; ///< Weight of B (imbalance CV).

    bool operator==(const ObjectiveWeights &) const = default;
};

} // namespace memx::ui
