#include "../check.h"
#include "spread.h"

int main(int argc, char** argv) {
    const char* which = argc > 1 ? argv[1] : "";
    RUN_TEST(Spread, variance, { EXPECT_NEAR(stats::variance({2, 4, 4, 4, 5, 5, 7, 9}), 4.0, 1e-9); });
    RUN_TEST(Spread, range, { EXPECT_NEAR(stats::range({3, -1, 8}), 9.0, 1e-9); });
    std::printf("unknown test %s\n", which);
    return 2;
}
