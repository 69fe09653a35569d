#pragma once
#include <vector>

namespace stats {
double mean(const std::vector<double>& values);
double median(std::vector<double> values);
}  // namespace stats
