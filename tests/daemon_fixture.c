/* daemon_fixture.c - the daemon suites' one fixture and their checks of a
 * response (its JSON, a metric; daemon.h): kept out of daemon.c, which the load client
 * (tests/load) links without Check. */
#include "daemon.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

json_t *http_json_body(const http_resp *r)
{
    json_error_t e;
    json_t *j = json_loads(r->body, 0, &e);
    ck_assert_msg(j != NULL, "response is not JSON (%s): %.300s", e.text, r->body);
    return j;
}

json_t *daemon_post(const char *path, const char *body, long *status)
{
    http_resp r;
    ck_assert_int_eq(http_post_json(dp.port, path, body, &r), 0);
    *status = r.status;
    json_t *j = json_loads(r.body, JSON_DECODE_ANY, NULL);
    ck_assert_msg(j != NULL, "%s: not JSON: %s", path, r.body);
    http_resp_free(&r);
    return j;
}

long http_metric(int port, const char *name)
{
    http_resp r;
    ck_assert_int_eq(http_do(port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(r.body, key);
    ck_assert_msg(at != NULL, "/metrics has no %s", name);
    const long v = strtol(at + strlen(key), NULL, 10);
    http_resp_free(&r);
    return v;
}

void http_assert_error(const http_resp *r, long status, const char *type, const char *want)
{
    ck_assert_msg(r->status == status, "status %ld, want %ld: %.300s", r->status, status, r->body);
    json_t *j = http_json_body(r);
    json_t *e = json_object_get(j, "error");
    ck_assert_msg(json_is_object(e), "no error object: %.500s", r->body);
    ck_assert_str_eq(json_string_value(json_object_get(e, "type")), type);
    const char *msg = json_string_value(json_object_get(e, "message"));
    ck_assert_msg(msg && strstr(msg, want), "message '%s' lacks '%s'", msg ? msg : "", want);
    json_decref(j);
}
