/* check_main.c - runs every suite of suites.h, tier by tier; exits non-zero
 * if any test fails or takes more than its share of its case's timeout
 * (timing.h).  CK_RUN_SUITE / CK_RUN_CASE select a part, as Check
 * documents; ATTND_TEST_TIERS (a comma-separated list of unit, codec,
 * daemon) runs only those tiers. */
#include "encoder.h"
#include "suites.h"
#include "timing.h"
#include "torch_fixture.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { UNIT, CODEC, DAEMON, N_TIERS };
static const char *const TIER_NAME[N_TIERS] = {"unit", "codec", "daemon"};

/* Whether ATTND_TEST_TIERS (unset: every tier) names tier; a name it does
 * not know ends the run. */
static bool tier_wanted(int tier)
{
    const char *list = getenv("ATTND_TEST_TIERS");
    if (!list || !*list)
        return true;
    bool wanted = false;
    for (const char *p = list; *p;) {
        const size_t n = strcspn(p, ",");
        int t = 0;
        while (t < N_TIERS && !(strlen(TIER_NAME[t]) == n && strncmp(p, TIER_NAME[t], n) == 0))
            t++;
        if (t == N_TIERS) {
            fprintf(stderr,
                    "ATTND_TEST_TIERS: unknown tier '%.*s'; the tiers are unit, codec, "
                    "daemon\n",
                    (int)n, p);
            exit(2);
        }
        wanted = wanted || t == tier;
        p += n + (p[n] == ',');
    }
    return wanted;
}

int main(void)
{
    enc_set_threads(2);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Counts that grow with the fixtures are said here, not in prose. */
    printf("PyTorch fixtures: %d cases under tests/fixtures/torch\n", torch_case_count());
    SRunner *sr = srunner_create(NULL);
    int suites[N_TIERS] = {0};
    for (int tier = 0; tier < N_TIERS; tier++) {
        if (!tier_wanted(tier))
            continue;
#define SUITE_ADD(name, t)                                                                         \
    if (t == tier) {                                                                               \
        srunner_add_suite(sr, name##_suite());                                                     \
        suites[tier]++;                                                                            \
    }
        SUITES(SUITE_ADD)
#undef SUITE_ADD
    }
    printf("suites: %d unit, %d codec, %d daemon\n", suites[UNIT], suites[CODEC], suites[DAEMON]);
    fflush(stdout);
    /* Check's XML log carries each test's run time: CK_XML_LOG_FILE_NAME
     * when it is set (then kept), else a file of our own. */
    char own[] = "/tmp/attnd-test-times-XXXXXX";
    const char *xml = getenv("CK_XML_LOG_FILE_NAME");
    if (!xml || !*xml) {
        const int fd = mkstemp(own);
        if (fd < 0) {
            perror("mkstemp for Check's XML log");
            return EXIT_FAILURE;
        }
        close(fd);
        srunner_set_xml(sr, own);
        xml = own;
    }
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    const int slow = timing_check(xml, stdout);
    if (xml == own)
        unlink(own);
    return failed || slow ? EXIT_FAILURE : EXIT_SUCCESS;
}
