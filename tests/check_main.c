/* check_main.c - runs every suite; exits non-zero if any test fails.
 * CK_RUN_SUITE / CK_RUN_CASE select a part, as Check documents. */
#include "encoder.h"
#include "suites.h"
#include "torch_fixture.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enc_set_threads(2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Counts that grow with the fixtures are said here, not in prose. */
    printf("PyTorch fixtures: %d cases under tests/fixtures/torch\n", torch_case_count());
    fflush(stdout);
    SRunner *sr = srunner_create(NULL);
#define SUITE_ADD(name) srunner_add_suite(sr, name##_suite());
    SUITES(SUITE_ADD)
#undef SUITE_ADD
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
