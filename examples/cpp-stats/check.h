// A minimal test harness that prints what GoogleTest prints, so that air reads each
// failure's file, line and message from the test's output (no GoogleTest install needed).
#pragma once
#include <cmath>
#include <cstdio>
#include <cstring>

inline int check_failures = 0;

#define EXPECT_NEAR(actual, expected, tolerance)                                         \
    do {                                                                                 \
        const double a_ = (actual), e_ = (expected);                                     \
        if (std::fabs(a_ - e_) > (tolerance)) {                                          \
            std::printf("%s:%d: Failure\nExpected: %s is %g\n  Actual: %g\n", __FILE__,  \
                        __LINE__, #actual, e_, a_);                                      \
            ++check_failures;                                                            \
        }                                                                                \
    } while (0)

#define RUN_TEST(suite, name, body)                                                      \
    if (std::strcmp(which, #name) == 0) {                                                \
        std::printf("[ RUN      ] %s.%s\n", #suite, #name);                              \
        body;                                                                            \
        std::printf(check_failures ? "[  FAILED  ] %s.%s (0 ms)\n"                       \
                                   : "[       OK ] %s.%s (0 ms)\n",                      \
                    #suite, #name);                                                      \
        return check_failures ? 1 : 0;                                                   \
    }
