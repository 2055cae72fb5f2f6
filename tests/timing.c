/* timing.c - the cases' timeouts and the run times held against them
 * (timing.h).  Check keeps a case's timeout to itself, so each is
 * recorded here as it is set; the run times come from Check's XML log
 * (one <test> per run of a test, with its <duration> in seconds). */
#include "timing.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SUITES = 64, MAX_CASES = 256, NAME_MAX_ = 64, SLOWEST = 8 };

typedef struct timed {
    char suite[NAME_MAX_], name[NAME_MAX_];
    double seconds; /* scaled */
} timed;

static struct {
    Suite *s;
    const char *name;
} suites[MAX_SUITES];
static int n_suites;
static timed cases[MAX_CASES];
static int n_cases;

/* CK_TIMEOUT_MULTIPLIER as Check reads it in tcase_set_timeout: a number
 * >= 0, all of the text; anything else leaves timeouts as written. */
static double multiplier(void)
{
    const char *env = getenv("CK_TIMEOUT_MULTIPLIER");
    if (!env)
        return 1;
    char *end = NULL;
    const double m = strtod(env, &end);
    return m >= 0 && end != env && *end == '\0' ? m : 1;
}

/* A name as it stands in the XML log, unescaped: no character Check
 * would escape, and short enough for the table. */
static void check_name(const char *what, const char *name)
{
    if (strlen(name) >= NAME_MAX_ || strpbrk(name, "<>&\"'")) {
        fprintf(stderr, "timing: %s name '%s': under %d characters, none of <>&\"'\n", what, name,
                NAME_MAX_);
        abort();
    }
}

Suite *timed_suite(const char *name)
{
    check_name("suite", name);
    if (n_suites == MAX_SUITES) {
        fprintf(stderr, "timing: more than %d suites: raise MAX_SUITES\n", MAX_SUITES);
        abort();
    }
    Suite *s = suite_create(name);
    suites[n_suites].s = s;
    suites[n_suites++].name = name;
    return s;
}

TCase *timed_case(Suite *s, const char *name, double seconds)
{
    check_name("case", name);
    const char *suite = NULL;
    for (int i = 0; i < n_suites && !suite; i++)
        if (suites[i].s == s)
            suite = suites[i].name;
    if (!suite || n_cases == MAX_CASES || seconds <= 0) {
        fprintf(stderr, "timing: case '%s': %s\n", name,
                !suite         ? "its suite was not made by timed_suite"
                : seconds <= 0 ? "a timeout must be over 0 s"
                               : "too many cases: raise MAX_CASES");
        abort();
    }
    for (int i = 0; i < n_cases; i++)
        if (strcmp(cases[i].suite, suite) == 0 && strcmp(cases[i].name, name) == 0) {
            fprintf(stderr, "timing: suite %s has two cases named '%s'\n", suite, name);
            abort();
        }
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, seconds);
    snprintf(cases[n_cases].suite, NAME_MAX_, "%s", suite);
    snprintf(cases[n_cases].name, NAME_MAX_, "%s", name);
    cases[n_cases++].seconds = seconds * multiplier();
    suite_add_tcase(s, tc);
    return tc;
}

/* The text of the first <name>...</name> in [p, end) into out (cut to
 * cap); false when there is none. */
static bool tag(const char *p, const char *end, const char *name, char *out, size_t cap)
{
    char open[32], close[32];
    snprintf(open, sizeof open, "<%s>", name);
    snprintf(close, sizeof close, "</%s>", name);
    const char *a = strstr(p, open);
    if (!a || a >= end)
        return false;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b || b > end)
        return false;
    snprintf(out, cap, "%.*s", (int)(b - a), a);
    return true;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len + 65536 + 1 > cap) {
            char *bigger = realloc(text, cap = 2 * cap + 65536 + 1);
            if (!bigger) {
                free(text);
                fclose(f);
                return NULL;
            }
            text = bigger;
        }
        got = fread(text + len, 1, 65536, f);
        len += got;
    } while (got > 0);
    fclose(f);
    text[len] = '\0';
    return text;
}

typedef struct ran {
    const timed *tc;
    char id[NAME_MAX_];
    int iteration;
    double seconds, share;
} ran;

static int by_share(const void *a, const void *b)
{
    const double x = ((const ran *)a)->share, y = ((const ran *)b)->share;
    return (x < y) - (x > y);
}

static const timed *find_case(const char *suite, const char *name)
{
    for (int i = 0; i < n_cases; i++)
        if (strcmp(cases[i].suite, suite) == 0 && strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

/* ATTND_TEST_TIME_SHARE: the share of a timeout a test may take, in
 * (0, 1]; -1 when it is not such a number. */
static double allowed_share(void)
{
    const char *env = getenv("ATTND_TEST_TIME_SHARE");
    if (!env || !*env)
        return 0.25;
    char *end = NULL;
    const double share = strtod(env, &end);
    return *end == '\0' && share > 0 && share <= 1 ? share : -1;
}

int timing_check(const char *xml_path, FILE *out)
{
    const double share = allowed_share();
    if (share < 0) {
        fprintf(out, "timing: ATTND_TEST_TIME_SHARE: a number in (0, 1], not '%s'\n",
                getenv("ATTND_TEST_TIME_SHARE"));
        return -1;
    }
    char *xml = slurp(xml_path);
    if (!xml) {
        fprintf(out, "timing: cannot read Check's log %s\n", xml_path);
        return -1;
    }
    size_t n = 0, cap = 256;
    ran *runs = malloc(cap * sizeof *runs);
    int bad = 0;
    for (const char *s = strstr(xml, "<suite>"); s && runs; s = strstr(s, "<suite>")) {
        const char *s_end = strstr(s, "</suite>");
        if (!s_end)
            break;
        char suite[NAME_MAX_] = "";
        tag(s, s_end, "title", suite, sizeof suite);
        for (const char *t = strstr(s, "<test "); t && t < s_end; t = strstr(t + 1, "<test ")) {
            const char *t_end = strstr(t, "</test>");
            if (!t_end)
                break;
            char id[NAME_MAX_] = "", name[NAME_MAX_] = "", it[16] = "0", dur[32] = "0";
            tag(t, t_end, "id", id, sizeof id);
            tag(t, t_end, "description", name, sizeof name);
            tag(t, t_end, "iteration", it, sizeof it);
            tag(t, t_end, "duration", dur, sizeof dur);
            const timed *tc = find_case(suite, name);
            if (!tc) {
                fprintf(out,
                        "timing: %s/%s: %s: its case was not made by timed_case, so its "
                        "timeout is unknown (tests/timing.h)\n",
                        suite, name, id);
                bad++;
                continue;
            }
            if (n == cap) {
                ran *bigger = realloc(runs, (cap *= 2) * sizeof *runs);
                if (!bigger)
                    break;
                runs = bigger;
            }
            ran *r = &runs[n++];
            r->tc = tc;
            snprintf(r->id, sizeof r->id, "%s", id);
            r->iteration = atoi(it);
            r->seconds = atof(dur); /* Check writes -1 for a test it stopped */
            r->share = r->seconds / tc->seconds;
        }
        s = s_end;
    }
    free(xml);
    if (!runs) {
        fprintf(out, "timing: out of memory\n");
        return -1;
    }
    qsort(runs, n, sizeof *runs, by_share);
    fprintf(out, "test times: the slowest of %zu against their timeouts (x %g), at most %g each:\n",
            n, multiplier(), share);
    for (size_t i = 0; i < n && i < SLOWEST; i++)
        fprintf(out, "  %7.2f s of %4.0f s (%4.1f%%)  %s/%s: %s:%d\n", runs[i].seconds,
                runs[i].tc->seconds, 100 * runs[i].share, runs[i].tc->suite, runs[i].tc->name,
                runs[i].id, runs[i].iteration);
    for (size_t i = 0; i < n && runs[i].share > share; i++, bad++)
        fprintf(out,
                "timing: %s/%s: %s:%d took %.2f s, over %g of its timeout of %.0f s: cut it down "
                "or raise its timeout (tests/timing.h)\n",
                runs[i].tc->suite, runs[i].tc->name, runs[i].id, runs[i].iteration, runs[i].seconds,
                share, runs[i].tc->seconds);
    free(runs);
    return bad;
}
