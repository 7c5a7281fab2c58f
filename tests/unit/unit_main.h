/*
 * unit_main: the main() shared by every Check suite.
 *
 * Runs the suite returned by `suite_fn` with Check's environment controls
 * (CK_RUN_SUITE, CK_RUN_CASE, CK_VERBOSITY, CK_FORK) and exits non-zero if
 * any test failed, which is what automake's test driver expects.
 */
#ifndef KURA_UNIT_MAIN_H
#define KURA_UNIT_MAIN_H

#include <check.h>
#include <stdlib.h>

#define TEST_MAIN(suite_fn)                                                  \
    int main(void)                                                           \
    {                                                                        \
        SRunner *sr = srunner_create(suite_fn());                            \
        srunner_run_all(sr, CK_ENV);                                         \
        int failed = srunner_ntests_failed(sr);                              \
        srunner_free(sr);                                                    \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                    \
    }

#endif
