/* daemon_fixture.c - the daemon suites' one fixture (daemon.h): kept out
 * of daemon.c, which the load client (tests/load) links without Check. */
#include "daemon.h"

#include <check.h>

daemon_proc dp;

const char *const small_model[] = {"--d-model", "16",     "--n-heads", "4", "--d-ff",
                                   "32",        "--seed", "3",         NULL};

void start_or_fail(const char *const *args, const char *const *env)
{
    if (daemon_start(&dp, args, env) != 0) {
        char *log = daemon_log(&dp);
        ck_abort_msg("attnd did not start: %s", log);
    }
}
