#pragma once
#include <vector>

namespace stats {
// Population variance: the mean of the squared deviations from the mean.
double variance(const std::vector<double>& values);
double range(const std::vector<double>& values);
}  // namespace stats
