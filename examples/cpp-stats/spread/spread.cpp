#include "spread.h"

#include <algorithm>

namespace stats {

double variance(const std::vector<double>& values) {
    if (values.size() < 2) return 0.0;
    double sum = 0.0;
    for (double v : values) sum += v;
    const double mean = sum / values.size();
    double squares = 0.0;
    for (double v : values) squares += (v - mean) * (v - mean);
    return squares / (values.size() - 1);
}

double range(const std::vector<double>& values) {
    if (values.empty()) return 0.0;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    return *hi - *lo;
}

}  // namespace stats
