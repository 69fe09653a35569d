#include "../check.h"
#include "summary.h"

int main(int argc, char** argv) {
    const char* which = argc > 1 ? argv[1] : "";
    RUN_TEST(Summary, mean, { EXPECT_NEAR(stats::mean({1, 2, 3, 6}), 3.0, 1e-9); });
    RUN_TEST(Summary, median, {
        EXPECT_NEAR(stats::median({5, 1, 3}), 3.0, 1e-9);
        EXPECT_NEAR(stats::median({4, 1, 3, 2}), 2.5, 1e-9);
    });
    std::printf("unknown test %s\n", which);
    return 2;
}
