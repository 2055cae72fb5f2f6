/* check_page.c - the page at GET / from the real build/attnd: served byte for
 * byte from server/page/index.html, self-contained (no external URL), with
 * the headers, auth exemption and CORS the docs promise; and the textbook
 * model the page's worked example runs on (config/textbook.json), checked
 * against the textbook's numbers.  The page's behaviour in a browser is
 * tests/page/page_test.mjs (make test-page). */
#include "daemon.h"
#include "load/sha256.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPO_DIR TESTS_DIR "/.."

/* The whole file at path (owned, NUL-terminated), its size in *len. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xcalloc((size_t)n + 1, 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Every href= in the page is a fragment or a data: URL. */
static void assert_hrefs_local(const char *body)
{
    for (const char *p = strstr(body, "href="); p; p = strstr(p + 5, "href=")) {
        const char *v = p + 5 + (p[5] == '"' || p[5] == '\'');
        ck_assert_msg(strncmp(v, "data:", 5) == 0 || v[0] == '#', "external href: %.60s", p);
    }
}

START_TEST(test_page_served)
{
    start_or_fail(small_model, NULL);
    http_resp r;
    char hv[512];
    ck_assert_int_eq(http_do(dp.port, "GET", "/", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(http_header(&r, "Content-Type", hv, sizeof hv), "text/html; charset=utf-8");
    ck_assert_str_eq(http_header(&r, "Cache-Control", hv, sizeof hv), "no-cache");
    ck_assert_str_eq(http_header(&r, "X-Content-Type-Options", hv, sizeof hv), "nosniff");
    ck_assert_ptr_nonnull(http_header(&r, "X-Request-Id", hv, sizeof hv));
    ck_assert_ptr_nonnull(
        strstr(http_header(&r, "Content-Security-Policy", hv, sizeof hv), "connect-src 'self'"));

    /* Byte for byte the source file: the build embeds it unchanged. */
    size_t len = 0;
    char *file = read_file(REPO_DIR "/server/page/index.html", &len);
    ck_assert_uint_eq(r.len, len);
    ck_assert_int_eq(memcmp(r.body, file, len), 0);
    free(file);

    /* The page: calls /v1/encode, draws heatmaps, references nothing outside. */
    ck_assert_ptr_nonnull(strstr(r.body, "<!doctype html>"));
    ck_assert_ptr_nonnull(strstr(r.body, "v1/encode"));
    ck_assert_ptr_nonnull(strstr(r.body, "v1/model"));
    static const char *const external[] = {"http:", "https:",  "src=",    "@import", "url(",
                                           "//cdn", "<iframe", "<object", "<embed"};
    for (size_t i = 0; i < sizeof external / sizeof *external; i++)
        ck_assert_msg(strstr(r.body, external[i]) == NULL, "the page holds '%s'", external[i]);
    assert_hrefs_local(r.body);
    http_resp_free(&r);

    /* HEAD: the same headers, no body. */
    ck_assert_int_eq(http_do(dp.port, "HEAD", "/", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(http_header(&r, "Content-Type", hv, sizeof hv), "text/html; charset=utf-8");
    ck_assert_uint_eq(r.len, 0);
    http_resp_free(&r);

    /* Only "/" is the page; POST / is TEI's (a JSON body), other methods
     * get 405 with Allow. */
    ck_assert_int_eq(http_do(dp.port, "GET", "/index.htm", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 404);
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "POST", "/", "x", 1, NULL, &r), 0);
    ck_assert_int_eq(r.status, 415);
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "PUT", "/", "x", 1, NULL, &r), 0);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(http_header(&r, "Allow", hv, sizeof hv), "GET, HEAD, POST, OPTIONS");
    http_resp_free(&r);

    /* /openapi.json documents it, as needing no key. */
    ck_assert_int_eq(http_do(dp.port, "GET", "/openapi.json", NULL, 0, NULL, &r), 0);
    json_t *spec = json_loads(r.body, 0, NULL);
    json_t *op = json_object_get(json_object_get(json_object_get(spec, "paths"), "/"), "get");
    ck_assert_msg(op != NULL, "/openapi.json does not document GET /");
    ck_assert_int_eq(json_array_size(json_object_get(op, "security")), 0);
    ck_assert(json_is_array(json_object_get(op, "security")));
    ck_assert_ptr_nonnull(json_object_get(
        json_object_get(json_object_get(json_object_get(op, "responses"), "200"), "content"),
        "text/html"));
    json_decref(spec);
    http_resp_free(&r);

    /* The access log has a line for it (written as the request completes). */
    char *log = NULL;
    for (int i = 0; i < 200; i++) {
        free(log);
        log = daemon_log(&dp);
        if (strstr(log, "GET / 200 "))
            break;
        usleep(10000);
    }
    ck_assert_msg(strstr(log, "GET / 200 "), "no access-log line: %s", log);
    free(log);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* The page needs no API key (a browser cannot send one when it opens a URL);
 * what it calls still does. */
START_TEST(test_page_without_key)
{
    start_or_fail(small_model, (const char *const[]){"ATTND_API_KEY=s3cret", NULL});
    http_resp r;
    ck_assert_int_eq(http_do(dp.port, "GET", "/", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "Authorization"));
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 401);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

START_TEST(test_page_cors)
{
    start_or_fail((const char *const[]){"--d-model", "16", "--n-heads", "4", "--d-ff", "32",
                                        "--cors-origin", "https://app.example", NULL},
                  NULL);
    http_resp r;
    char hv[128];
    ck_assert_int_eq(http_do(dp.port, "GET", "/", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(http_header(&r, "Access-Control-Allow-Origin", hv, sizeof hv),
                     "https://app.example");
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "OPTIONS", "/", NULL, 0, NULL, &r), 0);
    ck_assert_int_eq(r.status, 204);
    ck_assert_str_eq(http_header(&r, "Access-Control-Allow-Methods", hv, sizeof hv),
                     "GET, HEAD, POST, OPTIONS");
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

/* config/textbook.json: the worked example's one-hot tokens give the
 * textbook's weights softmax(Q K^T / 2), and the page knows the file by the
 * sha256 /v1/model reports. */
START_TEST(test_textbook_model)
{
    static const double want[3][3] = {
        {0.452, 0.274, 0.274}, {0.186, 0.307, 0.507}, {0.233, 0.384, 0.384}};
    start_or_fail((const char *const[]){"--config", REPO_DIR "/config/textbook.json", "--weights",
                                        REPO_DIR "/config/textbook.safetensors", NULL},
                  NULL);
    http_resp r;
    const char *body = "{\"embeddings\": [[1,0,0,0],[0,1,0,0],[0,0,1,0]]}";
    ck_assert_int_eq(http_post_json(dp.port, "/v1/encode", body, &r), 0);
    ck_assert_msg(r.status == 200, "%ld: %s", r.status, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *a = json_array_get(json_object_get(j, "attention"), 0); /* head 0: [L][L] */
    ck_assert_int_eq(json_array_size(a), 3);
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 3; k++) {
            double v = json_number_value(json_array_get(json_array_get(a, i), k));
            ck_assert_msg(fabs(v - want[i][k]) < 1e-3, "A[%zu][%zu] = %g, want %g", i, k, v,
                          want[i][k]);
        }
    json_decref(j);
    http_resp_free(&r);

    size_t len = 0;
    char *file = read_file(REPO_DIR "/config/textbook.safetensors", &len);
    char hex[SHA256_HEX_SIZE];
    sha256_hex(file, len, hex);
    free(file);
    ck_assert_int_eq(http_do(dp.port, "GET", "/v1/model", NULL, 0, NULL, &r), 0);
    ck_assert_ptr_nonnull(strstr(r.body, hex));
    http_resp_free(&r);
    ck_assert_int_eq(http_do(dp.port, "GET", "/", NULL, 0, NULL, &r), 0);
    ck_assert_msg(strstr(r.body, hex), "the page does not know the textbook model's sha256 %s",
                  hex);
    http_resp_free(&r);
    ck_assert_int_eq(daemon_stop(&dp), 0);
}
END_TEST

Suite *page_suite(void)
{
    Suite *s = timed_suite("page");
    TCase *tc = timed_case(s, "daemon", 60);
    tcase_add_test(tc, test_page_served);
    tcase_add_test(tc, test_page_without_key);
    tcase_add_test(tc, test_page_cors);
    tcase_add_test(tc, test_textbook_model);
    return s;
}
